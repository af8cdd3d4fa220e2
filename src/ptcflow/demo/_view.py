"""A readable one-line rendering of signals, for the demo's live view."""

from __future__ import annotations

from typing import Any

from ptcflow.signals import (
    Err,
    LLMDeltaData,
    LLMResponseData,
    Ok,
    RequestEndData,
    RequestErrorData,
    RequestStartedData,
    Signal,
    ToolCall,
    ToolResultData,
    ToolStartedData,
    UsageData,
)

__all__ = ("render_signal",)


def render_signal(signal: Signal, *, width: int = 72) -> str:
    """Return one line describing ``signal``: seq, type, call, and what it carries.

    Example:
        >>> from ptcflow.signals import Signal, UsageData, Usage
        >>> s = Signal.create("ai.usage", UsageData(usage=Usage(input_tokens=3)), seq=2,
        ...                   run_id="r", call_id="r/llm/1")
        >>> render_signal(s)
        '  #2   ai.usage              llm/1       in=3 out=0 tokens'
    """
    call = signal.call_id or ""
    if signal.run_id and call.startswith(signal.run_id + "/"):
        call = call[len(signal.run_id) + 1 :]
    detail = _detail(signal.data)
    if len(detail) > width:
        detail = detail[: width - 1] + "…"
    return f"  #{signal.seq:<3} {signal.type:<21} {call:<11} {detail}".rstrip()


def _detail(data: Any) -> str:
    if isinstance(data, RequestStartedData):
        return _short(data.input)
    if isinstance(data, UsageData):
        return f"in={data.usage.input_tokens} out={data.usage.output_tokens} tokens"
    if isinstance(data, LLMDeltaData):
        chunk = data.chunk
        parts = [repr(chunk.text)] if chunk.text else []
        parts += [f"tool call {d.name or ''}{d.arguments}" for d in chunk.tool_calls]
        if chunk.finish_reason:
            parts.append(f"finish={chunk.finish_reason}")
        return " ".join(parts)
    if isinstance(data, LLMResponseData):
        if isinstance(data.result, Err):
            return f"error {data.result.error.type}: {data.result.error.message}"
        response = data.result.payload
        if response.tool_calls:
            return "→ " + ", ".join(_call(c) for c in response.tool_calls)
        return "→ " + _short(response.text)
    if isinstance(data, ToolStartedData):
        return _call(ToolCall(id="", name=data.tool_name, input=data.arguments))
    if isinstance(data, ToolResultData):
        ms = f" ({data.duration_ms:.1f} ms)" if data.duration_ms else ""
        return _result(data.result) + ms
    if isinstance(data, RequestEndData):
        return _result(data.result)
    if isinstance(data, RequestErrorData):
        return f"rejected {data.error.type}: {data.error.message}"
    return "" if data is None else _short(data)


def _call(call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.input.items())
    return f"{call.name}({args})"


def _result(result: Ok[Any] | Err) -> str:
    if isinstance(result, Err):
        return f"error {result.error.type}: {result.error.message}"
    payload = result.payload
    if isinstance(payload, list):
        return f"ok [{len(payload)} item{'s' if len(payload) != 1 else ''}]"
    return "ok " + _short(payload)


def _short(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else f'"{value}"'
