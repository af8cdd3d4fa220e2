"""Reporting an activity's outcome to the run core: the signals the directive published in
the activity, published again in the workflow with the run's own numbering.

Which terminal signal ends a directive is the worker's to say: a worker with a handler of
its own for a directive class (``ptcflow worker --handlers``) ends it with
``ai.tool.result``, as a local ``Runtime(handlers=...)`` does, whatever the class's base
(a ``RunProgram`` or an ``LLMEmbed`` subclass). The workflow cannot know the workers'
handlers beforehand, so the first outcome that says so updates its terminal table."""

from __future__ import annotations

from typing import Any

from ptcflow.directives import ToolExec
from ptcflow.runtime._core import Flight, RunCore
from ptcflow.runtime._terminals import TerminalTable, tool_terminal
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

__all__ = ("report",)


def report(
    core: RunCore[Flight],
    terminals: TerminalTable,
    flight: Flight,
    outcome: ActivityOutcome,
    now: float,
) -> None:
    """Publish what ``flight``'s activity published, then its terminal: its intermediate
    signals (``core.emit``), its sub-calls (opened, emitted, finished as they were) and
    the result its terminal signal carried (``core.finish``, the core makes the terminal
    signals again, by ``terminals``, the core's table: see the module docstring)."""
    d = flight.directive
    if outcome.traceparent is not None:
        flight.traceparent = outcome.traceparent
    result: Ok[Any] | Err | None = None
    duration = 0.0
    subs: dict[str, Flight] = {}
    for line in outcome.signals:
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
        else:
            core.emit(sub, s.type, s.data)
    if result is None:
        result = Err(
            error=ErrorEnvelope.make(
                INTERNAL,
                f"the activity of {type(d).__name__} {d.id!r} returned no terminal signal",
            )
        )
    core.finish(flight, result, now, attempts=outcome.attempt, duration_ms=duration)
