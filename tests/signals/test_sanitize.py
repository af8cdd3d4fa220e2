"""sanitize(): JSON-safe, bounded, cycle-free, secrets redacted, never raises."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.signals import REDACTED, ErrorEnvelope, Usage, is_secret_key, sanitize

encoder = msgspec.json.Encoder()


def json_roundtrip(value: Any) -> Any:
    """Encode strictly (no enc_hook): fails if the value is not JSON-native."""
    return msgspec.json.decode(encoder.encode(value))


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int
    y: tuple[int, ...]


class Keyword:
    def __init__(self, name: str) -> None:
        self.name = name


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class HostileMap(dict[str, int]):
    def items(self) -> Any:
        raise RuntimeError("no items")


def test_plain_json_is_unchanged() -> None:
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": []}}
    assert sanitize(value) == value


def test_tuples_sets_and_frozensets_become_lists() -> None:
    assert sanitize({"t": (1, (2, 3)), "s": {3, 1, 2}, "f": frozenset({"b", "a"})}) == {
        "t": [1, [2, 3]],
        "s": [1, 2, 3],
        "f": ["a", "b"],
    }


def test_bytes_become_base64() -> None:
    assert sanitize(b"hi") == "aGk="
    assert sanitize(bytearray(b"\x00\xff")) == "AP8="
    assert sanitize(memoryview(b"hi")) == "aGk="


def test_objects_become_bounded_reprs_or_mappings() -> None:
    assert sanitize(Point(1, (2,))) == {"x": 1, "y": [2]}
    assert sanitize(Usage(input_tokens=2)) == {
        "input_tokens": 2,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert sanitize(ErrorEnvelope(type="t", message="m")) == {
        "type": "t",
        "message": "m",
        "details": {},
        "retryable": False,
    }
    assert sanitize(Color.RED) == "red"
    assert sanitize(Level.HIGH) == 3
    assert sanitize(ValueError("bad")) == "ValueError: bad"
    assert sanitize(Keyword("not_found")) == "not_found"
    assert sanitize(Point) == repr(Point)
    assert sanitize(object()).startswith("<object object at")


def test_hostile_objects_do_not_raise() -> None:
    assert sanitize(Hostile()) == "<unrepresentable Hostile>"
    assert sanitize([Hostile()]) == ["<unrepresentable Hostile>"]
    assert sanitize({"x": HostileMap(a=1)}) == {"x": "<unrepresentable HostileMap>"}


def test_non_string_keys_are_stringified() -> None:
    assert sanitize({1: "a", (1, 2): "b", None: 3, Keyword("k"): 4}) == {
        "1": "a",
        "(1, 2)": "b",
        "None": 3,
        "k": 4,
    }


def test_cycles_are_cut() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    d: dict[str, Any] = {"name": "d"}
    d["self"] = d
    assert sanitize(loop) == [1, "<cycle>"]
    assert sanitize(d) == {"name": "d", "self": "<cycle>"}


def test_shared_references_are_not_cycles() -> None:
    shared = [1, 2]
    assert sanitize({"a": shared, "b": shared}) == {"a": [1, 2], "b": [1, 2]}


def test_depth_is_capped() -> None:
    nested: Any = "leaf"
    for _ in range(20):
        nested = [nested]
    out = sanitize(nested, max_depth=3)
    assert out == [[["<max depth>"]]]
    assert sanitize({"a": {"b": {"c": 1}}}, max_depth=2) == {"a": {"b": "<max depth>"}}


def test_sizes_are_capped() -> None:
    assert sanitize(list(range(10)), max_items=3) == [0, 1, 2, "<7 more>"]
    assert sanitize({str(i): i for i in range(5)}, max_items=2) == {
        "0": 0,
        "1": 1,
        "<truncated>": "<3 more>",
    }
    assert sanitize("x" * 50, max_string=10) == "x" * 10 + "...<50 chars>"
    assert sanitize(b"x" * 50, max_string=3) == "eHh4"


def test_non_finite_floats_become_strings() -> None:
    assert sanitize([math.inf, -math.inf, math.nan, 1.5]) == ["inf", "-inf", "nan", 1.5]


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "API_KEY",
        "apiKey",
        "x-api-key",
        "password",
        "db_password",
        "passwd",
        "secret",
        "client_secret",
        "authorization",
        "Authorization",
        "cookie",
        "access_token",
        "github_token",
        "refresh-token",
        "accessToken",
        "token",
        "auth",
        "private_key",
        "credentials",
        "session_id",
    ],
)
def test_secret_keys_are_redacted(key: str) -> None:
    assert is_secret_key(key)
    assert sanitize({key: "s3cr3t", "nested": [{key: {"deep": 1}}]}) == {
        key: REDACTED,
        "nested": [{key: REDACTED}],
    }


@pytest.mark.parametrize(
    "key", ["input_tokens", "max_tokens", "output_tokens", "name", "tool", "author", "keys"]
)
def test_ordinary_keys_are_kept(key: str) -> None:
    assert not is_secret_key(key)
    assert sanitize({key: 1}) == {key: 1}


def test_input_is_not_mutated() -> None:
    value = {"api_key": "k", "xs": [(1, 2)]}
    sanitize(value)
    assert value == {"api_key": "k", "xs": [(1, 2)]}


anything = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary()
    | st.sampled_from([Color.RED, Level.HIGH])
    | st.builds(object)
    | st.builds(Hostile)
    | st.builds(ValueError, st.text()),
    lambda children: (
        st.lists(children)
        | st.tuples(children, children)
        | st.frozensets(st.integers() | st.text())
        | st.dictionaries(
            st.text() | st.integers() | st.sampled_from(["api_key", "token"]), children
        )
        | st.builds(Point, x=st.integers(), y=st.tuples(st.integers()))
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(anything)
def test_never_raises_and_output_is_json_encodable(value: Any) -> None:
    out = sanitize(value)
    assert json_roundtrip(out) == out  # JSON-native and stable
    assert sanitize(out) == out  # idempotent on its own output


@settings(deadline=None)  # the shared CI machine is noisy
@given(anything, st.integers(1, 5), st.integers(1, 5))
def test_caps_hold(value: Any, depth: int, items: int) -> None:
    out = sanitize(value, max_depth=depth, max_items=items, max_string=20)

    def check(v: Any, level: int) -> None:
        assert level <= depth
        if isinstance(v, list):
            assert len(v) <= items + 1
            for x in v:
                check(x, level + 1)
        elif isinstance(v, dict):
            assert len(v) <= items + 1
            for x in v.values():
                check(x, level + 1)
        elif isinstance(v, str):
            assert len(v) <= 20 + len("...<> chars") + 20

    check(out, 0)


def test_long_keys_are_capped_too() -> None:
    out = sanitize({"k" * 50: 1}, max_string=10)
    assert out == {"k" * 10 + "...<50 chars>": 1}
