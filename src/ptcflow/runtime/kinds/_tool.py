"""The tool-like directive kinds (``ToolExec``, ``RunChild``), user-registered kinds, and
the table of built-in kinds (``RunProgram``'s is in ``_program.py``, the model calls' in
``_llm.py``). (``EmitToolError`` and ``EmitRequestError`` perform nothing: the run core
answers them itself.)"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

import anyio
import msgspec

from ptcflow.core import Parked, ResumeError, Step, journal_safe
from ptcflow.directives import RESERVED_CONTEXT_KEY, Directive, RunChild, RunProgram, ToolExec
from ptcflow.runtime._approvals import apply_decision, ask_approval
from ptcflow.runtime._child import ParentRun, invalid_child_arguments
from ptcflow.runtime._run import DirectiveContext
from ptcflow.runtime.kinds._base import Handler, Kind, tool_close, tool_span, validation
from ptcflow.runtime.kinds._llm import llm_kinds
from ptcflow.runtime.kinds._program import PROGRAM_KIND
from ptcflow.signals import (
    HANDOFF,
    INTERNAL,
    TOOL_ERROR,
    TOOL_STARTED,
    UNKNOWN_TOOL,
    Err,
    ErrorEnvelope,
    HandoffData,
    Message,
    Ok,
    ToolStartedData,
    json_safe,
    normalize_result,
)
from ptcflow.tools import Tool, call_tool, render_tool_signature

__all__ = ("TOOL_KIND", "builtin_kinds", "custom_kind", "unknown_kind")

# -- ToolExec ---------------------------------------------------------------------------------


def _tool_prepare(ctx: DirectiveContext) -> Ok[Any] | Err | Parked | None:
    """The tool's own retry and attempt options; ``ai.tool.started``; a call that must
    wait for a decision parks (``Parked``), a decided one (on resume) applies its
    decision; then the strategy's snapshot for a tool taking a context (its ``Err`` when
    ``snapshot()`` raised: the tool is not called)."""
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    tool = run.tools.tools.get(d.tool_name)
    if tool is not None:
        # A tool's own options win over the directive's: its author knows whether a
        # retry is safe and how long one call may take.
        if tool.max_retries is not None:
            ctx.max_retries = tool.max_retries
        if tool.timeout_ms is not None:
            at = ctx.attempt_ms
            ctx.attempt_ms = tool.timeout_ms if at is None else min(at, tool.timeout_ms)
    decisions = run.decisions
    decision = decisions.get(d.id) if decisions is not None else None
    if decision is not None:
        decided = apply_decision(ctx, decision)
        if decided is not None:
            return decided
    elif run.paused_children is not None and d.id in run.paused_children:
        pass  # its paused child resumes in place: started (and decided) before the pause
    else:
        arguments = json_safe(d.arguments)  # as the journal reads them back
        run.emit(ctx, TOOL_STARTED, ToolStartedData(tool_name=d.tool_name, arguments=arguments))
        if (  # a tool that waits for a decision (the toolbox knows whether it has one)
            run.tools.may_pause
            and tool is not None
            and (tool.deferred or tool.requires_approval is not False)
        ):
            if tool.signature is not None:  # a person decides on a call that can run
                checked = tool.signature.validate_input(
                    dict(arguments) if isinstance(arguments, Mapping) else arguments, "enabled"
                )
                if not checked.ok:
                    return _invalid_child(tool, checked.errors)
                asked = ask_approval(ctx, tool, arguments, checked.value)
            else:
                asked = ask_approval(ctx, tool, arguments, arguments)
            if asked is not None:
                return asked
    if d.tool_name not in run.tools.context_names:
        return None
    try:
        ctx.snapshot = run.snapshot(ctx)
    except Exception as exc:
        name = run.name
        return Err(
            error=ErrorEnvelope.make(
                INTERNAL,
                f"strategy {name!r} raised {type(exc).__name__} in snapshot() while "
                f"preparing the context of tool call {d.id!r}: {exc}",
                {"strategy": name, "exception": type(exc).__name__},
                retryable=False,
            )
        )
    return None


def _tool_call(ctx: DirectiveContext) -> Any:
    """One attempt's work: the tool's call (a known tool without a context parameter or
    a limit goes straight to ``call_tool``, which never raises; the others to the
    toolbox, under the tool's limiter when it has one)."""
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    ex = run.executor
    tools = run.tools
    tool = tools.tools.get(d.tool_name)
    if tool is not None and not ex.tool_limited and d.tool_name not in tools.context_names:
        if d.tool_name in tools.child_names:
            return _child_tool(ctx, tool)
        return call_tool(tool, d.id, d.arguments, run_sync=ex.threads.run_sync)
    if tool is not None and d.tool_name in tools.child_names:
        return _child_tool(ctx, tool)
    limiter = ex.tool_limiter(d.tool_name) if ex.tool_limited else None
    if limiter is None:
        return _via_toolbox(ctx)
    return _limited(limiter, ctx)


async def _child_tool(ctx: DirectiveContext, tool: Tool) -> Ok[Any] | Err | Parked:
    """A tool that runs a child run (a :class:`~ptcflow.runtime.ChildTool`): the
    arguments checked by its signature, then the run it plans, nested in this call.

    A child that pauses parks this call (:func:`child_parked`); when the run resumes,
    the same plan resumes the paused child in place (``Runtime._run_child``)."""
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    arguments: Any = d.arguments
    if not isinstance(arguments, Mapping):
        return _invalid_child(
            tool, [f"takes a map of named arguments, got {type(arguments).__name__}"]
        )
    values = dict(arguments)
    if tool.signature is not None:
        checked = tool.signature.validate_input(values, "enabled")
        if not checked.ok:
            return _invalid_child(tool, checked.errors)
        values = dict(checked.value)
    parent = ctx.parent
    strategy = run.strategy
    fn: Any = tool.fn
    handoff = bool(getattr(fn, "handoff_agent", ""))
    conversation: tuple[Message, ...] = ()
    if handoff:  # the conversation as it stands, the call making the handoff last
        kept = getattr(strategy, "conversation", None)
        if kept is not None:
            conversation = tuple(kept(run.core.state))
    parent_run = ParentRun(
        run_id=run.run_id,
        name=run.name,
        llm=run.llm,
        model=getattr(strategy, "model", None) or None,
        inherit=run.inherit,
        from_program=parent is not None and isinstance(parent.directive, RunProgram),
        call_id=d.id,
        conversation=conversation,
        tools=run.tools,
        handoffs=run.handoffs,
        max_handoffs=run.executor.limits.max_handoffs,
        agents=run.agents,
    )
    planned = fn.plan_child(parent_run, values)
    if isinstance(planned, Err):
        return planned
    if handoff and not (run.paused_children and d.id in run.paused_children):
        _handed_off(ctx, tool.name, planned)  # once: not again when its paused child resumes
    try:
        step = await run.performer.run_child(ctx, planned, None)
    except ResumeError as exc:  # its paused child is not the agent's run any more
        return Err(
            error=ErrorEnvelope.make(
                INTERNAL,
                f"tool {tool.name!r} (call {d.id!r}) could not resume its paused agent run: {exc}",
                {"tool": tool.name, "exception": type(exc).__name__},
                retryable=False,
            )
        )
    if step.paused:
        return child_parked(d.id, step)
    result: Ok[Any] | Err = fn.child_result(parent_run, step)
    return result


def _handed_off(ctx: DirectiveContext, tool_name: str, planned: Any) -> None:
    """Publish ``ai.handoff`` for the handoff ``planned`` (its span: attributes and an
    event on the call's ``execute_tool`` span, under which the next agent's run nests)."""
    run = ctx.run
    to_agent = planned.name or ""
    data = HandoffData(
        from_agent=run.name,
        to_agent=to_agent,
        tool_name=tool_name,
        messages=len(planned.history),
        chain=planned.handoffs,
    )
    ctx.run.emit(ctx, HANDOFF, data)
    span = ctx.span
    if span is not None:
        attrs = {"ptcflow.handoff.from": run.name, "ptcflow.handoff.to": to_agent}
        span.set_attributes(attrs)
        span.add_event(HANDOFF, {**attrs, "ptcflow.handoff.messages": len(planned.history)})


def child_parked(call_id: str, step: Step) -> Parked:
    """The call ``call_id`` that ran the child run of the paused ``step`` waits for the
    child's pending calls, their ids prefixed ``{call_id}/`` (the ids the caller's paused
    Step lists and ``rt.resume`` takes); the child's paused run goes with it."""
    pending = tuple(
        msgspec.structs.replace(p, call_id=f"{call_id}/{p.call_id}") for p in step.pending
    )
    return Parked(pending, child=step.paused_run)


def _invalid_child(tool: Tool, errors: list[str]) -> Err:
    """The ``validation`` error of a call whose arguments do not fit ``tool``'s signature."""
    return invalid_child_arguments(tool.name, render_tool_signature(tool), errors)


def _via_toolbox(ctx: DirectiveContext) -> Awaitable[Any]:
    """The call of a tool taking a ``ToolContext``, a limited tool, or an unknown one
    (the toolbox's coroutine, not started)."""
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    metadata = d.context
    if RESERVED_CONTEXT_KEY in metadata:
        metadata = {k: v for k, v in metadata.items() if k != RESERVED_CONTEXT_KEY}
    return run.tools.call(
        d.tool_name,
        d.arguments,
        call_id=d.id,
        run_id=run.run_id,
        state=ctx.snapshot,
        metadata=metadata,
        run_sync=run.executor.threads.run_sync,
    )


async def _limited(limiter: anyio.CapacityLimiter, ctx: DirectiveContext) -> Any:
    """The call of a limited tool, once ``limiter`` has a slot for it."""
    async with limiter:
        return await _via_toolbox(ctx)


TOOL_KIND = Kind(
    "ToolExec",
    call=_tool_call,
    prepare=_tool_prepare,
    open_span=tool_span,
    close_span=tool_close,
    error_type=TOOL_ERROR,
)
"""How a ``ToolExec`` is performed (and a sub-call, see ``DirectiveContext.call_tool``)."""


# -- RunChild ---------------------------------------------------------------------------------


def _child_prepare(ctx: DirectiveContext) -> Err | None:
    d = ctx.directive
    assert isinstance(d, RunChild)
    held = ctx.run.paused_children
    if held is None or d.id not in held:  # else it resumes in place: started already
        ctx.run.emit(
            ctx, TOOL_STARTED, ToolStartedData(tool_name=d.agent, arguments=json_safe(d.input))
        )
    agents = ctx.run.agents
    if d.agent not in agents:
        known = ", ".join(agents) or "none"
        return Err(
            error=ErrorEnvelope.make(
                UNKNOWN_TOOL,
                f"RunChild {d.id!r} names agent {d.agent!r}, which this run does not have; "
                f"agents: {known} (pass agents={{name: strategy}} to rt.run)",
                {"agent": d.agent, "available": list(agents)},
            )
        )
    return None


def _child_call(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, RunChild)
    return ctx.run.performer.run_child(ctx, ctx.run.agents[d.agent], d.input)


def _child_settle(ctx: DirectiveContext, step: Any) -> Any:
    if step.paused:
        return child_parked(ctx.directive.id, step)
    if step.ok:
        return journal_safe(Ok(payload=step.value))
    return Err(error=step.error)


# -- tables -----------------------------------------------------------------------------------


def builtin_kinds() -> dict[type[Any], Kind]:
    """Return a fresh table of the built-in directive kinds that perform something."""
    return {
        **llm_kinds(),
        ToolExec: TOOL_KIND,
        RunProgram: PROGRAM_KIND,
        RunChild: Kind(
            "RunChild",
            call=_child_call,
            settle=_child_settle,
            prepare=_child_prepare,
            open_span=tool_span,
            close_span=tool_close,
            retries=False,
        ),
    }


def custom_kind(cls: type[Directive], handler: Handler) -> Kind:
    """Wrap a user handler ``async def handler(directive, ctx) -> result`` as a kind."""

    def call(ctx: DirectiveContext) -> Any:
        return handler(ctx.directive, ctx)

    def settle(ctx: DirectiveContext, value: Any) -> Any:
        return journal_safe(normalize_result(value))

    label = getattr(handler, "__qualname__", repr(handler))
    return Kind(
        f"{cls.__name__} ({label})",
        call=call,
        settle=settle,
        open_span=tool_span,
        close_span=tool_close,
    )


def unknown_kind(cls: type[Any]) -> Kind:
    """The kind of a directive class nobody registered a handler for."""

    def prepare(ctx: DirectiveContext) -> Err:
        return validation(
            f"no handler is registered for directive kind {cls.__name__} "
            f"(id {ctx.directive.id!r}); register one with "
            f"Runtime(handlers={{{cls.__name__}: handler}})"
        )

    return Kind(cls.__name__, prepare=prepare)
