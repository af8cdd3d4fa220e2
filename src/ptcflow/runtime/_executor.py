"""The executor: performs directives under deadlines, retries, limits and cancellation.

Each directive runs in one task of the Runtime's long-lived task group, inside one cancel
scope that carries its deadline (the smaller of the run's remaining budget and the
directive's ``timeout_ms``). Per attempt it calls the kind's handler; retryable failures
are retried with capped exponential backoff and full jitter. Whatever happens -- success,
failure, timeout, cancellation, invalid fields, a crashing handler -- the executor
publishes **exactly one** terminal signal per directive, from a ``finally`` block.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import msgspec
from anyio.abc import TaskGroup

from ptcflow.directives import Directive, LLMGenerate, ToolExec
from ptcflow.runtime._backend import Primitives, backend_clock
from ptcflow.runtime._config import Limits, RetryPolicy, backoff_delay
from ptcflow.runtime._context import DirectiveContext
from ptcflow.runtime._kinds import Kind, builtin_kinds, custom_kind, unknown_kind
from ptcflow.runtime._scope_ends import cancelled
from ptcflow.runtime._telemetry import Telemetry, attach, detach
from ptcflow.signals import CANCELLED, INTERNAL, TIMEOUT, VALIDATION, Err, ErrorEnvelope

if TYPE_CHECKING:
    from ptcflow.runtime._scope import RunScope

__all__ = ("Executor", "ExecutorStatistics")

_CANCEL_LOOP_GUARD = 1_000


class ExecutorStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of an :class:`Executor`'s counters.

    Attributes:
        started: directives accepted (valid or not).
        in_flight: directives accepted and not ended yet (running, or waiting for a limiter).
        max_in_flight: the most directives ever performed at once.
        succeeded: directives whose terminal result was ``Ok``.
        failed: directives whose terminal result was ``Err`` (any type).
        cancelled: failed with type ``cancelled``.
        timed_out: failed with type ``timeout``.
        retries: extra attempts made after retryable failures.
        runs_started: runs started on this executor (child runs included).
        runs_active: runs not finished yet.
    """

    started: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    timed_out: int = 0
    retries: int = 0
    runs_started: int = 0
    runs_active: int = 0


class Executor:
    """Performs directives for the runs of one :class:`~ptcflow.runtime.Runtime`.

    The Runtime builds it; users reach it as ``rt.executor`` (for :meth:`statistics`) and
    extend it through ``Runtime(handlers={Kind: handler})`` (see docs/runtime.md for the
    handler signature).

    Args:
        task_group: the Runtime's long-lived task group; every directive task runs in it.
        retry: the retry policy.
        limits: concurrency limits.
        telemetry: where spans and metrics go (``None``: nowhere).
        handlers: extra directive kinds, ``{DirectiveSubclass: async handler}``.
        rand: the random source of backoff jitter (inject one in tests).
    """

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        retry: RetryPolicy,
        limits: Limits,
        telemetry: Telemetry | None = None,
        handlers: dict[type[Directive], Callable[..., Any]] | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._tg = task_group
        self.clock = backend_clock()
        self.prim = Primitives()
        self.retry = retry
        self._attempt_ms = retry.attempt_timeout_ms
        self.limits = limits
        self.telemetry = telemetry if telemetry is not None and telemetry.active else None
        self.log_events = telemetry is not None and telemetry.log_events
        self.log: Any = telemetry.log if telemetry is not None else None
        self._rand = rand
        self._kinds: dict[type[Any], Kind] = builtin_kinds()
        for cls, fn in (handlers or {}).items():
            self._kinds[cls] = custom_kind(cls, fn)
        self._global = (
            anyio.CapacityLimiter(limits.max_directives) if limits.max_directives else None
        )
        self._lean = self._global is None
        """No global limiter: the driver's fast lane is open (see _driver.drive)."""
        self.thread_limiter = anyio.CapacityLimiter(limits.sync_tool_threads)
        self.provider_limited = bool(limits.per_provider or limits.provider_limits)
        """False when no provider has a concurrency limit (no limiter lookup per call)."""
        self.tool_limited = bool(limits.per_tool or limits.tool_limits)
        """False when no tool has a concurrency limit."""
        self._provider_limiters: dict[str, anyio.CapacityLimiter | None] = {}
        self._tool_limiters: dict[str, anyio.CapacityLimiter | None] = {}
        # The counters (run scopes count runs here); ``started`` is derived.
        self.n_in_flight = 0
        self.n_max_in_flight = 0
        self.n_succeeded = 0
        self.n_failed = 0
        self.n_cancelled = 0
        self.n_timed_out = 0
        self.n_retries = 0
        self.n_runs = 0
        self.n_runs_active = 0
        self.n_dropped = 0
        """Directives the cancel-loop guard dropped without a terminal (see submit)."""

    def statistics(self) -> ExecutorStatistics:
        """Return a frozen snapshot of the counters (see :class:`ExecutorStatistics`)."""
        return ExecutorStatistics(
            started=self.n_succeeded + self.n_failed + self.n_in_flight + self.n_dropped,
            in_flight=self.n_in_flight,
            max_in_flight=self.n_max_in_flight,
            succeeded=self.n_succeeded,
            failed=self.n_failed,
            cancelled=self.n_cancelled,
            timed_out=self.n_timed_out,
            retries=self.n_retries,
            runs_started=self.n_runs,
            runs_active=self.n_runs_active,
        )

    # -- limiters ------------------------------------------------------------------------

    def provider_limiter(self, name: str) -> anyio.CapacityLimiter | None:
        """Return the limiter of provider ``name`` (``None`` when unlimited)."""
        try:
            return self._provider_limiters[name]
        except KeyError:
            n = self.limits.limit_for_provider(name)
            lim = self._provider_limiters[name] = anyio.CapacityLimiter(n) if n else None
            return lim

    def tool_limiter(self, name: str) -> anyio.CapacityLimiter | None:
        """Return the limiter of tool ``name`` (``None`` when unlimited)."""
        try:
            return self._tool_limiters[name]
        except KeyError:
            n = self.limits.limit_for_tool(name)
            lim = self._tool_limiters[name] = anyio.CapacityLimiter(n) if n else None
            return lim

    # -- submission ----------------------------------------------------------------------

    def kind_of(self, directive: Directive) -> Kind:
        """Return the handler registration for ``directive`` (by class, then base classes)."""
        cls = type(directive)
        kind = self._kinds.get(cls)
        if kind is None:
            for base in cls.__mro__[1:]:
                if base is Directive:
                    break
                if base in self._kinds:
                    kind = self._kinds[base]
                    break
            if kind is None:
                kind = unknown_kind(cls)
            self._kinds[cls] = kind
        return kind

    def submit(self, run: RunScope, directive: Directive) -> None:
        """Accept one directive of ``run``; never blocks, never raises.

        Invalid directives, unknown kinds and directives submitted while the run is
        being cancelled get their terminal signal at once; others start a task.
        """
        cls = type(directive)
        kind = self._kinds.get(cls) or self.kind_of(directive)
        ctx = DirectiveContext(run, directive, kind)
        valid = _VALID.get(cls)
        problems = None if valid is not None and valid(directive) else directive.problems()
        if problems:
            text = "; ".join(problems)
            err = ErrorEnvelope.make(
                VALIDATION,
                f"invalid {type(directive).__name__} directive {directive.id!r}: {text}",
                {"problems": problems, "kind": type(directive).__name__},
            )
            self.finish(ctx, kind, Err(error=err))
            return
        if run.cancelling is not None:
            run.cancel_loop += 1
            if run.cancel_loop > _CANCEL_LOOP_GUARD:
                self.n_dropped += 1
                return  # the strategy keeps asking for work while cancelled; stop looping
            self.finish(ctx, kind, run.cancelling)
            return
        if kind.inline is not None:
            self.finish(ctx, kind, kind.inline(ctx))
            return
        if self._attempt_ms is not None:
            ctx.attempt_ms = self._attempt_ms
        if kind.prepare_sync is not None:
            kind.prepare_sync(ctx)
        run.inflight[ctx] = None
        n = self.n_in_flight = self.n_in_flight + 1
        if n > self.n_max_in_flight:
            self.n_max_in_flight = n
        tm = directive.timeout_ms
        if tm is not None:
            ctx.deadline = min(ctx.deadline, self.clock() + tm / 1000.0)
        if run.driver_idle:  # the run's driver task performs it (no task spawned)
            run.driver_idle = False
            run.ready = ctx
            if run.wake is not None:
                run.wake.set()
        else:
            self._tg.start_soon(self.perform, ctx, name=directive.id)

    # -- performing ----------------------------------------------------------------------

    async def perform(self, ctx: DirectiveContext, *, driver: bool = False) -> None:
        """Perform one accepted directive to its terminal signal (in the current task),
        in a cancel scope of its own (the driver's fast lane is in ``drive``).

        ``driver`` says the run's driver task performs it: the driver is then handed the
        next directive the strategy emits on this terminal, so a sequential run never
        spawns a task.
        """
        kind = ctx.kind
        result: Any = None
        try:
            scope = ctx._scope = self.prim.cancel_scope(deadline=ctx.deadline)
            with scope:
                if ctx.cancel_reason is not None:
                    ctx._scope.cancel()
                    await anyio.lowlevel.checkpoint()
                ctx.started_at = self.clock()
                tel = self.telemetry
                if tel is not None:
                    kind.open_span(ctx, tel)
                    ctx.otel_token = attach(ctx.otel_context)
                result = kind.prepare(ctx) if kind.prepare is not None else None
                if result is None:
                    if self._global is None and ctx.attempt_ms is None:
                        # The common case, inline: one attempt, no limiter, no attempt
                        # timeout; only a failure goes on to the retry loop.
                        ctx.attempt = 1
                        result = await kind.perform(ctx)
                        if isinstance(result, Err):
                            result = await self._attempts(ctx, kind, result)
                    else:
                        result = await self._attempts(ctx, kind)
            if result is None and scope.cancelled_caught:
                result = ctx.cancel_reason or self._timeout(ctx)
        except Exception as exc:
            result = Err(error=self._crash(ctx, kind, exc))
        finally:
            self.performed(ctx, kind, result, driver)

    def performed(self, ctx: DirectiveContext, kind: Kind, result: Any, driver: bool) -> None:
        """End ``ctx`` after its attempts with ``result`` (``None``: cancelled from outside
        its scope): detach its span, settle cancellation, publish its terminal."""
        if ctx.otel_token is not None:
            detach(ctx.otel_token)
        ctx._scope = None
        run = ctx.run
        if result is None:
            # Cancelled from outside this directive's scope (the awaiting task, a parent
            # run, the Runtime, the run's deadline): the whole run ends, so say so before
            # this terminal is routed (the strategy's reaction to it must not end the run
            # as a success).
            result = ctx.cancel_reason or run.cancelling
            if result is None:
                if self.clock() >= run.deadline:
                    result = run.expire()
                else:
                    result = cancelled(
                        f"run {run.run_id} was cancelled from outside while performing "
                        f"{type(ctx.directive).__name__} {ctx.directive.id!r}"
                    )
                    run.cancel(result)
        elif ctx.cancel_reason is not None:
            # Cancelled, but the work ended before the cancellation reached it (it sat in
            # a shielded section, a worker thread): the call was cancelled all the same,
            # and every cancelled call reports so.
            result = ctx.cancel_reason
        if driver and not run.cancelling:
            run.driver_idle = True
        self.finish(ctx, kind, result)

    async def _attempts(self, ctx: DirectiveContext, kind: Kind, result: Any = None) -> Any:
        """Perform attempts until one succeeds or retrying is not allowed; ``result``: the
        outcome of an attempt already made (``perform``'s inline first attempt)."""
        d = ctx.directive
        allowed = min(ctx.max_retries, self.retry.max_retries_cap) if kind.retries else 0
        at = ctx.attempt_ms
        while True:
            if result is None:
                ctx.attempt += 1
                ctx.retry_after = None
                if self._global is not None:
                    async with self._global:
                        result = await self._attempt(ctx, kind, at)
                elif at is None:
                    result = await kind.perform(ctx)
                else:
                    result = await self._attempt(ctx, kind, at)
            if result.ok or not result.error.retryable or ctx.attempt > allowed or ctx.no_retry:
                return result
            delay = backoff_delay(
                ctx.attempt,
                d.retry_backoff_ms,
                self.retry,
                retry_after_s=ctx.retry_after,
                rand=self._rand,
            )
            if self.clock() + delay >= ctx.deadline:
                return result  # waiting would pass the deadline: report the last failure
            self.n_retries += 1
            if self.log_events:
                self.log.debug(
                    "directive.retry",
                    run_id=ctx.run_id,
                    call_id=d.id,
                    attempt=ctx.attempt,
                    error_type=result.error.type,
                    delay_s=round(delay, 4),
                )
            await anyio.sleep(delay)
            result = None

    async def _attempt(self, ctx: DirectiveContext, kind: Kind, attempt_ms: int | None) -> Any:
        if attempt_ms is None:
            return await kind.perform(ctx)
        limit = self.clock() + attempt_ms / 1000.0
        if limit >= ctx.deadline:
            return await kind.perform(ctx)
        with self.prim.cancel_scope(deadline=limit) as scope:
            return await kind.perform(ctx)
        if scope.cancelled_caught and ctx.cancel_reason is None:
            return Err(
                error=ErrorEnvelope.make(
                    TIMEOUT,
                    f"attempt {ctx.attempt} of {ctx.directive.id!r} exceeded its "
                    f"{attempt_ms} ms attempt timeout",
                    {"timeout_ms": attempt_ms, "scope": "attempt", "attempt": ctx.attempt},
                )
            )
        raise AssertionError(
            "unreachable: attempt scope exited without a result"
        )  # pragma: no cover

    def _timeout(self, ctx: DirectiveContext) -> Err:
        d = ctx.directive
        if d.timeout_ms is None or ctx.deadline >= ctx.run.deadline:
            # The run's own deadline passed: the whole run times out, not just this call.
            ctx._scope = None
            return ctx.run.expire()
        return Err(
            error=ErrorEnvelope.make(
                TIMEOUT,
                f"{type(d).__name__} {d.id!r} exceeded its {d.timeout_ms} ms deadline "
                f"after {ctx.attempt} attempt(s)",
                {"timeout_ms": d.timeout_ms, "scope": "directive", "attempts": ctx.attempt},
            )
        )

    def _crash(self, ctx: DirectiveContext, kind: Kind, exc: Exception) -> ErrorEnvelope:
        d = ctx.directive
        if self.log is not None:
            self.log.error(
                "directive.handler_crashed",
                run_id=ctx.run_id,
                call_id=d.id,
                kind=type(d).__name__,
                exc_info=exc,
            )
        return ErrorEnvelope.make(
            INTERNAL,
            f"the {kind.label} handler crashed while performing {type(d).__name__} "
            f"{d.id!r}: {type(exc).__name__}: {exc}",
            {"exception": type(exc).__name__, "kind": type(d).__name__},
            retryable=False,
        )

    def finish(self, ctx: DirectiveContext, kind: Kind, result: Any) -> None:
        """Publish the terminal signal of ``ctx`` exactly once (later calls do nothing)."""
        if ctx.done:
            return
        ctx.done = True
        run = ctx.run
        if run.inflight.pop(ctx, False) is None:
            self.n_in_flight -= 1
        if not isinstance(result, Err):
            self.n_succeeded += 1
        else:
            self.n_failed += 1
            t = result.error.type
            if t == CANCELLED:
                self.n_cancelled += 1
            elif t == TIMEOUT:
                self.n_timed_out += 1
        tel = self.telemetry
        if tel is not None and ctx.started_at:
            kind.close_span(ctx, tel, result, self.clock() - ctx.started_at)
        try:
            kind.terminal(ctx, result)
        finally:
            if not run.inflight and (
                run.closing or run.cancelling is not None or run.idle_event is not None
            ):
                run.flight_done()  # only then has it something to do


_VALID: dict[type[Any], Callable[[Any], bool]] = {
    LLMGenerate: lambda d: bool(
        d.id
        and d.messages
        and (d.timeout_ms is None or d.timeout_ms > 0)
        and d.max_retries >= 0
        and d.retry_backoff_ms >= 0
        and not (d.model and d.model_alias)
    ),
    ToolExec: lambda d: bool(
        d.id
        and d.tool_name
        and (d.timeout_ms is None or d.timeout_ms > 0)
        and d.max_retries >= 0
        and d.retry_backoff_ms >= 0
    ),
}
"""Quick checks of the built-in directives' fields, by exact class (a subclass may add
``problems()`` of its own): True means ``problems()`` would find nothing."""
