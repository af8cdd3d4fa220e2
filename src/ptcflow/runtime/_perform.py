"""Performing one directive: its deadline, its attempts and retries, its span.

:class:`Performer` turns a :class:`DirectiveContext` into a result. Per attempt it calls
the directive kind's ``perform`` (under the global limiter and the attempt timeout, when
set); retryable failures are retried with capped exponential backoff and full jitter,
within the directive's deadline. The result goes back to the run core (``LocalRun.report``),
which publishes the terminal signal; a cancelled directive reports ``None``.

The same machinery performs sub-calls (:meth:`Performer.call_tool`, the tool calls a
directive's handler makes) and starts child runs (:meth:`Performer.run_child`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from ptcflow.directives import Directive, ToolExec
from ptcflow.errors import UsageError
from ptcflow.runtime._config import backoff_delay
from ptcflow.runtime._context import DirectiveContext
from ptcflow.runtime._executor import Executor
from ptcflow.runtime._kind import Kind
from ptcflow.runtime._kinds import builtin_kinds, custom_kind, unknown_kind
from ptcflow.runtime._step import Step
from ptcflow.runtime._telemetry import attach, detach
from ptcflow.signals import (
    INTERNAL,
    TIMEOUT,
    VALIDATION,
    Err,
    ErrorEnvelope,
    Ok,
    error_from_exception,
)

__all__ = ("Performer",)

ChildRunner = Callable[[DirectiveContext, Any, Any], Awaitable[Step]]
"""``(ctx, strategy, input) -> Step``: runs a child run of ``ctx``'s run to its end."""


class Performer:
    """Performs the directives of a Runtime's runs (see the module docstring).

    Args:
        executor: the shared resources (limits, threads, telemetry, counters, handlers).
        run_child: starts and drives a child run (the Runtime supplies it).
    """

    def __init__(self, executor: Executor, run_child: ChildRunner) -> None:
        self.executor = executor
        self._run_child = run_child
        self._kinds: dict[type[Any], Kind] = builtin_kinds()
        for cls, handler in executor.handlers.items():
            self._kinds[cls] = custom_kind(cls, handler)
        self.lean = executor.global_limiter is None
        """No global limiter: the driver may perform a directive without its own scope."""

    def kind_of(self, directive: Directive) -> Kind:
        """The kind of ``directive`` (its class's handler, else its nearest base's)."""
        cls = type(directive)
        kind = self._kinds.get(cls)
        if kind is None:
            for base in cls.__mro__[1:]:
                kind = self._kinds.get(base)
                if kind is not None or base is Directive:
                    break
            if kind is None:
                kind = unknown_kind(cls)
            self._kinds[cls] = kind
        return kind

    # -- one directive ---------------------------------------------------------------------

    def spawn(self, ctx: DirectiveContext) -> None:
        """Perform ``ctx`` in a task of the Runtime's task group."""
        self.executor.task_group.start_soon(self.perform_task, ctx, name=ctx.directive.id)

    async def perform_task(self, ctx: DirectiveContext) -> None:
        """Perform ``ctx`` in a task of its own and report its result."""
        result = None
        try:
            if ctx.flight.cancel_reason is None:
                with anyio.CancelScope() as scope:
                    ctx.scope = scope
                    result = await self.perform(ctx)
        finally:
            ctx.run.report(ctx, result)

    async def perform(self, ctx: DirectiveContext) -> Ok[Any] | Err | None:
        """Perform ``ctx`` to its result (``None``: cancelled); never raises but the
        cancellation of an enclosing scope.

        ``ctx.scope`` is the scope that cancels this directive (the task's, or the run
        driver's): the directive gets a scope of its own when it has a deadline of its own,
        an attempt timeout, or waits for the global limiter.
        """
        ex = self.executor
        kind = ctx.kind = self.kind_of(ctx.directive)
        timeout_ms = ctx.directive.timeout_ms
        if timeout_ms is not None:
            ctx.deadline = min(ctx.deadline, ex.clock() + timeout_ms / 1000.0)
        if kind.prepare_sync is not None:
            kind.prepare_sync(ctx)
        ctx.started_at = ex.clock()
        tel = ex.telemetry
        token = None
        if tel is not None:
            kind.open_span(ctx, tel)
            token = attach(ctx.otel_context)
        result: Ok[Any] | Err | None = None
        try:
            if kind.prepare is not None:
                result = kind.prepare(ctx)
            if result is None:
                if self.lean and ctx.deadline >= ctx.run.core.deadline and ctx.attempt_ms is None:
                    result = await self._attempts(ctx, kind)
                else:
                    with anyio.CancelScope(deadline=ctx.deadline) as scope:
                        outer, ctx.scope = ctx.scope, scope
                        result = await self._attempts(ctx, kind)
                    ctx.scope = outer
                    if scope.cancelled_caught and ctx.flight.cancel_reason is None:
                        result = self._timeout(ctx)
        except Exception as exc:
            result = self._crash(ctx, kind, exc)
        except BaseException as exc:
            if not _is_stray_cancellation(exc):
                raise
            result = self._stray(ctx, kind, exc)
        finally:
            if token is not None:
                detach(token)
        return result

    async def _attempts(self, ctx: DirectiveContext, kind: Kind) -> Ok[Any] | Err:
        """Perform attempts until one succeeds or retrying is not allowed."""
        ex = self.executor
        retry = ex.retry
        allowed = min(ctx.max_retries, retry.max_retries_cap) if kind.retries else 0
        while True:
            ctx.attempt += 1
            ctx.retry_after = None
            result = await self._attempt(ctx, kind)
            if (
                isinstance(result, Ok)
                or not result.error.retryable
                or ctx.attempt > allowed
                or ctx.no_retry
            ):
                return result
            delay = backoff_delay(
                ctx.attempt,
                ctx.directive.retry_backoff_ms,
                retry,
                retry_after_s=ctx.retry_after,
                rand=ex.rand,
            )
            if ex.clock() + delay >= ctx.deadline:
                return result  # waiting would pass the deadline: report the last failure
            ex.counters.retries += 1
            if ex.log_events:
                ex.log.debug(
                    "directive.retry",
                    run_id=ctx.run_id,
                    call_id=ctx.directive.id,
                    attempt=ctx.attempt,
                    error_type=result.error.type,
                    delay_s=round(delay, 4),
                )
            await anyio.sleep(delay)

    async def _attempt(self, ctx: DirectiveContext, kind: Kind) -> Ok[Any] | Err:
        """One attempt, under the global limiter and the attempt timeout when set."""
        limiter = self.executor.global_limiter
        if limiter is not None:
            async with limiter:
                return await self._timed(ctx, kind)
        return await self._timed(ctx, kind)

    async def _timed(self, ctx: DirectiveContext, kind: Kind) -> Ok[Any] | Err:
        attempt_ms = ctx.attempt_ms
        if attempt_ms is None:
            result: Ok[Any] | Err = await kind.perform(ctx)
            return result
        limit = self.executor.clock() + attempt_ms / 1000.0
        if limit >= ctx.deadline:
            result = await kind.perform(ctx)
            return result
        with anyio.CancelScope(deadline=limit) as scope:
            result = await kind.perform(ctx)
            return result
        assert scope.cancelled_caught
        return Err(
            error=ErrorEnvelope.make(
                TIMEOUT,
                f"attempt {ctx.attempt} of {ctx.directive.id!r} exceeded its "
                f"{attempt_ms} ms attempt timeout",
                {"timeout_ms": attempt_ms, "scope": "attempt", "attempt": ctx.attempt},
            )
        )

    def _timeout(self, ctx: DirectiveContext) -> Err | None:
        """The directive's scope reached its deadline: its own timeout, or the run's
        (``None``: the run core then times the whole run out)."""
        d = ctx.directive
        if d.timeout_ms is None or ctx.deadline >= ctx.run.core.deadline:
            return None
        return Err(
            error=ErrorEnvelope.make(
                TIMEOUT,
                f"{type(d).__name__} {d.id!r} exceeded its {d.timeout_ms} ms deadline "
                f"after {ctx.attempt} attempt(s)",
                {"timeout_ms": d.timeout_ms, "scope": "directive", "attempts": ctx.attempt},
            )
        )

    def _crash(self, ctx: DirectiveContext, kind: Kind, exc: Exception) -> Err:
        d = ctx.directive
        log = self.executor.log
        if log is not None:
            log.error(
                "directive.handler_crashed",
                run_id=ctx.run_id,
                call_id=d.id,
                kind=type(d).__name__,
                exc_info=exc,
            )
        return Err(
            error=ErrorEnvelope.make(
                INTERNAL,
                f"the {kind.label} handler crashed while performing {type(d).__name__} "
                f"{d.id!r}: {type(exc).__name__}: {exc}",
                {"exception": type(exc).__name__, "kind": type(d).__name__},
                retryable=False,
            )
        )

    def _stray(self, ctx: DirectiveContext, kind: Kind, exc: BaseException) -> Err:
        d = ctx.directive
        error = error_from_exception(exc, type=kind.error_type, retryable=False)
        message = (
            f"{type(d).__name__} {d.id!r} raised {type(exc).__name__} although nothing "
            "cancelled it (it awaited something that was cancelled elsewhere)"
        )
        return Err(error=ErrorEnvelope.make(error.type, message, error.details, retryable=False))

    # -- sub-calls and child runs ------------------------------------------------------------

    async def call_tool(
        self, parent: DirectiveContext, name: str, arguments: Mapping[str, Any], index: int
    ) -> Ok[Any] | Err:
        """Perform tool ``name`` as a sub-call of ``parent`` (``DirectiveContext.call_tool``)."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 1:
            raise UsageError(
                f"call_tool(index=...) takes a positive int (1, 2, ...), got {index!r}"
            )
        used = parent.subcalls
        if used is None:
            used = parent.subcalls = set()
        if index in used:
            raise UsageError(
                f"call_tool(index={index}) was used already by {parent.directive.id!r}; "
                "number the calls 1, 2, ... in the order they are issued"
            )
        used.add(index)
        d = parent.directive
        raw: Any = arguments  # from a program a model wrote: anything
        sub = ToolExec(
            id=f"{d.id}/tool/{index}",
            tool_name=name if isinstance(name, str) else str(name),
            arguments=dict(raw) if isinstance(raw, Mapping) else raw,
            request_id=d.request_id,
            iteration=d.iteration,
            retry_backoff_ms=d.retry_backoff_ms,
        )
        run = parent.run
        flight = run.core.open_subcall(parent.flight, sub)
        ctx = DirectiveContext(run, flight, otel_parent=parent.otel_context)
        ctx.deadline = parent.deadline
        flight.work = ctx
        result: Ok[Any] | Err | None = flight.cancel_reason if flight.done else None
        try:
            if result is None:
                problems = sub.problems()
                if not isinstance(name, str):
                    problems.append(f"the tool name must be a string, got {type(name).__name__}")
                if not isinstance(raw, Mapping):
                    problems.append(
                        f"arguments must be a map of named arguments, got {type(raw).__name__}"
                    )
                if problems:
                    result = _invalid(sub, problems)
                else:
                    with anyio.CancelScope() as scope:
                        ctx.scope = scope
                        result = await self.perform(ctx)
        finally:
            published = self._report_subcall(ctx, result)
        return published

    def _report_subcall(self, ctx: DirectiveContext, result: Ok[Any] | Err | None) -> Ok[Any] | Err:
        run = ctx.run
        ex = self.executor
        now = ex.clock()
        duration = now - ctx.started_at if ctx.started_at else 0.0
        published = run.core.finish(
            ctx.flight,
            result,
            now,
            attempts=ctx.attempt or 1,
            duration_ms=round(duration * 1000.0, 3),
        )
        final = ctx.flight.result
        assert final is not None
        if published is not None:
            ctx.close()
        run.pump()
        return final

    async def run_child(self, ctx: DirectiveContext, strategy: Any, input: Any) -> Step:
        """Run ``strategy`` as a child run of ``ctx``'s run, to its Step."""
        return await self._run_child(ctx, strategy, input)


def _invalid(d: Directive, problems: list[str]) -> Err:
    return Err(
        error=ErrorEnvelope.make(
            VALIDATION,
            f"invalid tool call {d.id!r}: {'; '.join(problems)}",
            {"problems": problems, "kind": "ToolExec"},
        )
    )


def _is_stray_cancellation(exc: BaseException) -> bool:
    """True for an asyncio ``CancelledError`` that no cancellation of this task caused
    (code awaited a future someone else cancelled, or raised it itself)."""
    if not isinstance(exc, asyncio.CancelledError):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not on asyncio: it cannot be a cancellation of this task
        return True
    return task is None or task.cancelling() == 0
