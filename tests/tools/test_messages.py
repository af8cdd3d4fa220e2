"""ToolResult envelopes and JSON content; ToolContext and ToolCall basics."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, strategies as st

from ptcflow.signals import Err, ErrorEnvelope, Ok, ToolCall as SignalsToolCall
from ptcflow.tools import ToolCall, ToolContext, ToolResult
from ptcflow.tools._messages import json_safe


def test_tool_call_is_the_signals_struct() -> None:
    assert ToolCall is SignalsToolCall
    call = ToolCall(id="call_1", name="add", input={"x": 2})
    assert msgspec.json.decode(msgspec.json.encode(call), type=ToolCall) == call


def test_success_content_and_envelope() -> None:
    result = ToolResult(id="c", output={"n": 1}, effects=("e",))
    assert result.error is None
    assert result.to_result() == Ok(payload={"n": 1}, effects=("e",))
    assert result.content() == '{"ok":true,"result":{"n":1}}'


def test_error_content_and_envelope() -> None:
    envelope = ErrorEnvelope.make("tool_error", "boom", {"tool": "x"})
    result = ToolResult(id="c", output=envelope, is_error=True)
    assert result.error is envelope
    assert result.to_result() == Err(error=envelope)
    assert msgspec.json.decode(result.content()) == {
        "ok": False,
        "error": {
            "type": "tool_error",
            "message": "boom",
            "details": {"tool": "x"},
            "retryable": False,
        },
    }


def test_error_result_with_a_non_envelope_output_still_renders() -> None:
    result = ToolResult(id="c", output="plain text", is_error=True)
    assert result.error is None
    assert result.to_result() == Err(error=ErrorEnvelope.make("tool_error", "plain text"))


def test_results_encode_to_json() -> None:
    result = ToolResult(id="c", output=ErrorEnvelope.make("validation", "bad"), is_error=True)
    data = msgspec.json.decode(msgspec.json.encode(result))
    assert data["output"]["type"] == "validation"
    assert data["is_error"] is True


def test_frozen() -> None:
    ctx = ToolContext(run_id="r")
    with pytest.raises(AttributeError):
        ctx.run_id = "other"  # type: ignore[misc]
    assert ToolContext().metadata == {}
    assert ToolContext().metadata is not ToolContext().metadata


class _Point(msgspec.Struct):
    x: int


def test_ok_payload_is_json_data_and_output_stays_raw() -> None:
    raw = {"points": (_Point(x=1),), "tags": {"b", "a"}, "blob": b"hi", "obj": object()}
    result = ToolResult(id="c", output=raw)
    assert result.output is raw
    payload = result.to_result().payload  # type: ignore[union-attr]
    assert payload["points"] == [{"x": 1}]
    assert sorted(payload["tags"]) == ["a", "b"]
    assert payload["blob"] == "aGk="
    assert payload["obj"].startswith("<object object")


def test_large_plain_outputs_are_not_truncated() -> None:
    rows = [{"id": i, "api_key": "kept", "text": "x" * 5000} for i in range(1000)]
    payload = ToolResult(id="c", output=rows).to_result().payload  # type: ignore[union-attr]
    assert payload == rows


_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.binary(max_size=4)
    | st.builds(object)
    | st.builds(_Point, x=st.integers(-5, 5)),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers(), max_size=3)
        | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(_values)
def test_json_safe_output_survives_a_json_round_trip(value: object) -> None:
    safe = json_safe(value)
    assert msgspec.json.decode(msgspec.json.encode(safe)) == safe
