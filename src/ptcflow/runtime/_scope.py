"""A run scope: one run of a strategy, from ``ai.request.started`` to its :class:`Step`.

The scope numbers the run's signals (``seq``), publishes them, and folds each one into the
strategy at once, in order (a re-entrant emit is queued, never nested), submitting the
directives the strategy returns. The strategy is pure and synchronous, so routing needs no
task and no queue hop: a directive's terminal signal reaches ``strategy.handle`` in the
task that produced it.
"""

from __future__ import annotations

import math
from collections import deque
from time import time_ns as _time_ns
from typing import TYPE_CHECKING, Any

import anyio

from ptcflow.directives import Directive
from ptcflow.runtime._context import ZERO_USAGE
from ptcflow.runtime._driver import drive
from ptcflow.runtime._scope_ends import (
    FROZEN_TYPES,
    cancelled,
    crashed,
    is_frozen,
    not_a_directive,
    publish_end,
    sink,
)
from ptcflow.runtime._step import Step
from ptcflow.runtime._toolbox import Toolbox
from ptcflow.signals import (
    INTERNAL,
    REQUEST_STARTED,
    TIMEOUT,
    Err,
    ErrorEnvelope,
    Ok,
    RequestStartedData,
    Signal,
    Usage,
    _signal as _sig,
)
from ptcflow.strategies._protocol import Outcome, RunInfo

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from ptcflow.runtime._context import DirectiveContext
    from ptcflow.runtime._executor import Executor
    from ptcflow.runtime._telemetry import Telemetry

__all__ = ("RunScope",)

_SOURCE = "ptcflow"
_RESULTS = (Ok, Err)  # a tuple: ``Ok | Err`` would build a union on every call
_hex = hex


class RunScope:
    """The live state of one run (internal; users hold a :class:`RunHandle`)."""

    __slots__ = (
        "_draining",
        "_ending",
        "_pending",
        "_publish",
        "agents",
        "cancel_loop",
        "cancelling",
        "clock",
        "closing",
        "deadline",
        "done_event",
        "driver_idle",
        "driver_scope",
        "executor",
        "finished",
        "idle_event",
        "inflight",
        "input",
        "llm",
        "llm_is_resolver",
        "llm_model",
        "name",
        "otel_context",
        "otel_parent",
        "own_deadline",
        "parent_run_id",
        "ready",
        "recorded",
        "request_id",
        "run_id",
        "runtime",
        "seq",
        "span",
        "started",
        "state",
        "step",
        "strategy",
        "telemetry",
        "tool_calls",
        "tools",
        "traceparent",
        "turns",
        "usage",
        "wake",
    )

    def __init__(
        self,
        executor: Executor,
        runtime: Any,
        strategy: Any,
        input: Any,
        *,
        run_id: str,
        request_id: str | None,
        parent_run_id: str | None,
        tools: Toolbox,
        llm: Any,
        llm_is_resolver: bool,
        llm_model: str,
        agents: dict[str, Any],
        bus: Any,
        record: bool,
        deadline: float,
        telemetry: Telemetry | None,
        otel_parent: Any,
        name: str | None = None,
    ) -> None:
        self.executor = executor
        self.runtime = runtime
        self.strategy = strategy
        self.input = input
        self.run_id = run_id
        self.request_id = request_id
        self.parent_run_id = parent_run_id
        self.tools = tools
        self.llm = llm
        self.llm_is_resolver = llm_is_resolver
        self.llm_model = llm_model
        """The provider's own model name (what LLM directives naming none use)."""
        self.agents = agents
        self.deadline = deadline
        self.own_deadline = math.inf
        """The deadline the driver's own scope enforces; the rest of ``deadline`` is
        enforced by enclosing scopes of the task that drives the run (see _driver.py)."""
        self.name = name or str(getattr(strategy, "name", "") or type(strategy).__name__)
        self.recorded: list[Signal] | None = [] if record else None
        self._publish = sink(bus.publish if bus is not None else None, self.recorded)
        """Where each signal goes besides the strategy (bus, record): one call, or None."""
        self.telemetry = telemetry
        self.otel_parent = otel_parent
        self.otel_context: Any = None
        self.span: Span | None = None
        self.traceparent: str | None = None
        self.seq = 0
        self.state: Any = None
        self.inflight: dict[DirectiveContext, None] = {}
        self.cancelling: Err | None = None
        self.cancel_loop = 0
        self.finished = False
        self.closing = False
        """True once the outcome is known: signals are no longer folded in."""
        self._ending: tuple[Any, Usage, str, bool] | None = None
        self.step: Step | None = None
        self.usage = ZERO_USAGE
        self.turns = 0
        self.tool_calls = 0
        self.clock = executor.clock
        self.started = 0.0
        self._pending: deque[Signal] | None = None  # made when first needed (rare)
        self._draining = False
        self.done_event: anyio.Event | None = None
        self.idle_event: anyio.Event | None = None
        self.wake: anyio.Event | None = None
        self.ready: DirectiveContext | None = None
        """The directive the driver performs next, in its own task (no spawn)."""
        self.driver_idle = True
        """True while the driver may take the next directive; else directives spawn."""
        self.driver_scope: Any = None

    def __repr__(self) -> str:
        status = (
            "finished"
            if self.finished
            else "closing"
            if self.closing
            else "cancelling"
            if self.cancelling
            else "running"
        )
        return f"<RunScope {self.run_id!r} {self.name} {status} in_flight={len(self.inflight)}>"

    # -- signals -------------------------------------------------------------------------

    def emit(
        self, type: str, data: Any, ctx: DirectiveContext | None = None, *, route: bool = True
    ) -> Signal:
        """Number, publish and route one signal of this run (``route=False``: do not fold
        it into the strategy; only the run's own first ``ai.request.started`` is not)."""
        self.seq = seq = self.seq + 1
        # stamp(), inlined (two signals per directive make it the hottest call of a run);
        # the id's counter digits via hex() of the value with a 33rd bit set: eight digits,
        # zero-padded, at half the cost of "%08x"; the time is formatted once per ms
        ms = _time_ns() // 1_000_000
        cache = _sig._cache
        if ms != cache[0]:
            cache = _sig._refresh(ms)
        if ctx is not None:
            d = ctx.directive
            sig = Signal(
                type=type,
                source=_SOURCE,
                id=cache[1] + _hex(next(_sig._counter) & 0xFFFF_FFFF | 0x1_0000_0000)[3:],
                time=cache[4],
                data=data,
                run_id=self.run_id,
                request_id=d.request_id,
                call_id=d.id,
                iteration=d.iteration,
                seq=seq,
                parent_run_id=self.parent_run_id,
                causation_id=d.id,
                traceparent=ctx.traceparent,
            )
        else:
            sig = Signal(
                type=type,
                source=_SOURCE,
                id=cache[1] + _hex(next(_sig._counter) & 0xFFFF_FFFF | 0x1_0000_0000)[3:],
                time=cache[4],
                data=data,
                run_id=self.run_id,
                request_id=self.request_id,
                seq=seq,
                parent_run_id=self.parent_run_id,
                traceparent=self.traceparent,
            )
        if self._publish is not None:
            self._publish(sig)
        folded = route and not self.closing  # (a variable: mypy must not narrow closing)
        if not folded:
            return sig
        if self._draining:
            queue = self._pending
            if queue is None:
                queue = self._pending = deque()
            queue.append(sig)  # folded in order once the current fold returns
            return sig
        # Not re-entrant: fold it here (what _drain does, without the call).
        self._draining = True
        strategy = self.strategy
        first = sig
        try:
            while True:
                try:
                    state = self.state
                    self.state, directives = strategy.handle(state, sig)
                    # An immutable state handed back unchanged has the outcome it had
                    # before: none (else the run would be closing). Mutable states
                    # (a strategy that updates its state in place) are always asked.
                    outcome = (
                        None
                        if self.cancelling
                        or (
                            self.state is state
                            and (state.__class__ in FROZEN_TYPES or is_frozen(state))
                        )
                        else strategy.outcome(self.state)
                    )
                except Exception as exc:
                    crashed(
                        self,
                        exc,
                        f"handling signal {sig.type} (seq {sig.seq}, call_id {sig.call_id})",
                    )
                    return first
                if directives:
                    submit = self.executor.submit
                    for d in directives:
                        if not isinstance(d, Directive):
                            not_a_directive(self, d)
                            return first
                        submit(self, d)
                if outcome is not None and not self.closing:
                    self._end(outcome)
                pending = self._pending
                if not pending:
                    return first
                if self.closing:
                    pending.clear()
                    return first
                sig = pending.popleft()
        finally:
            self._draining = False
            if not self.inflight and not self.finished:
                if self.closing:
                    self._emit_end()
                elif self.cancelling is not None:
                    self._end_cancelled()

    def _drain(self, first: Signal | None = None) -> None:
        self._draining = True
        strategy = self.strategy
        submit = self.executor.submit
        sig = first
        try:
            while sig is not None or self._pending:
                pending = self._pending
                if sig is None:
                    assert pending is not None
                    sig = pending.popleft()
                if self.closing:
                    if pending:
                        pending.clear()
                    return
                try:
                    state = self.state
                    self.state, directives = strategy.handle(state, sig)
                    outcome = (
                        None
                        if self.cancelling or (self.state is state and is_frozen(state))
                        else strategy.outcome(self.state)
                    )
                except Exception as exc:
                    crashed(
                        self,
                        exc,
                        f"handling signal {sig.type} (seq {sig.seq}, call_id {sig.call_id})",
                    )
                    return
                sig = None
                for d in directives:
                    if not isinstance(d, Directive):
                        not_a_directive(self, d)
                        return
                    submit(self, d)
                if outcome is not None and not self.closing:
                    self._end(outcome)
        finally:
            self._draining = False
            if not self.inflight and not self.finished:
                if self.closing:
                    self._emit_end()
                elif self.cancelling is not None:
                    self._end_cancelled()

    def snapshot(self) -> Any:
        """Return the strategy's snapshot of the current state (for tool contexts)."""
        return self.strategy.snapshot(self.state)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Publish ``ai.request.started``, initialise the strategy, submit its directives."""
        self.started = self.clock()
        ex = self.executor  # the run counters
        ex.n_runs += 1
        ex.n_runs_active += 1
        tel = self.telemetry
        if tel is not None and tel.tracing:
            self.span = tel.start_span(
                f"invoke_agent {self.name}",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": self.name,
                    "gen_ai.conversation.id": self.run_id,
                },
                self.otel_parent,
            )
            self.otel_context = tel.context_of(self.span, self.otel_parent)
            self.traceparent = tel.traceparent(self.span)
        if self.executor.log_events:
            self.executor.log.debug(
                "run.started",
                run_id=self.run_id,
                agent=self.name,
                parent_run_id=self.parent_run_id,
                request_id=self.request_id,
            )
        self.emit(
            REQUEST_STARTED,
            RequestStartedData(input=self.input, agent=self.name, tools=self.tools.specs),
            route=False,
        )
        info = RunInfo(
            run_id=self.run_id,
            input=self.input,
            request_id=self.request_id,
            parent_run_id=self.parent_run_id,
            tools=self.tools.specs,
        )
        self._draining = True
        try:
            try:
                self.state, directives = self.strategy.init(info)
                outcome = self.strategy.outcome(self.state)
            except Exception as exc:
                crashed(self, exc, "initialising the run (init)")
                return
            for d in directives:
                if not isinstance(d, Directive):
                    not_a_directive(self, d)
                    return
                self.executor.submit(self, d)
            if outcome is not None and not self.closing:
                self._end(outcome)
        finally:
            self._draining = False
        if self._pending and not self.closing:
            self._drain()
        elif not self.inflight and self.closing:
            self._emit_end()

    def _end(self, outcome: Outcome) -> None:
        result: Any = outcome.result
        if not isinstance(result, _RESULTS):
            result = Err(
                error=ErrorEnvelope.make(
                    INTERNAL,
                    f"strategy {self.name!r} returned an outcome whose result is "
                    f"{type(result).__name__}, not Ok or Err",
                )
            )
        self._finish(
            result, outcome.usage if outcome.usage != ZERO_USAGE else self.usage, outcome.reason
        )

    def _finish(
        self, result: Ok[Any] | Err, usage: Usage, reason: str, *, route: bool = True
    ) -> None:
        """Close the run: stop folding, cancel what is in flight, end once all answered.

        The end signal comes after the terminal signal of every directive of the run.
        """
        if self.closing:
            return
        self.closing = True
        self._ending = (result, usage, reason, route)
        if self._pending:
            self._pending.clear()
        if self.inflight:
            leftover = self.cancelling or cancelled(
                f"run {self.run_id} ended before this directive finished"
            )
            for ctx in list(self.inflight):
                ctx.cancel(leftover)
            self._drop_ready(leftover)
        if not self.inflight:
            self._emit_end()

    _emit_end = publish_end
    """Publish the end signal, fold it in, build the Step, wake the waiters."""

    def _drop_ready(self, reason: Err) -> None:
        """Answer the directive the driver has not started (it never will)."""
        ctx = self.ready
        if ctx is not None:
            self.ready = None
            self.executor.finish(ctx, ctx.kind, reason)

    def cancel(self, reason: Err) -> None:
        """Cancel the run: in-flight directives end with ``reason``, then the run fails."""
        if self.closing or self.cancelling is not None:
            return
        self.cancelling = reason
        for ctx in list(self.inflight):
            ctx.cancel(reason)
        self._drop_ready(reason)
        if not self.inflight and not self._draining:
            self._end_cancelled()

    def expire(self) -> Err:
        """The mission deadline passed: cancel the run with a ``timeout`` error."""
        err = self.cancelling or Err(
            error=ErrorEnvelope.make(
                TIMEOUT,
                f"run {self.run_id} ({self.name}) exceeded its time budget",
                {"scope": "mission"},
                retryable=False,
            )
        )
        self.cancel(err)
        return err

    def _end_cancelled(self) -> None:
        reason = self.cancelling
        assert reason is not None
        self._finish(reason, self.usage, reason.error.type)

    def flight_done(self) -> None:
        """Called after each terminal signal: ends a closing run once nothing is in flight."""
        if self.inflight:
            return
        if not self.finished and not self._draining:
            if self.closing:
                self._emit_end()
            elif self.cancelling is not None:
                self._end_cancelled()
        if self.idle_event is not None:
            self.idle_event.set()

    # -- waiting: see _driver.py (drive, wait_done, wait_idle) -----------------------

    @property
    def done(self) -> bool:
        """True once the run has ended."""
        return self.finished

    async def run_child(self, ctx: DirectiveContext, strategy: Any, input: Any) -> Step:
        """Run ``strategy`` as a child of this run, inside directive ``ctx``'s task."""
        child: RunScope = self.runtime._open_child(self, ctx, strategy, input)
        child.start()
        return await drive(child)
