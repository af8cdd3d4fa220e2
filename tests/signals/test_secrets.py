"""The secrets scrubber: no run of 8 characters of a secret survives, nothing else changes."""

from __future__ import annotations

import msgspec
from hypothesis import given, strategies as st

from ptcflow.signals import (
    REDACTED,
    ErrorEnvelope,
    Secrets,
    is_secret_key,
    redact_url,
    secrets_of_headers,
    secrets_of_url,
)

KEY = "sk-proj-Zq81xLmP0aB7cD9eF2gH4iJ6kL"
# Without the marker's brackets: a secret holding "]" could run on from the marker's own
# closing bracket into the text after it (documented in Secrets.scrub).
alphabet = st.characters(codec="ascii", exclude_categories=["Cc"], exclude_characters="[]")
keys = st.text(alphabet, min_size=8, max_size=60)


def has_run(text: str, secret: str, size: int = 8) -> bool:
    """The brute-force definition of a leak."""
    return any(secret[i : i + size] in text for i in range(len(secret) - size + 1))


@given(
    secret=keys,
    before=st.text(alphabet, max_size=30),
    after=st.text(alphabet, max_size=30),
    start=st.integers(0, 60),
    length=st.integers(8, 60),
)
def test_no_run_of_eight_survives(
    secret: str, before: str, after: str, start: int, length: int
) -> None:
    start %= len(secret) - 7
    leaked = secret[start : start + length]
    out = Secrets([secret]).scrub(f"{before}{leaked}{after}")
    assert not has_run(out, secret)
    assert REDACTED in out


@given(secret=keys, text=st.text(alphabet, max_size=200))
def test_text_without_a_run_is_returned_unchanged(secret: str, text: str) -> None:
    if has_run(text, secret):
        return
    assert Secrets([secret]).scrub(text) is text


@given(secrets=st.lists(keys, min_size=1, max_size=4), text=st.text(alphabet, max_size=300))
def test_scrubbed_text_never_holds_a_run_of_any_secret(secrets: list[str], text: str) -> None:
    for secret in secrets:  # plant a piece of each
        text += secret[1:10] + "|"
    out = Secrets(secrets).scrub(text)
    assert not any(has_run(out, s) for s in secrets)


def test_the_cases_the_issue_names() -> None:
    secrets = Secrets([KEY])
    prefix13 = KEY[:13]
    assert secrets.scrub(f"Incorrect API key provided: {prefix13}***") == (
        "Incorrect API key provided: [REDACTED]***"
    )
    masked = f"{KEY[:3]}...{KEY[-8:]}"
    assert secrets.scrub(masked) == "sk-...[REDACTED]"
    assert secrets.scrub(f"Authorization: Bearer {KEY}") == "Authorization: Bearer [REDACTED]"
    assert secrets.leaks(KEY[5:13]) and not secrets.leaks(KEY[5:12])


def test_short_secrets_are_removed_whole_and_tiny_ones_ignored() -> None:
    secrets = Secrets(["hunter2", "abc", "", None])
    assert len(secrets) == 1
    assert secrets.scrub("password hunter2!") == "password [REDACTED]!"


def test_empty_secrets_cost_nothing_and_never_show() -> None:
    empty = Secrets()
    assert not empty and empty.scrub("x") == "x"
    value = {"a": ["b"]}
    assert empty.scrub_value(value) is value
    assert KEY not in repr(Secrets([KEY])) and repr(Secrets([KEY])) == "Secrets(<1 secret>)"
    assert (Secrets([KEY]) | Secrets()) == Secrets([KEY])
    assert len(Secrets([KEY]) | Secrets(["other-secret-1234"])) == 2


def test_scrub_value_walks_structs_and_keeps_what_did_not_change() -> None:
    secrets = Secrets([KEY])
    envelope = ErrorEnvelope.make("auth", f"bad key {KEY}", {"body": {"echo": [KEY[:12]]}})
    clean = secrets.scrub_value(envelope)
    assert isinstance(clean, ErrorEnvelope)
    assert KEY[:8] not in msgspec.json.encode(clean).decode()
    untouched = ErrorEnvelope.make("auth", "fine")
    assert secrets.scrub_value(untouched) is untouched
    assert secrets.scrub_value((1, "x", None)) == (1, "x", None)


def test_urls_and_headers() -> None:
    url = "https://svc-account-0001:s3cr3t-pass@api.example.com/v1?api-key=QQ0123456789&v=2"
    found = secrets_of_url(url)
    assert "s3cr3t-pass" in found and "QQ0123456789" in found and "2" not in found
    assert redact_url(url) == (
        "https://[REDACTED]:[REDACTED]@api.example.com/v1?api-key=[REDACTED]&v=2"
    )
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"
    assert secrets_of_url("http://[broken") == []
    headers = {"X-Api-Key": "hdr-0123456789", "Authorization": "Basic dXNlcjpwYXNz", "Accept": "x"}
    assert secrets_of_headers(headers) == [
        "hdr-0123456789",
        "Basic dXNlcjpwYXNz",
        "dXNlcjpwYXNz",
    ]


def test_every_header_is_secret_unless_known_to_carry_none() -> None:
    headers = {
        "X-Custom-Auth": "gw-0123456789",  # hyphenated: once matched by no rule
        "X-Routing": "tenant-0123456789",  # a name that says nothing
        "x-short": "abc123",  # under 8 characters and no secret's name: a flag, not a key
        "X-Session-Auth": "s3cr3t",  # a secret's name: kept however short
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": "my-service/1.2.3 (linux)",
        "OpenAI-Beta": "assistants=v2",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "prompt-caching-2024-07-31",
    }
    assert secrets_of_headers(headers) == ["gw-0123456789", "tenant-0123456789", "s3cr3t"]
    assert is_secret_key("X-Custom-Auth") and is_secret_key("x_custom_auth")
