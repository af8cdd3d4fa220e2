"""ToolResult envelopes and JSON content; ToolContext and ToolCall basics."""

from __future__ import annotations

import msgspec
import pytest

from ptcflow.signals import Err, ErrorEnvelope, Ok, ToolCall as SignalsToolCall
from ptcflow.tools import ToolCall, ToolContext, ToolResult


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
