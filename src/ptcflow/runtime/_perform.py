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
import contextlib
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from ptcflow.core import Parked, Step
from ptcflow.directives import Directive, ToolExec
from ptcflow.errors import UsageError
from ptcflow.runtime._config import backoff_delay
from ptcflow.runtime._driver import new_scope
from ptcflow.runtime._executor import Executor
from ptcflow.runtime._guards import guard_tool
from ptcflow.runtime._run import DirectiveContext
from ptcflow.runtime._telemetry import attach, detach
from ptcflow.runtime._usage import admit_subcall
from ptcflow.runtime.kinds._base import Kind
from ptcflow.runtime.kinds._tool import builtin_kinds, custom_kind, unknown_kind
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

_UNSCOPED = contextlib.nullcontext()
"""The "scope" of a directive without a deadline of its own (``ctx.scope`` cancels it)."""

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
        self.limited = executor.global_limiter is not None
        """Attempts wait for the global limiter (``Limits.max_directives``)."""

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
            if ctx.cancel_reason is None:
                with new_scope() as scope:
                    ctx.scope = scope
                    result = await self.perform(ctx)
        finally:
            ctx.run.report(ctx, result)

    async def perform(self, ctx: DirectiveContext) -> Ok[Any] | Err | Parked | None:
        """Perform ``ctx`` to its result (``None``: cancelled); never raises but the
        cancellation of an enclosing scope.

        ``ctx.scope`` is the scope that cancels this directive (the task's, or the run
        driver's). The directive gets a scope of its own for a deadline of its own; each
        attempt runs under the global limiter and the attempt timeout when they are set.
        One coroutine per directive: at 10,000 concurrent runs every frame alive during a
        model call counts (memory, garbage collection), so the attempt loop is here.
        """
        ex = self.executor
        kind = ctx.kind = self._kinds.get(type(ctx.directive)) or self.kind_of(ctx.directive)
        checked: Ok[Any] | Err | Parked | None = None
        guards = ctx.run.guards
        if guards is not None and guards.tool and type(ctx.directive) is ToolExec:
            checked = await guard_tool(ctx)  # may rewrite the arguments, or trip
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
            if ctx.directive.metadata:
                tel.metadata(ctx.span, ctx.directive.metadata)
            token = attach(ctx.otel_context)
        result: Ok[Any] | Err | Parked | None = checked
        own = (
            anyio.CancelScope(deadline=ctx.deadline)
            if ctx.deadline < ctx.run.core.deadline
            else None
        )
        try:
            if kind.prepare is not None and result is None:
                result = kind.prepare(ctx)  # may set the attempt options (a tool's own)
            guarded = self.limited or ctx.attempt_ms is not None
            with own or _UNSCOPED:
                outer = ctx.scope
                if own is not None:
                    ctx.scope = own
                while result is None:
                    ctx.attempt += 1
                    ctx.retry_after = None
                    if guarded:
                        result = await self._guarded_attempt(ctx, kind)
                    else:  # the attempt, as _guarded_attempt makes it, without the guards
                        work = kind.call(ctx)
                        if type(work) is Err:
                            result = work
                        else:
                            try:
                                value = await work
                                result = value if kind.settle is None else kind.settle(ctx, value)
                            except Exception as exc:
                                result = self._failed(ctx, kind, exc)
                                if type(result) is not Err and type(result) is not Ok:
                                    result = await self._go_on(ctx, kind, result)
                    if (
                        isinstance(result, Err)
                        and result.error.retryable
                        and kind.retries
                        and ctx.attempt <= min(ctx.max_retries, ex.retry.max_retries_cap)
                        and not ctx.no_retry
                        and await self._backoff(ctx, result)
                    ):
                        result = None
                ctx.scope = outer
            if own is not None and own.cancelled_caught and ctx.cancel_reason is None:
                result = self._timeout(ctx)  # its own deadline passed (not a cancellation)
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

    async def _backoff(self, ctx: DirectiveContext, failed: Err) -> bool:
        """Wait before the next attempt; ``False`` when that wait would pass the deadline
        (then the last failure is the result)."""
        ex = self.executor
        delay = backoff_delay(
            ctx.attempt,
            ctx.directive.retry_backoff_ms,
            ex.retry,
            retry_after_s=ctx.retry_after,
            rand=ex.rand,
        )
        if ex.clock() + delay >= ctx.deadline:
            return False
        ex.counters.retries += 1
        if ex.log_events:
            ex.log.debug(
                "directive.retry",
                run_id=ctx.run_id,
                call_id=ctx.directive.id,
                attempt=ctx.attempt,
                error_type=failed.error.type,
                delay_s=round(delay, 4),
            )
        await anyio.sleep(delay)
        return True

    async def _guarded_attempt(self, ctx: DirectiveContext, kind: Kind) -> Ok[Any] | Err:
        """One attempt under the global limiter and the attempt timeout (when set)."""
        limiter = self.executor.global_limiter
        if limiter is None:
            return await self._timed_attempt(ctx, kind)
        async with limiter:
            return await self._timed_attempt(ctx, kind)

    async def _timed_attempt(self, ctx: DirectiveContext, kind: Kind) -> Ok[Any] | Err:
        attempt_ms = ctx.attempt_ms
        limit = math.inf if attempt_ms is None else self.executor.clock() + attempt_ms / 1000.0
        with new_scope(limit) as scope:
            work = kind.call(ctx)
            if type(work) is Err:
                return work
            try:
                value = await work
                result: Ok[Any] | Err = value if kind.settle is None else kind.settle(ctx, value)
            except Exception as exc:
                result = self._failed(ctx, kind, exc)
                if type(result) is not Err and type(result) is not Ok:
                    result = await self._go_on(ctx, kind, result)
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

    def _failed(self, ctx: DirectiveContext, kind: Kind, exc: Exception) -> Any:
        """An attempt's work raised ``exc``: the kind's reading of it (a result, or more
        work that goes on within the attempt: :meth:`_go_on`), else a crash."""
        if kind.fail is None:
            return self._crash(ctx, kind, exc)
        return kind.fail(ctx, exc)

    async def _go_on(self, ctx: DirectiveContext, kind: Kind, work: Any) -> Ok[Any] | Err:
        """The kind's ``fail`` answered with more work (a fallback's next model): await it
        as the attempt's, as long as ``fail`` hands out more."""
        while True:
            try:
                value = await work
                result: Ok[Any] | Err = value if kind.settle is None else kind.settle(ctx, value)
                return result
            except Exception as exc:
                following = self._failed(ctx, kind, exc)
                if type(following) is Err or type(following) is Ok:
                    return following
                work = following

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
    ) -> Ok[Any] | Err | Parked:
        """Perform tool ``name`` as a sub-call of ``parent`` (``DirectiveContext.call_tool``)."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise UsageError(
                f"call_tool(index=...) takes an int >= 0 (0, 1, ... or 1, 2, ...), got {index!r}"
            )
        used = parent.used_indexes
        if used is None:
            used = parent.used_indexes = set()
        key = (parent.attempt, index)
        if key in used:
            raise UsageError(
                f"call_tool(index={index}) was used already by {parent.directive.id!r} in this "
                "attempt; number the calls 0, 1, ... (or 1, 2, ...) in the order they are issued"
            )
        used.add(key)
        d = parent.directive
        # A later attempt's calls get ids of their own: the first attempt's calls were
        # answered already (each id has exactly one ai.tool.result).
        call_id = f"{d.id}/tool/{index}"
        if parent.attempt > 1:
            call_id += f"/attempt/{parent.attempt}"
        raw: Any = arguments  # from a program a model wrote: anything
        tool: Any = name
        sub = ToolExec(
            id=call_id,
            tool_name=tool if isinstance(tool, str) else str(tool),
            arguments=dict(raw) if isinstance(raw, Mapping) else raw,
            request_id=d.request_id,
            iteration=d.iteration,
            retry_backoff_ms=d.retry_backoff_ms,
        )
        run = parent.run
        ctx = run.open_subcall(parent, sub)
        result: Ok[Any] | Err | Parked | None = ctx.cancel_reason if ctx.done else None
        try:
            if result is None:
                problems = sub.problems()
                if not isinstance(tool, str):
                    problems.append(f"the tool name must be a string, got {type(tool).__name__}")
                if not isinstance(raw, Mapping):
                    problems.append(
                        f"arguments must be a map of named arguments, got {type(raw).__name__}"
                    )
                if problems:
                    result = _invalid(sub, problems)
                elif run.meter is not None and (over := admit_subcall(run, self.executor.clock())):
                    result = over
                else:
                    with new_scope() as scope:
                        ctx.scope = scope
                        result = await self.perform(ctx)
        finally:
            self._report_subcall(ctx, result)
        if isinstance(result, Parked) and not ctx.done:
            return result  # waits for a decision: the work that made the call stops there
        final = ctx.result
        assert final is not None
        return final

    def _report_subcall(self, ctx: DirectiveContext, result: Ok[Any] | Err | Parked | None) -> None:
        run = ctx.run
        now = self.executor.clock()
        if isinstance(result, Parked):  # stays open until its parent parks (or ends)
            tel = self.executor.telemetry
            if ctx.span is not None and tel is not None:
                tel.end_span(ctx.span, None, {"ptcflow.approval.status": "pending"})
            ctx.span = None
            return
        duration = now - ctx.started_at if ctx.started_at else 0.0
        run.finish(ctx, result, now, attempts=ctx.attempt or 1, duration_ms=duration * 1000.0)
        if ctx.span is not None:  # once: answered now, or with its parent already
            ctx.close()

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
