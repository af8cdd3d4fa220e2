"""The :class:`Kind` record (how one directive class is performed) and shared pieces.

A kind says how to prepare a directive (at submit time and in its task), how to perform
one attempt, which terminal signal ends it, and which span describes it. The executor
supplies everything else (deadlines, retries, limits, the exactly-once terminal).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ptcflow.directives import ToolExec
from ptcflow.runtime._context import DirectiveContext
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.signals import TOOL_RESULT, VALIDATION, Err, ErrorEnvelope, ToolResultData

__all__ = ("Handler", "Kind", "tag_of", "tool_close", "tool_span", "tool_terminal", "validation")


class Handler(Protocol):
    """A directive handler: ``async def handler(directive, ctx) -> result``.

    Called once per attempt with the directive and its :class:`DirectiveContext`. Return
    the result in any shape :func:`~ptcflow.signals.normalize_result` accepts (a value,
    ``Ok``/``Err``, an ``ErrorEnvelope``, an ``(ok, value)`` pair); an ``Err`` whose
    envelope is ``retryable`` is retried under the directive's ``max_retries``. The
    executor publishes the terminal ``ai.tool.result`` itself; a handler may publish
    intermediate signals with ``ctx.emit``. A raised exception ends the directive with an
    ``internal`` error (never retried); cancellation must be left to propagate.
    """

    def __call__(self, directive: Any, ctx: DirectiveContext, /) -> Awaitable[Any]:
        """Perform one attempt of ``directive``."""
        ...


def _noop_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    return None


def _noop_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    return None


class Kind:
    """The handler registration of one directive class (see the module docstring)."""

    __slots__ = (
        "call",
        "close_span",
        "fail",
        "inline",
        "label",
        "open_span",
        "perform",
        "prepare",
        "prepare_sync",
        "retries",
        "settle",
        "terminal",
    )

    def __init__(
        self,
        label: str,
        *,
        terminal: Callable[[DirectiveContext, Any], None],
        perform: Callable[[DirectiveContext], Awaitable[Any]] | None = None,
        inline: Callable[[DirectiveContext], Any] | None = None,
        prepare_sync: Callable[[DirectiveContext], None] | None = None,
        prepare: Callable[[DirectiveContext], Any] | None = None,
        open_span: Callable[[DirectiveContext, Telemetry], None] = _noop_span,
        close_span: Callable[[DirectiveContext, Telemetry, Any, float], None] = _noop_close,
        retries: bool = True,
        call: Callable[[DirectiveContext], Any] | None = None,
        settle: Callable[[DirectiveContext, Any], Any] | None = None,
        fail: Callable[[DirectiveContext, Exception], Any] | None = None,
    ) -> None:
        self.label = label
        self.terminal = terminal
        self.perform: Callable[[DirectiveContext], Awaitable[Any]] = perform or _never
        self.inline = inline
        self.prepare_sync = prepare_sync
        self.prepare = prepare
        self.open_span = open_span
        self.close_span = close_span
        self.retries = retries
        self.call = call
        """Optional split of one attempt for the executor's fast lane, saving a coroutine:
        ``call(ctx)`` returns the awaitable doing the work (or a result at once, an
        ``Err``); ``settle(ctx, value)`` turns what it returned into the result (``None``:
        as is) and ``fail(ctx, exc)`` an exception it raised. ``perform`` must do the
        same in one coroutine (the general path uses it)."""
        self.settle = settle
        self.fail = fail


async def _never(ctx: DirectiveContext) -> Any:  # pragma: no cover - inline kinds only
    raise AssertionError("inline directive kinds are never performed in a task")


# -- shared terminal: ai.tool.result ---------------------------------------------------


def tool_terminal(ctx: DirectiveContext, result: Any) -> None:
    """Publish ``ai.tool.result`` for ``ctx`` (tools, child runs, custom kinds)."""
    d = ctx.directive
    if isinstance(d, ToolExec) and d.tool_name:
        name = d.tool_name
    else:
        name = getattr(d, "tool_name", None) or getattr(d, "agent", None) or tag_of(type(d))
    run = ctx.run
    run.tool_calls += 1
    ms = 0.0
    if ctx.started_at:
        ms = round((run.clock() - ctx.started_at) * 1000.0, 3)
    run.emit(
        TOOL_RESULT,
        ToolResultData(tool_name=name, result=result, attempts=ctx.attempt or 1, duration_ms=ms),
        ctx,
    )


def tag_of(cls: type[Any]) -> str:
    """The msgspec tag of a directive class (its name when it has none)."""
    tag = getattr(cls, "__struct_config__", None)
    return str(tag.tag) if tag is not None and tag.tag else cls.__name__


def tool_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    """Open the ``execute_tool {name}`` span of ``ctx``."""
    d = ctx.directive
    name = getattr(d, "tool_name", None) or getattr(d, "agent", None) or tag_of(type(d))
    tool = ctx.run.tools.tools.get(name) if isinstance(d, ToolExec) else None
    attrs = tel.tool_attributes(name, d.id, tool)
    span = tel.start_span(f"execute_tool {name}", attrs, ctx.run.otel_context)
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.run.otel_context)
    ctx.traceparent = tel.traceparent(span)
    arguments = d.arguments if isinstance(d, ToolExec) else getattr(d, "input", None)
    if arguments is not None:  # a child agent's input is its arguments
        tel.content(span, "gen_ai.tool.call.arguments", arguments)


def tool_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    """End the ``execute_tool`` span and record its duration."""
    if result.ok:
        tel.content(ctx.span, "gen_ai.tool.call.result", result.payload)
    tel.end_span(ctx.span, result, tool_data=True)
    tel.record("execute_tool", duration, error_type=None if result.ok else result.error.type)


def validation(message: str) -> Err:
    """A non-retryable ``validation`` error."""
    return Err(error=ErrorEnvelope.make(VALIDATION, message, retryable=False))
