"""The ``RunProgram`` kind: the runtime runs a PTC-Lisp program, its tool calls as sub-calls.

One attempt is the program host's :func:`ptcflow.program.perform_program` with the directive's own
sub-call function as the router: each ``(call "tool" {...})`` of the program is
``ctx.call_tool(name, arguments, index=i)``, so it is validated, timed out, retried,
limited, signalled (``ai.tool.started`` / ``ai.tool.result`` with ``call_id``
``{directive.id}/tool/{i}``) and traced (``execute_tool`` under the program's span) like a
``ToolExec``. A directive with ``stream=True`` publishes each chunk of the program's
output as it is printed (``ai.program.print``, numbered from 0 in each attempt). The
directive ends with exactly one ``ai.program.result`` (see
``_terminals``): ``Ok(ProgramOutput)`` for a program that ran (program errors included),
``Err`` for a cancellation, the directive's deadline, or a crash of this kind.

Calls that completed are kept on the directive's context as they complete
(:attr:`DirectiveContext.completed`), so a later
attempt (after a retryable failure such as an attempt timeout) answers them from that record
(``replay=``, with the missing calls performed: ``resume``) and no completed tool call is
ever repeated. What the programs of a run share is kept for the whole run
(``LocalRun.programs``, a :class:`~ptcflow.program.ProgramCache`): the next turn's
program uses the ctx values already converted and the memory already read and printed.

The span is ``execute_program {agent}`` with ``gen_ai.operation.name = "execute_program"``.
None of the GenAI operations fits: the program is not a tool the model called by name (the
model answered with text), and its tool calls are ``execute_tool`` spans of their own; an
``execute_tool`` span around them would count every tool execution twice in backends that
aggregate by operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ptcflow.core import Parked
from ptcflow.lisp import SUSPEND, ProgramSuspended
from ptcflow.program import ProgramCache, ProgramOptions, perform_program
from ptcflow.runtime._run import DirectiveContext
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.runtime.kinds._base import Kind
from ptcflow.signals import (
    PROGRAM_PRINT,
    Err,
    ErrorEnvelope,
    Ok,
    PendingCall,
    ProgramOutput,
    ProgramPrintData,
    ProgramToolCall,
)

__all__ = ("PROGRAM_KIND",)

OPERATION = "execute_program"


def _call(ctx: DirectiveContext) -> Any:
    return _perform(ctx)


async def _perform(ctx: DirectiveContext) -> ProgramOutput | Parked:
    """One attempt: run the program, its calls through ``ctx.call_tool``; ``Parked`` when
    calls wait for a person (the program stops after them and re-runs from its record when
    the run resumes)."""
    d: Any = ctx.directive  # RunProgram
    run = ctx.run
    done = ctx.completed
    if done is None:
        records = run.program_records.get(d.id) if run.program_records else None
        done = ctx.completed = {r.index: r for r in records or ()}
    waiting: list[PendingCall] = []

    async def call(name: str, arguments: dict[str, Any], index: int) -> Any:
        result = await ctx.call_tool(name, arguments, index=index)
        if isinstance(result, Parked):
            waiting.extend(result.pending)
            if result.child is not None:  # an agent used as a tool paused inside it
                run.keep_paused_child(f"{d.id}/tool/{index}", result.child)
            return SUSPEND
        return result

    def completed(record: ProgramToolCall) -> None:
        done[record.index] = record

    on_print: Callable[[str], None] | None = None
    if d.stream:  # each print published as it is printed, numbered from 0 each attempt
        printed = 0

        def emit_print(text: str) -> None:
            nonlocal printed
            ctx.run.emit(ctx, PROGRAM_PRINT, ProgramPrintData(text=text, index=printed))
            printed += 1

        on_print = emit_print

    if run.programs is None:
        run.programs = ProgramCache()
    options = ProgramOptions(
        cache=run.programs,
        replay=tuple(done.values()) if done else None,
        on_call=completed,
        plain_results=True,  # sub-call results are what ai.tool.result carries: journal-safe
        untimed_tools=run.tools.child_names,  # agents' runs are bounded by their own limits
        on_print=on_print,
    )
    try:
        return await perform_program(d, call, options=options)
    except ProgramSuspended:
        return Parked(tuple(waiting))


def _settle(ctx: DirectiveContext, output: ProgramOutput | Parked) -> Ok[ProgramOutput] | Parked:
    if isinstance(output, Parked):
        return output
    ex = ctx.run.executor
    if ex.log_events:
        error = output.error
        ex.log.debug(
            "program.finished",
            run_id=ctx.run_id,
            call_id=ctx.directive.id,
            turn=ctx.directive.iteration,
            attempt=ctx.attempt,
            returned=output.returned,
            failed=output.failed,
            error_category=None if error is None else error.category,
            tool_calls=len(output.tool_calls),
            memory_bytes=output.memory_bytes,
            duration_ms=output.duration_ms,
        )
    return Ok(payload=output)


def _prepare(ctx: DirectiveContext) -> Err | None:
    ex = ctx.run.executor
    if ex.log_events:
        d: Any = ctx.directive  # RunProgram
        ex.log.debug(
            "program.started",
            run_id=ctx.run_id,
            call_id=d.id,
            turn=d.iteration,
            tools=list(d.tool_names),
            source_chars=len(d.source),
        )
    return None


def _open_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    """Open the ``execute_program {agent}`` span (the program's calls nest under it)."""
    d: Any = ctx.directive  # RunProgram
    run = ctx.run
    attrs = {
        "gen_ai.operation.name": OPERATION,
        "gen_ai.agent.name": run.name,
        "gen_ai.conversation.id": run.run_id,
        "ptcflow.program.id": d.id,
        "ptcflow.turn": d.iteration,
    }
    span = tel.start_span(f"{OPERATION} {run.name}", attrs, ctx.otel_parent)
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.otel_parent)
    ctx.traceparent = tel.traceparent(span)
    tel.content(span, "ptcflow.program.source", d.source)  # model output: opt-in only


def _close_span(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    """End the program's span: its outcome, calls and memory; a program error is its
    ``error.type`` (the category), described by the category only unless content is on."""
    attrs: dict[str, Any] = {}
    ended = result
    if isinstance(result, Ok) and isinstance(result.payload, ProgramOutput):
        out = result.payload
        attrs["ptcflow.program.tool_calls"] = len(out.tool_calls)
        attrs["ptcflow.program.memory_bytes"] = out.memory_bytes
        attrs["ptcflow.program.outcome"] = (
            "error"
            if out.error is not None
            else "returned"
            if out.returned
            else "failed"
            if out.failed
            else "value"
        )
        if out.error is not None:
            ended = Err(error=ErrorEnvelope.make(out.error.category, out.error.message))
            tel.content(ctx.span, "ptcflow.program.error", out.error.describe())
    tel.end_span(ctx.span, ended, attrs, tool_data=True)
    tel.record(OPERATION, duration, error_type=None if ended.ok else ended.error.type)


PROGRAM_KIND = Kind(
    "RunProgram",
    call=_call,
    settle=_settle,
    prepare=_prepare,
    open_span=_open_span,
    close_span=_close_span,
)
"""How a ``RunProgram`` is performed (see the module docstring)."""
