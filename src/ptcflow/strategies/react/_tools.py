"""ReAct's tool side: unique call ids, one directive per call, results as tool messages."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import msgspec

from ptcflow.directives import Directive, EmitToolError, ToolExec
from ptcflow.signals import (
    CANCELLED,
    UNKNOWN_TOOL,
    Err,
    ErrorEnvelope,
    Message,
    Ok,
    ToolCall,
    tool_result_content,
)
from ptcflow.strategies.react._state import PendingCall, ReActState

__all__ = ("cancelled_error", "collect_result", "tool_directives", "unique_calls")

_replace = msgspec.structs.replace


def tool_directives(
    state: ReActState, calls: tuple[ToolCall, ...], *, timeout_ms: int | None, max_retries: int
) -> tuple[Directive, ...]:
    """One directive per call, in call order: ``ToolExec`` for a known tool, else
    ``EmitToolError`` (``unknown_tool``, with a "did you mean" and the available tools)."""
    tools = state.tools
    if len(calls) == 1:  # the common case: scan the tools, no set to build
        call = calls[0]
        name = call.name
        for spec in tools:
            if spec.name == name:
                return (
                    ToolExec(
                        id=call.id,
                        request_id=state.request_id,
                        iteration=state.iteration,
                        tool_name=name,
                        arguments=call.input,
                        timeout_ms=timeout_ms,
                        max_retries=max_retries,
                    ),
                )
        return (_unknown(state, call),)
    known = {spec.name for spec in tools}
    return tuple(
        [
            _exec(state, call, timeout_ms, max_retries)
            if call.name in known
            else _unknown(state, call)
            for call in calls
        ]
    )


def _exec(state: ReActState, call: ToolCall, timeout_ms: int | None, max_retries: int) -> ToolExec:
    return ToolExec(
        id=call.id,
        request_id=state.request_id,
        iteration=state.iteration,
        tool_name=call.name,
        arguments=call.input,
        timeout_ms=timeout_ms,
        max_retries=max_retries,
    )


def _unknown(state: ReActState, call: ToolCall) -> EmitToolError:
    available = sorted({spec.name for spec in state.tools})
    listed = ", ".join(available) if available else "none"
    close = get_close_matches(call.name, available, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    error = ErrorEnvelope.make(
        UNKNOWN_TOOL,
        f"unknown tool {call.name!r}; {hint}available tools: {listed}",
        {"tool": call.name, "available": available},
    )
    return EmitToolError(
        id=call.id,
        request_id=state.request_id,
        iteration=state.iteration,
        tool_name=call.name,
        error=error,
    )


def unique_calls(
    state: ReActState, calls: tuple[ToolCall, ...]
) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
    """Give every call an id not used before in the run (the model's id when possible)."""
    used = state.call_ids
    if len(calls) == 1:  # the common case: one call with a fresh id
        only = calls[0].id
        if only and only not in used:
            return calls, (*used, only)
    seen = set(used)
    out: list[ToolCall] = []
    renamed = False
    for index, call in enumerate(calls):
        base = call.id or f"call_{state.iteration}_{index}"
        unique = base
        k = 1
        while unique in seen:
            unique = f"{base}~{state.iteration}.{index}" + (f".{k}" if k > 1 else "")
            k += 1
        seen.add(unique)
        if unique != call.id:
            renamed = True
            call = ToolCall(id=unique, name=call.name, input=call.input)
        out.append(call)
    result = tuple(out) if renamed else calls
    return result, (*used, *(c.id for c in result))


def collect_result(
    state: ReActState, call_id: str | None, result: Ok[Any] | Err
) -> tuple[ReActState, tuple[Message, ...] | None, ErrorEnvelope | None]:
    """Fold the result of the tool call ``call_id`` into the current batch of calls.

    Returns ``(state, None, None)`` while results are missing (the very same ``state``
    when this one was ignored: a stale or unknown call id, or a duplicate result, where
    the first one stands); once the batch is complete, ``(state, messages, cancelled)``:
    the history with one tool message per call appended in call order, and the first
    ``cancelled`` error among the results, if any.
    """
    pending = state.pending
    index = next((i for i, call in enumerate(pending) if call.id == call_id), -1)
    if index < 0:
        return state, None, None  # a stale or unknown call id
    call = pending[index]
    if call.result is not None:
        return state, None, None  # a duplicate result: the first one stands
    for other_index, other in enumerate(pending):
        if other.result is None and other_index != index:  # still waiting for more
            updated = PendingCall(id=call.id, name=call.name, result=result)
            pending = (*pending[:index], updated, *pending[index + 1 :])
            return _replace(state, pending=pending), None, None
    answers: list[Message] = []
    cancelled: ErrorEnvelope | None = None
    for position, call in enumerate(pending):
        got = result if position == index else call.result
        if got is None:  # pragma: no cover - the loop above returned
            continue
        if cancelled is None:
            cancelled = cancelled_error(got)
        content = tool_result_content(got)
        answers.append(Message(role="tool", content=content, tool_call_id=call.id, name=call.name))
    return state, (*state.messages, *answers), cancelled


def cancelled_error(result: Ok[Any] | Err) -> ErrorEnvelope | None:
    """The error of a ``cancelled`` result, else ``None``."""
    if type(result) is not Ok and isinstance(result, Err) and result.error.type == CANCELLED:
        return result.error  # (``type() is Ok`` first: a failed isinstance is costly)
    return None
