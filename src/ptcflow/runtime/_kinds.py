"""The tool-like directive kinds (``ToolExec``, ``RunChild``, ``EmitToolError``,
``EmitRequestError``), user-registered kinds, and the table of built-in kinds."""

from __future__ import annotations

from typing import Any

from ptcflow.directives import (
    RESERVED_CONTEXT_KEY,
    Directive,
    EmitRequestError,
    EmitToolError,
    RunChild,
    ToolExec,
)
from ptcflow.runtime._context import DirectiveContext
from ptcflow.runtime._kind import Handler, Kind, tool_close, tool_span, tool_terminal, validation
from ptcflow.runtime._llm_kinds import is_resolver, llm_kinds
from ptcflow.signals import (
    INTERNAL,
    REQUEST_ERROR,
    TOOL_STARTED,
    UNKNOWN_TOOL,
    Err,
    ErrorEnvelope,
    Ok,
    RequestErrorData,
    ToolStartedData,
    normalize_result,
)
from ptcflow.tools import call_tool

__all__ = ("Handler", "Kind", "builtin_kinds", "custom_kind", "is_resolver", "unknown_kind")


# -- ToolExec --------------------------------------------------------------------------


def _tool_prepare_sync(ctx: DirectiveContext) -> None:
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    tools = run.tools
    if d.tool_name in tools.context_names:
        try:
            ctx.snapshot = run.snapshot()
        except Exception as exc:
            ctx.data = Err(
                error=ErrorEnvelope.make(
                    INTERNAL,
                    f"strategy {run.name!r} raised {type(exc).__name__} in snapshot() while "
                    f"preparing the context of tool call {d.id!r}: {exc}",
                    {"strategy": run.name, "exception": type(exc).__name__},
                    retryable=False,
                )
            )
    tool = tools.tools.get(d.tool_name)
    if tool is not None:
        # A tool's own options win over the directive's: its author knows whether a
        # retry is safe and how long one call may take.
        if tool.max_retries is not None:
            ctx.max_retries = tool.max_retries
        if tool.timeout_ms is not None:
            at = ctx.attempt_ms
            ctx.attempt_ms = tool.timeout_ms if at is None else min(at, tool.timeout_ms)


def _tool_prepare(ctx: DirectiveContext) -> Any:
    d: Any = ctx.directive  # ToolExec
    ctx.run.emit(TOOL_STARTED, ToolStartedData(tool_name=d.tool_name, arguments=d.arguments), ctx)
    return ctx.data if isinstance(ctx.data, Err) else None


def _tool_call(ctx: DirectiveContext) -> Any:
    """One attempt's work: the tool's awaitable (a known tool without a context parameter
    or a limit goes straight to ``call_tool``)."""
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    ex = run.executor
    tools = run.tools
    name = d.tool_name
    tool = tools.tools.get(name)
    if tool is not None and not ex.tool_limited and name not in tools.context_names:
        return call_tool(tool, d.id, d.arguments, limiter=ex.thread_limiter)
    return _tool_via_toolbox(ctx)


async def _tool_perform(ctx: DirectiveContext) -> Any:
    return await _tool_call(ctx)


async def _tool_via_toolbox(ctx: DirectiveContext) -> Any:
    d: Any = ctx.directive  # ToolExec
    run = ctx.run
    ex = run.executor
    name = d.tool_name
    metadata = d.context
    if RESERVED_CONTEXT_KEY in metadata:
        metadata = {k: v for k, v in metadata.items() if k != RESERVED_CONTEXT_KEY}
    limiter = ex.tool_limiter(name) if ex.tool_limited else None
    if limiter is None:
        return await run.tools.call(
            name,
            d.arguments,
            call_id=d.id,
            run_id=run.run_id,
            state=ctx.snapshot,
            metadata=metadata,
            limiter=ex.thread_limiter,
        )
    async with limiter:
        return await run.tools.call(
            name,
            d.arguments,
            call_id=d.id,
            run_id=run.run_id,
            state=ctx.snapshot,
            metadata=metadata,
            limiter=ex.thread_limiter,
        )


# -- RunChild --------------------------------------------------------------------------


def _child_prepare(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, RunChild)
    ctx.emit(TOOL_STARTED, ToolStartedData(tool_name=d.agent, arguments=d.input))
    if d.agent not in ctx.run.agents:
        known = ", ".join(ctx.run.agents) or "none"
        return Err(
            error=ErrorEnvelope.make(
                UNKNOWN_TOOL,
                f"RunChild {d.id!r} names agent {d.agent!r}, which this run does not have; "
                f"agents: {known} (pass agents={{name: strategy}} to rt.run)",
                {"agent": d.agent, "available": list(ctx.run.agents)},
            )
        )
    return None


async def _child_perform(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, RunChild)
    step = await ctx.run.run_child(ctx, ctx.run.agents[d.agent], d.input)
    if step.ok:
        return Ok(payload=step.value)
    assert step.error is not None
    return Err(error=step.error)


# -- inline kinds ----------------------------------------------------------------------


def _emit_tool_error(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, EmitToolError)
    return Err(error=d.error)


def _emit_request_error(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, EmitRequestError)
    return Err(error=d.error)


def _request_error_terminal(ctx: DirectiveContext, result: Any) -> None:
    d = ctx.directive
    reason = d.reason if isinstance(d, EmitRequestError) else ""
    error = result.error if not result.ok else ErrorEnvelope.make("internal", "unexpected Ok")
    ctx.emit(REQUEST_ERROR, RequestErrorData(error=error, reason=reason))


def builtin_kinds() -> dict[type[Any], Kind]:
    """Return a fresh table of the built-in directive kinds."""
    return {
        **llm_kinds(),
        ToolExec: Kind(
            "ToolExec",
            perform=_tool_perform,
            call=_tool_call,
            terminal=tool_terminal,
            prepare_sync=_tool_prepare_sync,
            prepare=_tool_prepare,
            open_span=tool_span,
            close_span=tool_close,
        ),
        RunChild: Kind(
            "RunChild",
            perform=_child_perform,
            terminal=tool_terminal,
            prepare=_child_prepare,
            open_span=tool_span,
            close_span=tool_close,
            retries=False,
        ),
        EmitToolError: Kind("EmitToolError", inline=_emit_tool_error, terminal=tool_terminal),
        EmitRequestError: Kind(
            "EmitRequestError", inline=_emit_request_error, terminal=_request_error_terminal
        ),
    }


def custom_kind(cls: type[Directive], handler: Handler) -> Kind:
    """Wrap a user handler ``async def handler(directive, ctx) -> result`` as a kind."""

    async def perform(ctx: DirectiveContext) -> Any:
        return normalize_result(await handler(ctx.directive, ctx))

    label = getattr(handler, "__qualname__", repr(handler))
    return Kind(
        f"{cls.__name__} ({label})",
        perform=perform,
        terminal=tool_terminal,
        open_span=tool_span,
        close_span=tool_close,
    )


def unknown_kind(cls: type[Any]) -> Kind:
    """The kind of a directive class nobody registered a handler for."""

    def inline(ctx: DirectiveContext) -> Any:
        return validation(
            f"no handler is registered for directive kind {cls.__name__} "
            f"(id {ctx.directive.id!r}); register one with "
            f"Runtime(handlers={{{cls.__name__}: handler}})"
        )

    return Kind(cls.__name__, inline=inline, terminal=tool_terminal)
