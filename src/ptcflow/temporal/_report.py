"""Reporting an activity's outcome to the run core: the signals the directive published in
the activity, published again in the workflow with the run's own numbering.

Which terminal signal ends a directive is the worker's to say: a worker with a handler of
its own for a directive class (``ptcflow worker --handlers``) ends it with
``ai.tool.result``, as a local ``Runtime(handlers=...)`` does, whatever the class's base
(a ``RunProgram`` or an ``LLMEmbed`` subclass). The workflow cannot know the workers'
handlers beforehand, so the first outcome that says so updates its terminal table."""

from __future__ import annotations

from typing import Any

from ptcflow.core import Flight, RunCore, TerminalTable, tool_terminal
from ptcflow.directives import ToolExec
from ptcflow.signals import (
    INTERNAL,
    TERMINAL_TYPES,
    TOOL_RESULT,
    USAGE,
    Err,
    ErrorEnvelope,
    Ok,
    decode_signal,
)
from ptcflow.temporal._spec import ActivityOutcome

__all__ = ("answered", "publish_lines", "report")


def report(
    core: RunCore[Flight],
    terminals: TerminalTable,
    flight: Flight,
    outcome: ActivityOutcome,
    now: float,
    published: set[str] | None = None,
    subs: dict[str, Flight] | None = None,
) -> None:
    """Publish what ``flight``'s activity published, then its terminal: its intermediate
    signals (``core.emit``), its sub-calls (opened, emitted, finished as they were, but
    for those in ``published``: a suspended program's, published already) and the result
    its terminal signal carried (``core.finish``, the core makes the terminal signals
    again, by ``terminals``, the core's table: see the module docstring)."""
    d = flight.directive
    if outcome.traceparent is not None:
        flight.traceparent = outcome.traceparent
    seen = set() if published is None else published
    result, duration = publish_lines(core, terminals, flight, outcome.signals, now, seen, subs)
    if result is None:
        result = Err(
            error=ErrorEnvelope.make(
                INTERNAL,
                f"the activity of {type(d).__name__} {d.id!r} returned no terminal signal",
            )
        )
    core.finish(flight, result, now, attempts=outcome.attempt, duration_ms=duration)


def publish_lines(
    core: RunCore[Flight],
    terminals: TerminalTable,
    flight: Flight,
    lines: Any,
    now: float,
    published: set[str],
    subs: dict[str, Flight] | None = None,
) -> tuple[Ok[Any] | Err | None, float]:
    """Publish ``lines`` (an activity's signals) as ``flight``'s: its intermediate signals
    and its sub-calls' (but for the sub-calls in ``published``; those finished here are
    added to it). ``subs``: the sub-calls opened and not finished yet, by call id (kept
    across the activities of one directive: a program's call that waited for a decision
    is answered by the next). Returns the result its terminal signal carried (``None``:
    none) and its duration."""
    d = flight.directive
    result: Ok[Any] | Err | None = None
    duration = 0.0
    if subs is None:
        subs = {}
    for line in lines:
        s = decode_signal(bytes(line))
        if s.call_id == d.id:
            if s.type in TERMINAL_TYPES:
                if s.type == TOOL_RESULT and terminals[type(d)] is not tool_terminal:
                    terminals[type(d)] = tool_terminal  # a handler of the worker's own
                result = s.data.result
                duration = float(getattr(s.data, "duration_ms", 0.0) or 0.0)
            elif s.type != USAGE:
                core.emit(flight, s.type, s.data)
            continue
        if s.call_id in published:
            continue
        sub = subs.get(s.call_id or "")
        if sub is None:
            data = s.data
            sub = subs[s.call_id or ""] = core.open_subcall(
                flight,
                ToolExec(
                    id=s.call_id or "",
                    tool_name=getattr(data, "tool_name", "") or "?",
                    arguments=getattr(data, "arguments", None) or {},
                    request_id=d.request_id,
                    iteration=d.iteration,
                ),
            )
            sub.traceparent = s.traceparent
        if s.type == TOOL_RESULT:
            core.finish(
                sub,
                s.data.result,
                now,
                attempts=s.data.attempts,
                duration_ms=s.data.duration_ms,
            )
            published.add(s.call_id or "")
            subs.pop(s.call_id or "", None)
        else:
            core.emit(sub, s.type, s.data)
    return result, duration


def answered(outcome: ActivityOutcome, call_id: str) -> bool:
    """True when ``outcome`` ends the directive ``call_id`` with a result (not an error):
    a model call that answered (it used a turn of its mission's budget)."""
    if outcome.error is not None:
        return False
    for line in reversed(outcome.signals):
        s = decode_signal(bytes(line))
        if s.call_id == call_id and s.type in TERMINAL_TYPES:
            return bool(s.data.result.ok)
    return False
