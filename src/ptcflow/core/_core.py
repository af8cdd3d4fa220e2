"""The run core: one run's bookkeeping, without I/O (sans-I/O, like h11).

:class:`RunCore` folds a run's signals into its strategy and decides everything that does
not need an event loop: signal numbering and correlation, which directives are in flight,
exactly one terminal signal per directive, when the run is stalled, cancelled or past its
deadline, and its :class:`~ptcflow.core.Step`. It never awaits, never reads a clock,
never draws an id of its own and imports no backend: a *driver* performs the directives
and tells the core what happened. The local anyio driver (``ptcflow.runtime.lowlevel``'s
``LocalRun``, which holds a core) is one; a durable workflow is another.

One protocol for every driver, as h11's ``Connection`` holds its ``ConnectionState``: the
driver calls an event method (:meth:`RunCore.start`, :meth:`~RunCore.finish`, ...), then
reads the work that event handed out (:attr:`~RunCore.to_perform`,
:attr:`~RunCore.to_cancel`, :attr:`~RunCore.answered`, and :attr:`~RunCore.step` once the
run is over). The whole protocol (the events in, the work out, what the core guarantees)
is written in ``docs/runtime.md``, "Writing a driver".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import msgspec

from ptcflow.core._flight import Flight, cancelled
from ptcflow.core._frozen import FROZEN as _FROZEN, is_frozen
from ptcflow.core._pause import PAUSE_VERSION, PausedRun, journal_of
from ptcflow.core._protocol import Outcome, RunInfo
from ptcflow.core._run_errors import (
    bad_outcome,
    invalid_directive,
    not_a_directive,
    run_timed_out,
    stalled,
    strategy_crashed,
)
from ptcflow.core._step import (
    Step,
    step_messages,
    step_parts,
)
from ptcflow.core._terminals import TerminalTable, journal_safe
from ptcflow.directives import Directive, EmitRequestError, EmitToolError
from ptcflow.signals import (
    EMBED_RESULT,
    LLM_RESPONSE,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_PAUSED,
    REQUEST_STARTED,
    TOOL_RESULT,
    USAGE,
    Compaction,
    Err,
    Message,
    Ok,
    PendingCall,
    ProgramMemory,
    RequestEndData,
    RequestPausedData,
    RequestStartedData,
    Signal,
    Summary,
    ToolSpec,
    Usage,
    UsageSpent,
    json_safe,
    stamp as default_stamp,
)

__all__ = ("Flight", "RunCore", "cancelled")

F = TypeVar("F", bound=Flight)

_NO_USAGE = Usage()
_FLIGHT: Callable[[Directive, Any, Any], Any] = Flight
"""The default ``make_flight`` (typed once here: no ``typing.cast`` call per core)."""
_RESULTS = (Ok, Err)
_ANSWERED_HERE = (EmitToolError, EmitRequestError)
"""Directives that perform nothing: the core answers them with their own error."""
_REFUSE_LIMIT = 1_000
"""Directives a cancelled run answers at once before it stops answering (a strategy that
keeps asking for work while cancelled would otherwise loop for ever)."""


class RunCore(Generic[F]):
    """The bookkeeping of one run, driven by events (``docs/runtime.md``, "Writing a driver").

    Events in: :meth:`start` (or :meth:`resume`), :meth:`emit`, :meth:`finish`,
    :meth:`cancel`, :meth:`expire`, :meth:`abandon`, :meth:`open_subcall`. Each returns at
    once and leaves the work it made on the core, for the driver to take after the call:
    :attr:`to_perform` (perform each, then :meth:`finish` it), :attr:`to_cancel` (stop each
    one's work), :attr:`answered` (their terminal signal is out: the driver's accounting),
    each a list while there is some, else ``None`` (the driver sets it back to ``None`` as
    it takes it); :attr:`step` is set when the run is over.

    Args:
        strategy: the run's strategy (``init`` / ``handle`` / ``outcome`` / ``snapshot``).
        input: the run's input.
        run_id: the run's id; every signal carries it.
        request_id: the request id of run-level signals (default: ``run_id``).
        parent_run_id: the parent run's id, for a child run.
        tool_specs: the run's tools as data (``RunInfo.tools``, ``ai.request.started``).
        name: the agent name (default: the strategy's ``name``).
        deadline: when the run times out, on the driver's clock (``math.inf``: never).
        publish: called with each signal as it is made (``None``: nowhere).
        record: keep every signal on :attr:`recorded` (and ``Step.signals``).
        stamp: ``() -> (id, time)`` for each signal (default: a UUIDv7 and the wall clock).
        terminals: the terminal signals of each directive class.
        traceparent: the W3C trace context of run-level signals.
        log: a structlog-style logger for strategy crashes (``None``: none).
        make_flight: ``(directive, state, parent) -> flight``: makes the record of each
            accepted directive and sub-call (default: :class:`Flight`; a driver passes
            its own subclass, which carries its per-directive state).
        history: the conversation before this run (``RunInfo.history``), checked.
        memory: what the conversation's earlier programs kept (``RunInfo.memory``).
        compaction: how the strategy shrinks ``history`` (``RunInfo.compaction``).
        summary: an earlier summary of ``history`` (``RunInfo.summary``).
    """

    # fmt: off
    __slots__ = (
        "_ending", "_folding", "_log", "_now", "_outcome", "_publish", "_queue", "_refused",
        "_stamp", "_terminals", "answered", "cancelling", "closing", "compaction", "deadline",
        "flights", "held", "history", "hold_end", "input", "late_results", "make_flight", "memory", "name",
        "parent_run_id", "parked", "recorded", "request_id", "run_id", "seq", "spent",
        "started_at", "state", "step", "strategy", "summary", "to_cancel", "to_perform", "tool_calls",
        "tool_specs", "traceparent", "turns", "usage",
    )
    # fmt: on

    def __init__(
        self,
        strategy: Any,
        input: Any,
        *,
        run_id: str,
        request_id: str | None = None,
        parent_run_id: str | None = None,
        tool_specs: tuple[ToolSpec, ...] = (),
        name: str | None = None,
        deadline: float = math.inf,
        publish: Callable[[Signal], None] | None = None,
        record: bool = False,
        stamp: Callable[[], tuple[str, str]] = default_stamp,
        terminals: TerminalTable | None = None,
        traceparent: str | None = None,
        log: Any = None,
        make_flight: Callable[[Directive, Any, F | None], F] | None = None,
        history: tuple[Message, ...] = (),
        memory: ProgramMemory | None = None,
        compaction: Compaction | None = None,
        summary: Summary | None = None,
    ) -> None:
        self.strategy = strategy
        self.history = history
        self.memory = memory
        self.compaction = compaction
        self.summary = summary
        self.input = input
        self.run_id = run_id
        self.request_id = request_id or run_id
        self.parent_run_id = parent_run_id
        self.tool_specs = tool_specs
        self.name = name or str(getattr(strategy, "name", "") or type(strategy).__name__)
        self.deadline = deadline
        self.traceparent = traceparent
        self.recorded: list[Signal] | None = [] if record else None
        self._publish = publish
        self._stamp = stamp
        self._terminals = terminals or TerminalTable()
        self._log = log
        self.make_flight: Callable[[Directive, Any, F | None], F] = make_flight or _FLIGHT
        """Makes the flights (an attribute: a driver may replace it, say once the run is
        over, when only sub-calls of work that outlived the run can still be opened)."""
        self.state: Any = None
        self.seq = 0
        self.flights: dict[F, None] = {}
        """Accepted directives without their terminal yet, in acceptance order."""
        # The work an event hands out, in order: a list while there is some, else None.
        # After each event the driver takes each list (sets None) and carries it out.
        self.to_perform: list[F] | None = None
        """Accepted directives to perform (then report with :meth:`finish`)."""
        self.to_cancel: list[F] | None = None
        """Flights whose work must stop (their ``cancel_reason`` is set)."""
        self.answered: list[F] | None = None
        """Directives whose terminal signal was published (sub-calls are not listed)."""
        self.cancelling: Err | None = None
        """The reason once the run is cancelled (its directives end with it)."""
        self.closing = False
        """True once the outcome is known: signals are no longer folded in."""
        self.step: Step | None = None
        self.usage = _NO_USAGE
        self.turns = 0
        self.tool_calls = 0
        self.late_results = 0
        """Results reported for flights already answered (dropped)."""
        self.parked: dict[F, tuple[PendingCall, ...]] | None = None
        """Directives that wait for a decision (:meth:`park`), with their pending calls
        (made by the first: most runs park nothing)."""
        self.started_at = 0.0
        self.spent: Callable[[], UsageSpent] | None = None
        """Called when the run pauses: what its whole tree used so far, journaled on its
        ``ai.request.paused`` (set by a driver that meters a top-level run)."""
        self._now = 0.0
        self._ending: tuple[Ok[Any] | Err, Usage, str, bool] | None = None
        self._outcome: tuple[Any, Outcome] | None = None
        """The outcome that closed the run, with the state it was asked of."""
        self._queue: list[Signal] | None = None
        """Signals waiting for the fold in progress (folds never nest)."""
        self._folding = False
        self._refused = 0
        self.hold_end = False
        """Set by a driver before the run starts: a successful run does not end by itself
        but is :attr:`held` once its outcome is known and nothing is in flight, until
        :meth:`release` (its output guards decide the end first)."""
        self.held = False
        """True while a successful outcome waits for :meth:`release` (see ``hold_end``)."""

    def __repr__(self) -> str:
        status = (
            "finished"
            if self.step is not None
            else "closing"
            if self.closing
            else "cancelling"
            if self.cancelling
            else "running"
        )
        return f"<RunCore {self.run_id!r} {self.name} {status} in_flight={len(self.flights)}>"

    # -- events ----------------------------------------------------------------------------

    def start(self, now: float) -> None:
        """Publish ``ai.request.started``, initialise the strategy, accept its directives."""
        self.started_at = self._now = now
        started = RequestStartedData(
            input=json_safe(self.input),
            agent=self.name,
            tools=self.tool_specs,
            history=self.history,
            memory=self.memory,
            compaction=self.compaction,
            summary=self.summary,
        )
        self._signal(REQUEST_STARTED, started, None)  # the strategy starts from RunInfo
        info = RunInfo(
            run_id=self.run_id,
            input=self.input,
            request_id=self.request_id,
            parent_run_id=self.parent_run_id,
            tools=self.tool_specs,
            history=self.history,
            memory=self.memory,
            compaction=self.compaction,
            summary=self.summary,
        )
        self._folding = True
        try:
            try:
                self.state, directives = self.strategy.init(info)
                outcome = self.strategy.outcome(self.state)
            except Exception as exc:
                self._crash(exc, "initialising the run (init)")
            else:
                self._accept(directives, outcome)
        finally:
            self._folding = False
        self._drain()

    def resume(
        self,
        now: float,
        *,
        state: Any,
        directives: Iterable[Directive],
        seq: int,
        usage: Usage,
        turns: int,
        tool_calls: int,
        started_at: float,
    ) -> None:
        """Continue a run from a checkpoint instead of :meth:`start` (a durable driver that
        continues as new): the strategy's state, the directives it had asked for that had
        not started (accepted again, in order), and the counters. Publishes nothing.
        """
        self.started_at = started_at
        self._now = now
        self.state = state
        self.seq = seq
        self.usage = usage
        self.turns = turns
        self.tool_calls = tool_calls
        self._folding = True
        try:
            self._accept(directives, None)
        finally:
            self._folding = False
        self._drain()

    def emit(self, flight: F | None, type: str, data: Any) -> Signal | None:
        """Publish an intermediate signal of ``flight`` (``None``: of the run) and fold it.

        Returns ``None`` (and publishes nothing) once ``flight`` has been answered: a
        signal never follows its directive's terminal.
        """
        if flight is not None and flight.done:
            return None
        signal = self._signal(type, data, flight)
        self._fold(signal)
        return signal

    def finish(
        self,
        flight: F,
        result: Ok[Any] | Err | None,
        now: float,
        *,
        attempts: int = 1,
        duration_ms: float = 0.0,
    ) -> Ok[Any] | Err | None:
        """The work of ``flight`` ended with ``result`` (``None``: it was cancelled).

        Publishes its terminal signal(s) and folds them in. Returns the result published,
        or ``None`` when ``flight`` was answered already (the late result is dropped).
        """
        self._now = now
        if flight.done:
            self.late_results += 1
            return None
        if result is None:
            result = self._reason_of(flight, now)
        elif now >= self.deadline and not self.closing:
            self.expire(now)  # the deadline wins: record this result, start nothing new
        self._answer(flight, result, attempts, duration_ms)
        if not self.flights:
            self._settle()
        return result

    def cancel(self, reason: Err, now: float) -> None:
        """Cancel the run: its in-flight directives end with ``reason``, then the run fails."""
        self._now = now
        if self.held:  # cancelled while its output was being checked: it fails with it
            self.release(reason, now)
            return
        if self.step is not None or self.closing or self.cancelling is not None:
            return
        self.cancelling = reason
        for flight in self.flights:
            self._stop(flight, reason)
        self._settle()

    def expire(self, now: float) -> Err:
        """The run's deadline passed: cancel it with a ``timeout`` error (returned)."""
        if self.cancelling is None:
            self.cancel(run_timed_out(self.run_id, self.name), now)
        return self.cancelling or cancelled(f"run {self.run_id} ended")

    def abandon(self, now: float) -> None:
        """Answer every directive still in flight with the run's reason and end the run.

        The last resort of a driver whose directives ignore cancellation: their late
        results are dropped (and counted in :attr:`late_results`).
        """
        self._now = now
        reason = self.cancelling or cancelled(f"run {self.run_id} was cancelled")
        if self.held:
            self.release(reason, now)
            return
        for flight in list(self.flights):
            self._answer(flight, flight.cancel_reason or reason, 1, 0.0)
        if not self.closing:
            self._close(reason, self.usage, reason.error.type)
        self._settle()

    def park(self, flight: F, pending: tuple[PendingCall, ...], now: float) -> None:
        """The work of ``flight`` waits for decisions on ``pending`` (a tool that requires
        approval, a deferred tool, a program or child run stopped at such a call).

        It gets no terminal signal: the strategy keeps waiting for its result. Its open
        sub-calls are dropped without one (they are performed again on resume). Once
        nothing else is in flight the run ends *paused* (``Step.paused``; ``ai.request.paused``
        is published, not folded). When the run ends otherwise first (its outcome, a
        cancellation), parked directives are answered with the run's reason.
        """
        self._now = now
        if flight.done or flight not in self.flights:
            return
        del self.flights[flight]
        flight.subcalls = None
        if self.closing or self.cancelling is not None:
            reason = self.cancelling or cancelled(
                f"run {self.run_id} ended before {flight.directive.id!r} was decided"
            )
            self._answer(flight, reason, 1, 0.0)
        elif self.parked is None:
            self.parked = {flight: pending}
        else:
            self.parked[flight] = pending
        if not self.flights:
            self._settle()

    def note(self, type: str, data: Any) -> Signal:
        """Publish a run-level signal without folding it into the strategy (the driver's
        ``ai.request.resumed``)."""
        return self._signal(type, data, None)

    def open_subcall(self, parent: F, directive: Directive) -> F:
        """Open a sub-call of ``parent`` (a tool call its work makes); finish it with
        :meth:`finish`. Its signals carry ``call_id = directive.id`` and ``causation_id =
        parent.directive.id``; it is answered (with the parent's reason) before its parent.
        """
        flight = self.make_flight(directive, parent.state, parent)
        flight.cancel_reason = parent.cancel_reason
        if parent.done:  # the parent was answered (abandoned): this call never starts
            flight.done = True
            flight.cancel_reason = parent.cancel_reason or cancelled(
                f"{type(parent.directive).__name__} {parent.directive.id!r} has ended"
            )
            return flight
        if parent.subcalls is None:
            parent.subcalls = {}
        parent.subcalls[flight] = None
        return flight

    # -- queries ---------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once the run has ended (:attr:`step` is set)."""
        return self.step is not None

    def snapshot(self, flight: Flight) -> Any:
        """The strategy's snapshot of the state ``flight`` was accepted in (tool contexts)."""
        return self.strategy.snapshot(flight.state)

    # -- signals and folding -----------------------------------------------------------------

    def _signal(self, type: str, data: Any, flight: Flight | None) -> Signal:
        """Number and stamp a signal of the run (``flight``: of that directive), publish it."""
        self.seq += 1
        id, time = self._stamp()
        if flight is None:
            signal = Signal(
                type=type,
                source="ptcflow",
                id=id,
                time=time,
                data=data,
                run_id=self.run_id,
                request_id=self.request_id,
                seq=self.seq,
                parent_run_id=self.parent_run_id,
                traceparent=self.traceparent,
            )
        else:
            d = flight.directive
            signal = Signal(
                type=type,
                source="ptcflow",
                id=id,
                time=time,
                data=data,
                run_id=self.run_id,
                request_id=d.request_id,
                call_id=d.id,
                iteration=d.iteration,
                seq=self.seq,
                parent_run_id=self.parent_run_id,
                causation_id=d.id if flight.parent is None else flight.parent.directive.id,
                traceparent=flight.traceparent,
                metadata=d.metadata or None,
            )
        if self._publish is not None:
            self._publish(signal)
        if self.recorded is not None:
            self.recorded.append(signal)
        return signal

    def _fold(self, signal: Signal) -> None:
        """Fold ``signal`` into the strategy now, then whatever that queued; or queue it
        behind the fold in progress (folds never nest)."""
        if self.closing:
            return
        if self._folding:
            if self._queue is None:
                self._queue = [signal]
            else:
                self._queue.append(signal)
            return
        self._folding = True
        strategy = self.strategy
        try:
            while True:
                state = self.state
                try:
                    self.state, directives = strategy.handle(state, signal)
                    # An immutable state handed back unchanged has the outcome it had:
                    # none (else the run would be closing). Mutable states are asked.
                    if self.cancelling is not None or (
                        self.state is state and (_FROZEN.get(type(state)) or is_frozen(state))
                    ):
                        outcome = None
                    else:
                        outcome = strategy.outcome(self.state)
                except Exception as exc:
                    where = f"handling signal {signal.type} (seq {signal.seq}, call_id "
                    self._crash(exc, f"{where}{signal.call_id})")
                    break
                if directives or outcome is not None:
                    self._accept(directives, outcome)
                if not self._queue or self.closing:
                    break
                signal = self._queue.pop(0)
            self._queue = None
        finally:
            self._folding = False
        if not self.flights:
            self._settle()

    def _drain(self) -> None:
        """Fold what was queued while folding was held off (``start``)."""
        if self._queue:
            self._fold(self._queue.pop(0))  # the rest follow it, in order
        elif not self.flights:  # else the run goes on: nothing to settle
            self._settle()

    def _accept(self, directives: Iterable[Any], outcome: Outcome | None) -> None:
        """Accept what the strategy returned: its directives, then its outcome."""
        for d in directives:
            if not isinstance(d, Directive):
                self._crash(not_a_directive(d), "returning directives")
                return
            flight = self.make_flight(d, self.state, None)
            problems = d.problems()
            if problems:
                self._answer(flight, invalid_directive(d, problems), 1, 0.0)
            elif self.cancelling is not None:
                self._refused += 1
                if self._refused <= _REFUSE_LIMIT:  # past it: the strategy loops; stop
                    self._answer(flight, self.cancelling, 1, 0.0)
            elif isinstance(d, _ANSWERED_HERE):  # nothing to perform: its own error
                self._answer(flight, journal_safe(Err(error=d.error)), 1, 0.0)
            else:
                self.flights[flight] = None
                if self.to_perform is None:
                    self.to_perform = [flight]
                else:
                    self.to_perform.append(flight)
        if outcome is not None and not self.closing:
            result: Any = outcome.result
            if not isinstance(result, _RESULTS):
                result = bad_outcome(self.name, result)
            usage = outcome.usage if outcome.usage != _NO_USAGE else self.usage
            self._outcome = (self.state, outcome)
            self._close(result, usage, outcome.reason)

    def _answer(self, flight: F, result: Ok[Any] | Err, attempts: int, duration_ms: float) -> None:
        """Publish the terminal signal(s) of ``flight`` (its open sub-calls' first)."""
        if flight.subcalls:
            for sub in list(flight.subcalls):
                self._answer(sub, sub.cancel_reason or flight.cancel_reason or result, 1, 0.0)
        flight.done = True
        flight.result = result
        d = flight.directive
        for kind, data in self._terminals[type(d)](d, result, attempts, duration_ms):
            if kind == LLM_RESPONSE:
                self.turns += 1
            elif kind == USAGE:
                self.usage = data.usage if self.usage is _NO_USAGE else self.usage + data.usage
            elif kind == TOOL_RESULT:
                self.tool_calls += 1
            elif kind == EMBED_RESULT and isinstance(result, Ok):
                usage = result.payload.usage
                self.usage = usage if self.usage is _NO_USAGE else self.usage + usage
            self._fold(self._signal(kind, data, flight))
        # Still listed while its signals were folded in: the run cannot end between them.
        if flight.parent is None:
            self.flights.pop(flight, None)
            if self.answered is None:
                self.answered = [flight]
            else:
                self.answered.append(flight)
        elif flight.parent.subcalls is not None:
            flight.parent.subcalls.pop(flight, None)

    # -- ending --------------------------------------------------------------------------------

    def _stop(self, flight: F, reason: Err) -> None:
        if flight.cancel_reason is None and not flight.done:
            flight.cancel_reason = reason
            if self.to_cancel is None:
                self.to_cancel = [flight]
            else:
                self.to_cancel.append(flight)

    def _close(self, result: Ok[Any] | Err, usage: Usage, reason: str, route: bool = True) -> None:
        """The outcome is known: stop folding, stop what is in flight, end once answered."""
        if self.closing:
            return
        self.closing = True
        self._ending = (result, usage, reason, route)
        self._queue = None
        # Usually the only flight listed is the one whose answer closed the run (it stays
        # listed while its signals are folded): answered already, nothing to stop, so the
        # reason is made only for a flight still running.
        leftover = self.cancelling
        for flight in self.flights:
            if not flight.done and flight.cancel_reason is None:
                if leftover is None:
                    leftover = cancelled(f"run {self.run_id} ended before this directive finished")
                self._stop(flight, leftover)
        if self.parked:  # waiting for a decision nobody needs now: answered with the reason
            parked, self.parked = self.parked, None
            for flight in parked:
                self._answer(
                    flight, leftover or cancelled(f"run {self.run_id} ended undecided"), 1, 0.0
                )

    def _settle(self) -> None:
        """End the run once nothing is in flight (closing, cancelled, or stalled)."""
        if self._folding or self.flights or self.step is not None:
            return
        if not self.closing:
            if self.cancelling is not None:
                self._close(self.cancelling, self.usage, self.cancelling.error.type)
            elif self.parked:
                self._pause()
                return
            else:
                self._close(stalled(self.name, self.state), self.usage, "stalled")
        if self.hold_end and self._ending is not None and type(self._ending[0]) is Ok:
            self.held = True  # the driver checks the output, then releases the end
            return
        self._end()

    @property
    def ending_result(self) -> Ok[Any] | Err:
        """The outcome the run ends with (once it is closing, or :attr:`held`)."""
        assert self._ending is not None
        return self._ending[0]

    def release(self, result: Ok[Any] | Err | None, now: float) -> None:
        """End a :attr:`held` run: with its own outcome (``result`` ``None``), a
        replaced value (an ``Ok``) or a failure (an ``Err``, the run fails with it).
        Signals emitted while it was held (a guard's verdict) come before its end signal
        in the journal. Nothing happens when the run is not held."""
        if not self.held or self._ending is None:
            return
        self.held = self.hold_end = False
        self._now = now
        if result is not None:
            _, usage, reason, route = self._ending
            if isinstance(result, Err):
                reason = str(result.error.type)
            self._ending = (result, usage, reason, route)
        self._end()

    def _pause(self) -> None:
        """Nothing runs and decisions are awaited: end the run paused (no terminal)."""
        assert self.parked is not None
        pending = tuple(p for calls in self.parked.values() for p in calls)
        cls = type(self.strategy)
        strategy = f"{cls.__module__}.{cls.__qualname__}"
        elapsed = round((self._now - self.started_at) * 1000.0, 3)
        spent = None if self.spent is None else self.spent()
        data = RequestPausedData(
            pending=pending, strategy=strategy, elapsed_ms=elapsed, spent=spent
        )
        paused = self._signal(REQUEST_PAUSED, data, None)
        run = PausedRun(
            version=PAUSE_VERSION,
            run_id=self.run_id,
            agent=self.name,
            strategy=strategy,
            tools=tuple(sorted(spec.name for spec in self.tool_specs)),
            elapsed_ms=elapsed,
            paused_at=paused.time,
            journal=journal_of(self.recorded) if self.recorded is not None else b"",
        )
        self.step = Step(
            run_id=self.run_id,
            ok=False,
            usage=self.usage,
            reason="paused",
            turns=self.turns,
            tool_calls=self.tool_calls,
            duration_ms=round((self._now - self.started_at) * 1000.0, 3),
            signals=tuple(self.recorded) if self.recorded is not None else (),
            messages=step_messages(self.strategy, self.state),
            paused=True,
            pending=pending,
            paused_run=run,
        )

    def _crash(self, exc: Exception, where: str) -> None:
        """End the run as failed (``internal``): its strategy raised ``exc`` ``where``."""
        self._log_crash(exc, where)
        failed = strategy_crashed(self.name, exc, where)
        self._close(failed, self.usage, "strategy_error", route=False)

    def _log_crash(self, exc: Exception, where: str) -> None:
        if self._log is not None:
            self._log.error(
                "run.strategy_crashed",
                run_id=self.run_id,
                strategy=self.name,
                where=where,
                exc_info=exc,
            )

    def _reason_of(self, flight: Flight, now: float) -> Err:
        """Why ``flight`` ended without a result (it was cancelled)."""
        found: Flight | None = flight
        while found is not None:
            if found.cancel_reason is not None:
                return found.cancel_reason
            found = found.parent
        if self.cancelling is not None:
            return self.cancelling
        if now >= self.deadline:  # the run's deadline cut it short
            return self.expire(now)
        d = flight.directive
        if flight.parent is not None:  # the work that made the call cancelled it
            return cancelled(f"tool call {d.id!r} was cancelled by the work that made it")
        # A cancellation nobody here asked for: the run was cancelled from outside.
        reason = cancelled(
            f"run {self.run_id} was cancelled from outside while performing "
            f"{type(d).__name__} {d.id!r}"
        )
        self.cancel(reason, now)
        return reason

    def _end(self) -> None:
        """Publish the end signal, fold it into the strategy, build the Step."""
        assert self._ending is not None
        result, usage, reason, route = self._ending
        if isinstance(result, Ok):
            ok, value, error = True, result.payload, None
        else:
            ok, value, error = False, None, result.error
        reason = reason or ("completed" if ok else "failed")
        end = self._signal(
            REQUEST_COMPLETED if ok else REQUEST_FAILED,
            RequestEndData(result=journal_safe(result), usage=usage, reason=reason),
            None,
        )
        if route:
            try:
                self.state, _ = self.strategy.handle(self.state, end)
            except Exception as exc:  # the run is over: report it, keep the Step as is
                self._log_crash(exc, f"handling the end signal {end.type}")
        # The outcome that closed the run is the final state's when the end signal left it
        # as it was (an immutable state handed back unchanged): not built a second time.
        state, known = self.state, self._outcome
        outcome = (
            known[1]
            if known is not None
            and known[0] is state
            and (_FROZEN.get(type(state)) or is_frozen(state))
            else None
        )
        messages, memory, summary, agent, details = step_parts(
            self.strategy, state, self.name, outcome
        )
        step = Step(
            run_id=self.run_id,
            ok=ok,
            value=value,
            error=error,
            usage=usage,
            reason=reason,
            turns=self.turns,
            tool_calls=self.tool_calls,
            duration_ms=round((self._now - self.started_at) * 1000.0, 3),
            signals=tuple(self.recorded) if self.recorded is not None else (),
            messages=messages,
            memory=memory,
            summary=summary,
            agent=agent,
        )
        # A SubAgent's details replace the defaults afterwards: a call with ``**`` would
        # build a dict of every keyword for each Step (~0.6 µs; most strategies add none).
        self.step = msgspec.structs.replace(step, **details) if details else step
