"""One scrubber for every secret a user configured (API keys, auth headers, URL credentials).

A :class:`Secrets` is built once, when whatever holds the secrets is built (a provider, a
registry), and then asked to :meth:`~Secrets.scrub` text on its way out to an envelope, a
log, a span or a journal. The rule it enforces: **no run of 8 or more consecutive
characters of a secret survives**, wherever it sits in the text (a server echoing the first
13 characters of a rejected key, a masked ``sk-...abcd1234`` form, a key inside a URL).

How it finds runs cheaply: every run of 8 characters of a secret contains one of the
secret's 4-character blocks that start at a multiple of 4 (a window of ``2 * 4 - 1 = 7``
characters always covers an aligned block). So :meth:`~Secrets.scrub` first looks for those
few blocks with ``str.find`` (C speed; nothing found is the common case and costs a handful
of scans), and only around a hit walks left and right, character by character, to find the
whole run. An empty :class:`Secrets` is falsy and its :meth:`~Secrets.scrub` returns its
argument at once, so callers decide once, by truth value, whether to scrub at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import msgspec

from ptcflow.signals._sanitize import REDACTED, is_secret_key

__all__ = (
    "MIN_RUN",
    "PUBLIC_HEADERS",
    "Secrets",
    "redact_url",
    "secrets_of_headers",
    "secrets_of_url",
)

MIN_RUN: Final = 8
"""The shortest run of a secret's characters that :meth:`Secrets.scrub` removes."""

_BLOCK: Final = 4  # 2 * _BLOCK - 1 <= MIN_RUN: every run of MIN_RUN holds an aligned block
_SHORTEST: Final = 4
"""Secrets shorter than MIN_RUN (and at least this long) are removed where they occur whole."""


class Secrets:
    """The secrets to keep out of every output, and the scrubber that removes them.

    Build it once with everything the user configured; it is immutable, falsy when empty,
    and its ``repr`` never shows a secret. Combine several with ``|``.

    Args:
        values: the secret strings (empty strings and ``None`` are ignored). A secret of
            at least 8 characters is scrubbed wherever 8 or more of its consecutive
            characters appear; a shorter one (4 to 7 characters) where it appears whole.

    Example:
        >>> secrets = Secrets(["sk-live-0123456789abcdef"])
        >>> secrets.scrub("rejected key sk-live-01234... (ends in 89abcdef)")
        'rejected key [REDACTED]... (ends in [REDACTED])'
        >>> bool(Secrets()), Secrets().scrub("untouched")
        (False, 'untouched')
    """

    __slots__ = ("_blocks", "_short", "_values")

    def __init__(self, values: Iterable[str | None] = ()) -> None:
        unique = sorted({v for v in values if isinstance(v, str) and len(v) >= _SHORTEST})
        self._values: tuple[str, ...] = tuple(unique)
        self._short: tuple[str, ...] = tuple(v for v in unique if len(v) < MIN_RUN)
        # aligned block -> the (secret, offset) pairs where it starts
        blocks: dict[str, list[tuple[str, int]]] = {}
        for secret in unique:
            if len(secret) < MIN_RUN:
                continue
            for offset in range(0, len(secret) - _BLOCK + 1, _BLOCK):
                blocks.setdefault(secret[offset : offset + _BLOCK], []).append((secret, offset))
        self._blocks: dict[str, tuple[tuple[str, int], ...]] = {
            block: tuple(where) for block, where in blocks.items()
        }

    def __bool__(self) -> bool:
        return bool(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Secrets(<{len(self._values)} secret{'s' if len(self._values) != 1 else ''}>)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secrets):
            return NotImplemented
        return self._values == other._values

    def __hash__(self) -> int:
        return hash(self._values)

    def __or__(self, other: Secrets) -> Secrets:
        if not isinstance(other, Secrets):
            return NotImplemented
        if not other or other == self:
            return self
        if not self:
            return other
        return Secrets((*self._values, *other._values))

    def _runs(self, text: str) -> list[tuple[int, int]]:
        """The merged ``(start, end)`` spans of ``text`` to redact."""
        spans: list[tuple[int, int]] = []
        size = len(text)
        for block, where in self._blocks.items():
            at = text.find(block)
            while at != -1:
                for secret, offset in where:
                    start, first = at, offset
                    while start > 0 and first > 0 and text[start - 1] == secret[first - 1]:
                        start -= 1
                        first -= 1
                    end, last = at + _BLOCK, offset + _BLOCK
                    while end < size and last < len(secret) and text[end] == secret[last]:
                        end += 1
                        last += 1
                    if end - start >= MIN_RUN:
                        spans.append((start, end))
                at = text.find(block, at + 1)
        for secret in self._short:
            at = text.find(secret)
            while at != -1:
                spans.append((at, at + len(secret)))
                at = text.find(secret, at + 1)
        if len(spans) < 2:
            return spans
        spans.sort()
        merged = [spans[0]]
        for start, end in spans[1:]:
            last_start, last_end = merged[-1]
            if start <= last_end:
                merged[-1] = (last_start, max(last_end, end))
            else:
                merged.append((start, end))
        return merged

    def leaks(self, text: str) -> bool:
        """True when ``text`` holds 8 or more consecutive characters of a secret (or a
        short secret whole).

        Example:
            >>> Secrets(["sk-live-0123456789abcdef"]).leaks("key: 456789ab")
            True
        """
        return bool(self._values) and bool(self._runs(text))

    def scrub(self, text: str) -> str:
        """Return ``text`` with every run of 8+ characters of a secret replaced by
        ``[REDACTED]`` (runs next to each other become one marker).

        Costs a few ``str.find`` scans when nothing is found; returns ``text`` itself then.
        (One corner it does not cover: a secret holding the marker's own characters, such
        as ``]``, could run on from a marker into the text after it.)
        """
        if not self._values or not text:
            return text
        spans = self._runs(text)
        if not spans:
            return text
        out: list[str] = []
        previous = 0
        for start, end in spans:
            out.append(text[previous:start])
            out.append(REDACTED)
            previous = end
        out.append(text[previous:])
        return "".join(out)

    def scrub_value(self, value: Any) -> Any:
        """Return ``value`` with every string in it scrubbed (mappings, lists, tuples and
        frozen msgspec structs are rebuilt only where something changed; keys too).

        Example:
            >>> Secrets(["sk-live-0123456789abcdef"]).scrub_value({"body": ["x 0123456789ab"]})
            {'body': ['x [REDACTED]']}
        """
        if not self._values:
            return value
        return self._walk(value, 0)

    def _walk(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if depth > 64 or value is None or isinstance(value, bool | int | float | bytes):
            return value
        if isinstance(value, msgspec.Struct):
            changes = {}
            for name in value.__struct_fields__:
                old = getattr(value, name)
                new = self._walk(old, depth + 1)
                if new is not old:
                    changes[name] = new
            return msgspec.structs.replace(value, **changes) if changes else value
        if isinstance(value, Mapping):
            items = [(self._walk(k, depth + 1), self._walk(v, depth + 1)) for k, v in value.items()]
            if all(
                k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)
            ):
                return value
            return dict(items)
        if isinstance(value, list | tuple):
            walked = [self._walk(v, depth + 1) for v in value]
            if all(a is b for a, b in zip(walked, value, strict=True)):
                return value
            return walked if isinstance(value, list) else tuple(walked)
        return value


def secrets_of_url(url: object) -> list[str]:
    """The secrets a URL carries: the password of its userinfo (and a user name long
    enough to be a token), and the query values that look like credentials (under a
    secret-looking name such as ``key``, ``api-key``, ``token``, ``sig``, or 16+
    characters long), each as written and decoded.

    Example:
        >>> secrets_of_url("https://bot:pa55w0rd@example.com/v1?api-key=abc123456789&v=2")
        ['pa55w0rd', 'abc123456789']
    """
    if url is None:
        return []
    try:
        parts = urlsplit(str(url))
        query = parse_qsl(parts.query, keep_blank_values=False)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    if user and len(user) >= MIN_RUN:
        found += [user, unquote(user)]
    if password:
        found += [password, unquote(password)]
    for name, value in query:
        if is_secret_key(name) or name.lower() in _QUERY_KEYS or len(value) >= 16:
            found.append(value)
    for piece in parts.query.split("&"):
        name, _, written = piece.partition("=")
        name = unquote(name)
        if written and (is_secret_key(name) or name.lower() in _QUERY_KEYS or len(written) >= 16):
            found.append(written)
    return list(dict.fromkeys(found))


_QUERY_KEYS: Final = frozenset({"key", "sig", "signature", "code", "access_token", "pass"})


def redact_url(url: str) -> str:
    """``url`` fit for a ``repr`` or a log: its password and credential-like query values
    (see :func:`secrets_of_url`) replaced by ``[REDACTED]``.

    Example:
        >>> redact_url("https://bot:pa55w0rd@example.com/v1?api-key=abc123456789&v=2")
        'https://bot:[REDACTED]@example.com/v1?api-key=[REDACTED]&v=2'
    """
    found = secrets_of_url(url)
    if not found:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # pragma: no cover - secrets_of_url parsed it already
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, password = userinfo.partition(":")
        if user in found:
            user = REDACTED
        netloc = f"{user}{sep}{REDACTED if password else ''}@{host}"
    query = "&".join(
        f"{name}={REDACTED}" if value in found else piece
        for piece in parts.query.split("&")
        for name, _, value in [piece.partition("=")]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


PUBLIC_HEADERS: Final = frozenset(
    {
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "anthropic-beta",
        "anthropic-version",
        "cache-control",
        "connection",
        "content-encoding",
        "content-language",
        "content-type",
        "openai-beta",
        "user-agent",
    }
)
"""Header names known to carry no secret (compared lower-case); :func:`secrets_of_headers`
treats the value of every other header as one."""


def secrets_of_headers(headers: Mapping[str, object] | None) -> list[str]:
    """The values of the headers that may carry a secret: every header but those known to
    carry none (:data:`PUBLIC_HEADERS`: ``Accept``, ``Content-Type``, ``User-Agent``,
    ``OpenAI-Beta``, ``anthropic-version``, ...), since a gateway's credential can sit under
    any name (``X-Custom-Auth``, ``X-Routing``). For ``Authorization: Bearer <token>`` the
    token alone too. A value under a name that does not look like a secret's (see
    :func:`is_secret_key`) counts only from 8 characters on, so a short flag such as
    ``true`` is not scrubbed from every text.

    Example:
        >>> secrets_of_headers({"Authorization": "Bearer tok-0123456789", "Accept": "x"})
        ['Bearer tok-0123456789', 'tok-0123456789']
        >>> secrets_of_headers({"X-Custom-Auth": "c0ffee-c0ffee", "X-Flag": "true"})
        ['c0ffee-c0ffee']
    """
    found: list[str] = []
    for name, value in (headers or {}).items():
        key = str(name)
        if not isinstance(value, str) or key.lower() in PUBLIC_HEADERS:
            continue
        if not is_secret_key(key) and len(value) < MIN_RUN:
            continue
        found.append(value)
        scheme, _, credential = value.partition(" ")
        if credential.strip() and scheme.isalpha():
            found.append(credential.strip())
    return found
