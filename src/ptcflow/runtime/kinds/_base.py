"""The :class:`Kind` record (how one directive class is performed) and shared pieces.

A kind says how to prepare a directive (before and after its span opens), how to perform
one attempt, and which span describes it. The performer supplies everything else
(deadlines, retries, limits, cancellation); the run core publishes the terminal signal.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ptcflow.core import Parked, tool_name_of
from ptcflow.directives import ToolExec
from ptcflow.runtime._run import DirectiveContext
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.signals import INTERNAL, VALIDATION, Err, ErrorEnvelope, Ok

__all__ = ("Handler", "Kind", "tool_close", "tool_span", "validation")


class Handler(Protocol):
    """A directive handler: ``async def handler(directive, ctx) -> result``.

    Called once per attempt with the directive and its :class:`DirectiveContext`. Return
    the result in any shape :func:`~ptcflow.signals.normalize_result` accepts (a value,
    ``Ok``/``Err``, an ``ErrorEnvelope``, an ``(ok, value)`` pair); an ``Err`` whose
    envelope is ``retryable`` is retried under the directive's ``max_retries``. The
    runtime publishes the terminal ``ai.tool.result`` itself; a handler may publish
    intermediate signals with ``ctx.emit`` and call tools with ``ctx.call_tool``. A
    raised exception ends the directive with an ``internal`` error (never retried);
    cancellation must be left to propagate.
    """

    def __call__(self, directive: Any, ctx: DirectiveContext, /) -> Awaitable[Any]:
        """Perform one attempt of ``directive``."""
        ...


def _no_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    return None


def _no_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    return None


def _nothing(ctx: DirectiveContext) -> Any:  # pragma: no cover - prepare answers
    raise AssertionError("this directive kind is answered by its prepare step")


class Kind:
    """The handler registration of one directive class (see the module docstring).

    One attempt is ``settle(ctx, await call(ctx))``, or ``fail(ctx, exc)`` when the awaited
    work raised: ``call`` starts the work and returns its awaitable (or an ``Err`` at
    once, for work that cannot start); the split keeps the runtime's own coroutine out of
    the way of the provider's or tool's (one frame less per directive).

    Args:
        label: names the kind in errors (``"ToolExec"``, ``"Shout (shout)"``).
        call: ``(ctx) -> awaitable | Err``: one attempt's work.
        settle: ``(ctx, value) -> result``: the result of what the work returned (``None``:
            the value itself, an ``Ok`` or ``Err``).
        fail: ``(ctx, exc) -> result``: the result of an exception the work raised
            (default: none, the exception is a crash of the handler: ``internal``); or
            an awaitable, more work the attempt goes on with (the next model of a
            fallback), settled and failed in the same way.
        prepare_sync: before the span opens (resolve a model, take a snapshot).
        prepare: after the span opens, before the first attempt (it may set the attempt
            options: a tool's own ``max_retries`` and ``attempt_ms``); returns an ``Ok`` or
            ``Err`` to end the directive with it, a ``Parked`` when it waits for a
            decision, or ``None`` to go on.
        open_span / close_span: the directive's span (no-ops by default).
        retries: whether retryable failures are retried.
        error_type: the error type of a stray ``CancelledError`` the work raised.
    """

    __slots__ = (
        "call",
        "close_span",
        "error_type",
        "fail",
        "label",
        "open_span",
        "prepare",
        "prepare_sync",
        "retries",
        "settle",
    )

    def __init__(
        self,
        label: str,
        *,
        call: Callable[[DirectiveContext], Any] = _nothing,
        settle: Callable[[DirectiveContext, Any], Any] | None = None,
        fail: Callable[[DirectiveContext, Exception], Any] | None = None,
        prepare_sync: Callable[[DirectiveContext], None] | None = None,
        prepare: Callable[[DirectiveContext], Ok[Any] | Err | Parked | None] | None = None,
        open_span: Callable[[DirectiveContext, Telemetry], None] = _no_span,
        close_span: Callable[[DirectiveContext, Telemetry, Any, float], None] = _no_close,
        retries: bool = True,
        error_type: str = INTERNAL,
    ) -> None:
        self.label = label
        self.call = call
        self.settle = settle
        self.fail = fail
        self.prepare_sync = prepare_sync
        self.prepare = prepare
        self.open_span = open_span
        self.close_span = close_span
        self.retries = retries
        self.error_type = error_type

    def __repr__(self) -> str:
        return f"<Kind {self.label}>"


# -- the execute_tool span (tools, child runs, custom kinds) ---------------------------------


def tool_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    """Open the ``execute_tool {name}`` span of ``ctx``."""
    d = ctx.directive
    name = tool_name_of(d)
    tool = ctx.run.tools.tools.get(name) if isinstance(d, ToolExec) else None
    attrs = tel.tool_attributes(name, d.id, tool)
    span = tel.start_span(f"execute_tool {name}", attrs, ctx.otel_parent)
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.otel_parent)
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
