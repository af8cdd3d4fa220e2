"""Turning a model's tool calls into directives: unique ids, ToolExec or EmitToolError."""

from __future__ import annotations

from difflib import get_close_matches

from ptcflow.directives import Directive, EmitToolError, ToolExec
from ptcflow.signals import UNKNOWN_TOOL, ErrorEnvelope, ToolCall
from ptcflow.strategies._react_state import ReActState

__all__ = ("tool_directives", "unique_calls")


def tool_directives(
    state: ReActState, calls: tuple[ToolCall, ...], *, timeout_ms: int | None, max_retries: int
) -> tuple[Directive, ...]:
    """One directive per call, in call order: ``ToolExec`` for a known tool, else
    ``EmitToolError`` (``unknown_tool``, with a "did you mean" and the available tools)."""
    known = {spec.name for spec in state.tools}
    out: list[Directive] = []
    for call in calls:
        if call.name in known:
            out.append(
                ToolExec(
                    id=call.id,
                    request_id=state.request_id,
                    iteration=state.iteration,
                    tool_name=call.name,
                    arguments=call.input,
                    timeout_ms=timeout_ms,
                    max_retries=max_retries,
                )
            )
            continue
        available = sorted(known)
        listed = ", ".join(available) if available else "none"
        close = get_close_matches(call.name, available, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        error = ErrorEnvelope.make(
            UNKNOWN_TOOL,
            f"unknown tool {call.name!r}; {hint}available tools: {listed}",
            {"tool": call.name, "available": available},
        )
        out.append(
            EmitToolError(
                id=call.id,
                request_id=state.request_id,
                iteration=state.iteration,
                tool_name=call.name,
                error=error,
            )
        )
    return tuple(out)


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
