"""Ok / Err / ErrorEnvelope, normalize_result, error_from_exception, tool_result_content."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings

from ptcflow.providers._protocol import ProviderError
from ptcflow.signals import (
    AUTH,
    BUSY,
    CANCELLED,
    INTERNAL,
    PROVIDER_ERROR,
    RATE_LIMITED,
    REDACTED,
    RETRYABLE_TYPES,
    TIMEOUT,
    TOOL_ERROR,
    TRANSIENT,
    UNKNOWN_TOOL,
    VALIDATION,
    Err,
    ErrorEnvelope,
    Ok,
    error_from_exception,
    normalize_result,
    tool_result_content,
)

from .strategies import json_values


class Keyword:
    def __init__(self, name: str) -> None:
        self.name = name


def err(type: str, message: str, details: dict[str, Any] | None = None) -> Err:
    return Err(error=ErrorEnvelope.make(type, message, details))


def test_error_type_constants() -> None:
    assert (TIMEOUT, RATE_LIMITED, TRANSIENT, AUTH, VALIDATION) == (
        "timeout",
        "rate_limited",
        "transient",
        "auth",
        "validation",
    )
    assert (UNKNOWN_TOOL, TOOL_ERROR, PROVIDER_ERROR, CANCELLED, BUSY, INTERNAL) == (
        "unknown_tool",
        "tool_error",
        "provider_error",
        "cancelled",
        "busy",
        "internal",
    )
    assert frozenset({"timeout", "rate_limited", "transient"}) == RETRYABLE_TYPES


def test_error_envelope_has_exactly_four_fields() -> None:
    assert ErrorEnvelope.__struct_fields__ == ("type", "message", "details", "retryable")


@pytest.mark.parametrize(("type", "retryable"), [(t, True) for t in sorted(RETRYABLE_TYPES)])
def test_retryable_defaults_follow_the_type(type: str, retryable: bool) -> None:
    assert ErrorEnvelope.make(type, "m").retryable is retryable
    assert ErrorEnvelope.make(type, "m", retryable=False).retryable is False
    assert ErrorEnvelope.make(AUTH, "m").retryable is False
    assert ErrorEnvelope.make(AUTH, "m", retryable=True).retryable is True


def test_make_sanitizes_details_and_caps_the_message() -> None:
    env = ErrorEnvelope.make("x", "m" * 5000, {"api_key": "k", "at": (1, 2), "b": b"hi"})
    assert env.details == {"api_key": REDACTED, "at": [1, 2], "b": "aGk="}
    assert len(env.message) == 4000
    assert env.to_dict() == {
        "type": "x",
        "message": "m" * 4000,
        "details": env.details,
        "retryable": False,
    }


def test_ok_and_err_flags_and_tags() -> None:
    ok: Ok[int] = Ok(payload=1)
    bad = err("t", "m")
    assert ok.ok is True and bad.ok is False
    assert msgspec.json.encode(ok) == b'{"status":"ok","payload":1,"effects":[]}'
    assert msgspec.json.decode(msgspec.json.encode(bad), type=Ok[Any] | Err) == bad


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ((True, 5), Ok(payload=5)),
        (("ok", {"a": (1,)}), Ok(payload={"a": [1]})),
        ((True, 5, ["effect"]), Ok(payload=5, effects=("effect",))),
        (("ok", 5, ("e1", "e2")), Ok(payload=5, effects=("e1", "e2"))),
        ((True, 5, "not-a-list"), Ok(payload=5)),
        ((False, "boom"), err(TOOL_ERROR, "boom")),
        (("error", "boom"), err(TOOL_ERROR, "boom")),
        (
            ("error", "boom", ["undo"]),
            Err(error=ErrorEnvelope.make(TOOL_ERROR, "boom"), effects=("undo",)),
        ),
        ((False, Keyword("not_found")), err("not_found", "not_found")),
        ((False, None), err(TOOL_ERROR, "error", {"reason": None})),
        ((False, 42), err(TOOL_ERROR, "error", {"reason": 42})),
        (
            (False, {"type": "rate_limited", "message": "slow", "details": {"password": "p"}}),
            Err(
                error=ErrorEnvelope(
                    type="rate_limited",
                    message="slow",
                    details={"password": REDACTED},
                    retryable=True,
                )
            ),
        ),
        (
            ("error", {"message": "no", "retryable?": True, "details": "text"}),
            Err(
                error=ErrorEnvelope(
                    type=TOOL_ERROR, message="no", details={"details": "text"}, retryable=True
                )
            ),
        ),
        ((False, {"type": "odd"}), err(TOOL_ERROR, "error", {"reason": {"type": "odd"}})),
        ({"ok": True, "result": [1, 2]}, Ok(payload=[1, 2])),
        ({"ok": True}, Ok(payload=None)),
        ({"ok": False, "error": "bad input"}, err(TOOL_ERROR, "bad input")),
        (
            {"ok": False, "error": {"type": "validation", "message": "x must be int"}},
            err(VALIDATION, "x must be int"),
        ),
        # a payload that merely has an "ok" key is a payload, not an envelope
        ({"ok": True, "count": 3}, Ok(payload={"ok": True, "count": 3})),
        ({"ok": "yes", "result": 1}, Ok(payload={"ok": "yes", "result": 1})),
        ("plain string", Ok(payload="plain string")),
        (None, Ok(payload=None)),
        ((1, 2), Ok(payload=[1, 2])),
        ((True, 1, 2, 3), Ok(payload=[True, 1, 2, 3])),
        ({"api_key": "k"}, Ok(payload={"api_key": "k"})),  # payloads are answers: kept whole
    ],
)
def test_normalize_result_legacy_shapes(value: Any, expected: Any) -> None:
    assert normalize_result(value) == expected


def test_normalize_result_passes_canonical_values_through() -> None:
    ok: Ok[Any] = Ok(payload=object())
    bad = err("t", "m")
    env = ErrorEnvelope.make("t", "m")
    assert normalize_result(ok) is ok
    assert normalize_result(bad) is bad
    assert normalize_result(env) == Err(error=env)


def test_normalize_result_exceptions() -> None:
    assert normalize_result(ValueError("bad x")) == err(
        TOOL_ERROR, "ValueError: bad x", {"exception": "ValueError"}
    )
    key_error = normalize_result((False, KeyError("k")))
    assert isinstance(key_error, Err)
    assert key_error.error.message == "KeyError: 'k'"
    timeout = normalize_result(TimeoutError())
    assert isinstance(timeout, Err)
    assert (timeout.error.type, timeout.error.retryable) == (TIMEOUT, True)


@settings(deadline=None)  # the shared CI machine is noisy
@given(json_values)
def test_normalize_result_always_gives_json_encodable_envelopes(value: Any) -> None:
    for shape in (
        value,
        (True, value),
        (False, value),
        ("error", value),
        {"ok": False, "error": value},
    ):
        result = normalize_result(shape)
        assert isinstance(result, Ok | Err)
        msgspec.json.encode(result)
        tool_result_content(result)


def test_error_from_exception() -> None:
    assert error_from_exception(ValueError("bad")) == ErrorEnvelope(
        type=TOOL_ERROR,
        message="ValueError: bad",
        details={"exception": "ValueError"},
        retryable=False,
    )
    assert error_from_exception(ValueError()).message == "ValueError"
    assert error_from_exception(TimeoutError("slow")).type == TIMEOUT
    custom = error_from_exception(ConnectionError("reset"), type=TRANSIENT)
    assert (custom.type, custom.retryable, custom.message) == (
        TRANSIENT,
        True,
        "ConnectionError: reset",
    )
    assert error_from_exception(RuntimeError("x"), retryable=True).retryable is True


def test_error_from_exception_uses_a_carried_envelope() -> None:
    env = ErrorEnvelope.make(RATE_LIMITED, "429 from provider", {"retry_after": 2})
    exc = ProviderError(env, retry_after=2.0)
    assert error_from_exception(exc) is env
    assert error_from_exception(exc, type=INTERNAL).type == INTERNAL


def test_error_from_exception_never_includes_tracebacks() -> None:
    try:
        raise ValueError("inner")
    except ValueError as exc:
        env = error_from_exception(exc)
    assert "Traceback" not in env.message and "traceback" not in str(env.details)


def test_tool_result_content_exact_json() -> None:
    assert tool_result_content(Ok(payload=5)) == '{"ok":true,"result":5}'
    assert tool_result_content(Ok(payload={"a": [1, "x"]})) == '{"ok":true,"result":{"a":[1,"x"]}}'
    assert tool_result_content(Ok(payload=None)) == '{"ok":true,"result":null}'
    assert tool_result_content(err(TIMEOUT, "took too long", {"timeout_ms": 10})) == (
        '{"ok":false,"error":{"type":"timeout","message":"took too long",'
        '"details":{"timeout_ms":10},"retryable":true}}'
    )
    assert tool_result_content(normalize_result((False, "boom"))) == (
        '{"ok":false,"error":{"type":"tool_error","message":"boom","details":{},"retryable":false}}'
    )


def test_tool_result_content_survives_unencodable_payloads() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "<Thing>"

    assert tool_result_content(Ok(payload={"t": Thing()})) == '{"ok":true,"result":{"t":"<Thing>"}}'
    assert tool_result_content(Ok(payload=(1, 2))) == '{"ok":true,"result":[1,2]}'


def test_error_from_exception_survives_a_broken_str() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")

    env = error_from_exception(Broken())
    assert (env.type, env.message, env.details) == (TOOL_ERROR, "Broken", {"exception": "Broken"})
    result = normalize_result(Broken())
    assert isinstance(result, Err) and result.error == env


def test_normalize_result_does_not_compare_odd_first_items() -> None:
    class Ambiguous:
        def __eq__(self, other: object) -> bool:
            raise ValueError("the truth value is ambiguous")

        __hash__ = object.__hash__

        def __repr__(self) -> str:
            return "<Ambiguous>"

    assert normalize_result((Ambiguous(), 1)) == Ok(payload=["<Ambiguous>", 1])


@given(json_values)
def test_tool_result_content_of_ok_is_the_json_of_the_wrapping_object(value: Any) -> None:
    # The Ok fast path splices the encoded payload in; it must equal encoding the object.
    expected = msgspec.json.encode({"ok": True, "result": value}).decode()
    assert tool_result_content(Ok(payload=value)) == expected
    assert msgspec.json.decode(expected) == {"ok": True, "result": value}
