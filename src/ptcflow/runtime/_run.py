"""The local driver's records: a run (:class:`LocalRun`) and a directive
(:class:`DirectiveContext`, the object directive handlers receive).

A :class:`LocalRun` holds the run core (``RunCore``, ``ptcflow.core``) and keeps beside
it what the local anyio driver needs: the run's tools, model, agents, telemetry and cancel
scope. Every event goes to the core through the run (:meth:`LocalRun.report`,
:meth:`LocalRun.emit`, ...), which then carries out the work the event handed out: a
directive to perform goes to the driver's own task when it is idle, else to a task of its
own; a directive to stop has its cancel scope cancelled; an answered one is counted and
its span ended; the end finishes the Step. The driver (``_driver.py``) awaits the work.
A :class:`DirectiveContext` is the core's record of one directive (a ``Flight``) with what
performing it needs: its kind, attempts, deadline, span and cancel scope.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import msgspec

from ptcflow.core import Flight, Parked, PausedRun, RunCore, Step
from ptcflow.directives import Directive, LLMGenerate, ToolExec
from ptcflow.program import ProgramCache
from ptcflow.providers import ModelSource
from ptcflow.runtime._executor import Executor
from ptcflow.runtime._toolbox import Toolbox
from ptcflow.runtime._turn_spans import end_turns, turn_answered, turn_context
from ptcflow.runtime._usage import RunCost, UsageMeter, account, cost_attributes
from ptcflow.signals import CANCELLED, TIMEOUT, Err, Ok, ProgramToolCall, Signal

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ("DirectiveContext", "LocalRun", "ModelChoice", "Performer")


class Performer(Protocol):
    """How a run's directives get performed (``_perform.Performer``; a protocol here so
    that this module does not import the one that imports it)."""

    def spawn(self, ctx: DirectiveContext) -> None:
        """Perform ``ctx`` in a task of the Runtime's task group."""
        ...

    async def perform(self, ctx: DirectiveContext) -> Ok[Any] | Err | Parked | None:
        """Perform ``ctx`` in the current task, under ``ctx.scope``."""
        ...

    async def call_tool(
        self, parent: DirectiveContext, name: str, arguments: Mapping[str, Any], index: int
    ) -> Ok[Any] | Err | Parked:
        """Perform a sub-call of ``parent`` (see :meth:`DirectiveContext.call_tool`)."""
        ...

    async def run_child(self, ctx: DirectiveContext, strategy: Any, input: Any) -> Step:
        """Run ``strategy`` as a child run of ``ctx``'s run, to its Step."""
        ...


class LocalRun:
    """One run on the local driver: the run core it holds, and the driver's state.

    Args:
        core: the run's core (``RunCore``), not started; the run makes its flights
            (:class:`DirectiveContext`) and carries out its work from now on.
        executor: the Runtime's shared resources.
        performer: performs the run's directives.
        tools: the run's tools (the core's ``tool_specs`` are their specs).
        llm: the run's model (``None``: none), normalised once at the edge: the kinds
            only call its ``resolve(model, alias)``.
        agents: the agents ``RunChild`` directives may start.
    """

    __slots__ = (
        "_path",
        "accounts",
        "agents",
        "checking",
        "core",
        "costs",
        "counted",
        "decisions",
        "done",
        "driver_idle",
        "executor",
        "finish_step",
        "guards",
        "handoffs",
        "inherit",
        "llm",
        "meter",
        "on_held",
        "otel_context",
        "own_deadline",
        "pause_key",
        "paused_children",
        "performer",
        "program_records",
        "programs",
        "rate",
        "ready",
        "resumed",
        "scope",
        "show_signals",
        "span",
        "step",
        "tools",
        "turn_spans",
        "wake",
    )

    def __init__(
        self,
        core: RunCore[DirectiveContext],
        *,
        executor: Executor,
        performer: Performer,
        tools: Toolbox,
        llm: ModelSource | None,
        agents: dict[str, Any],
    ) -> None:
        core.make_flight = self._new_flight
        self.core = core
        """The run's bookkeeping: every event goes to it, its work comes back."""
        self.executor = executor
        self.performer = performer
        self.tools = tools
        self.llm = llm
        self.agents = agents
        self.step: Step | None = None
        """The run's Step once it is over (the core's, as ``finish_step`` made it)."""
        self.counted = False
        """True once :meth:`begin` counted the run (and opened its span)."""
        self.span: Span | None = None
        self.otel_context: Any = None
        self.own_deadline = math.inf
        """The deadline the driver's own scope enforces; the rest of ``deadline`` is
        enforced by enclosing scopes of the task that drives the run."""
        self.scope: anyio.CancelScope | None = None
        self.ready: DirectiveContext | None = None
        """The directive the driver performs next, in its own task (no task spawned)."""
        self.driver_idle = True
        """True while the driver may take the next directive; else directives spawn."""
        self.wake: anyio.Event | None = None
        self.done: anyio.Event | None = None
        self.programs: ProgramCache | None = None
        """What the run's programs share from turn to turn (the program kind's)."""
        self.inherit: Any = None
        """What the run hands on to the child runs its tools start (``RunPlan.inherit``)."""
        self.handoffs: tuple[str, ...] = ()
        """The agents that handed the conversation on to reach this run (``RunPlan.handoffs``)."""
        self.finish_step: Callable[[Step], Step] | None = None
        """Turns the run's Step into the one its caller gets (``RunPlan.finish``)."""
        self.resumed: Callable[[PausedRun], None] | None = None
        """Told the paused run ``rt.resume`` rebuilds this run from (``RunPlan.resumed``)."""
        self.guards: Any = None
        """The run's :class:`~ptcflow.runtime.Guardrails` (its tool guards run here)."""
        self.costs: RunCost | None = None
        """The priced cost of the run's own model calls (``Step.cost_usd``), when the
        Runtime prices calls."""
        self.accounts = False
        """Model responses are priced or counted (decided when the run opens: it has
        prices, or a token or cost budget)."""
        self.meter: UsageMeter | None = None
        self.on_held: Callable[[LocalRun], Any] | None = None
        """Started in a task when the run's core holds its end (``hold_end``): decides
        it and releases it (the output guards)."""
        self.checking: Any = None
        """Once the output guards of the run's held end were started: ``True``, then
        the scope that cancels them (when the run ends another way)."""
        self.rate: Any = None
        """The Runtime's :class:`~ptcflow.runtime.RateLimiter` (the model kinds wait for
        it), or ``None``."""
        """The usage budget the run counts against (``usage_limits=``; a child run
        shares its parent's), else ``None``."""
        self.turn_spans: dict[int, list[Any]] | None = None
        """With tracing on, for a strategy whose iterations are turns (``turn_spans``):
        ``{iteration: [span, otel context, directives not answered yet]}``."""
        self._path: tuple[str, ...] | None = None
        self.decisions: dict[str, Any] | None = None
        """A resumed run's decisions on its waiting calls, by call id (``rt.resume``)."""
        self.program_records: dict[str, list[ProgramToolCall]] | None = None
        """A resumed run's open programs' completed tool calls (they re-run from them)."""
        self.paused_children: dict[str, PausedRun] | None = None
        """Paused child runs (agents used as tools) by the call that runs them: kept in
        the run's ``PausedRun`` when it pauses, resumed in place when it resumes
        (``None`` until a child pauses: most runs have none)."""
        self.show_signals = core.recorded is not None
        """``Step.signals`` is kept (``record=True``); a run that may pause records its
        signals all the same (its journal is its paused state)."""
        self.pause_key: bytes | None = None
        """Signs the run's ``PausedRun`` (the Runtime's ``pause_key``)."""

    def __repr__(self) -> str:
        return f"<LocalRun {repr(self.core)[1:-1]}>"

    # -- what the core knows -------------------------------------------------------------------

    @property
    def path(self) -> tuple[str, ...]:
        """The agent names from the top-level run to this one (``PendingCall.agent``):
        the run's own name unless set (a child run's, a Temporal activity's); made when
        asked, as most runs never ask."""
        return self._path or (self.core.name,)

    @path.setter
    def path(self, value: tuple[str, ...]) -> None:
        self._path = value

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.core.run_id

    @property
    def name(self) -> str:
        """The agent name (the strategy's, unless given)."""
        return self.core.name

    @property
    def request_id(self) -> str:
        """The request id of the run's signals."""
        return self.core.request_id

    @property
    def parent_run_id(self) -> str | None:
        """The parent run's id, for a child run."""
        return self.core.parent_run_id

    @property
    def strategy(self) -> Any:
        """The run's strategy."""
        return self.core.strategy

    @property
    def deadline(self) -> float:
        """When the run times out, on the executor's clock (``math.inf``: never)."""
        return self.core.deadline

    @property
    def finished(self) -> bool:
        """True once the run is over (:attr:`step` is set)."""
        return self.step is not None

    def snapshot(self, flight: Flight) -> Any:
        """The strategy's snapshot of the state ``flight`` was accepted in (tool contexts)."""
        return self.core.snapshot(flight)

    # -- events: each goes to the core, then its work is carried out -------------------------

    def begin(self, otel_parent: Any = None) -> None:
        """Count the run, open its span and start it."""
        self.begin_counted(otel_parent)
        self.core.start(self.executor.clock())
        self._carry_out()

    def carry_out(self) -> None:
        """Carry out the work the core handed out (after an event a driver gave the core
        itself, such as ``RunCore.resume``)."""
        self._carry_out()

    def begin_counted(self, otel_parent: Any = None, *, resumes: str | None = None) -> None:
        """Count the run and open its span, without starting it (a resumed run:
        ``resumes`` is the ``traceparent`` of the span of the run it resumes, or ``""``
        when unknown; its span says ``ptcflow.run.resumed`` and links to that one)."""
        ex = self.executor
        ex.counters.runs_started += 1
        ex.counters.runs_active += 1
        self.counted = True
        tel = ex.telemetry
        if tel is not None and tel.tracing:
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.name,
                "gen_ai.conversation.id": self.run_id,
            }
            links = None
            if resumes is not None:
                attrs["ptcflow.run.resumed"] = True
                link = tel.link_to(resumes, {"ptcflow.link": "resumes"})
                links = None if link is None else [link]
            self.span = tel.start_span(f"invoke_agent {self.name}", attrs, otel_parent, links=links)
            self.otel_context = tel.context_of(self.span, otel_parent)
            self.core.traceparent = tel.traceparent(self.span)
            if getattr(self.strategy, "turn_spans", False) is True:
                self.turn_spans = {}
        if ex.log_events:
            ex.log.debug(
                "run.started",
                run_id=self.run_id,
                agent=self.name,
                parent_run_id=self.parent_run_id,
                request_id=self.request_id,
            )

    def start(self, now: float) -> None:
        """Start the run (``ai.request.started``, the strategy's first directives), without
        counting it as a run of its own (:meth:`begin` does)."""
        self.core.start(now)
        self._carry_out()

    def stop(self, reason: Err) -> None:
        """Cancel the run now (its directives end with ``reason``)."""
        self.core.cancel(reason, self.executor.clock())
        self._carry_out()

    def cancel(self, reason: Err, now: float) -> None:
        """Cancel the run at ``now`` (see ``RunCore.cancel``)."""
        self.core.cancel(reason, now)
        self._carry_out()

    def release(self, result: Ok[Any] | Err | None) -> None:
        """End the run its core holds (see ``RunCore.release``)."""
        self.core.release(result, self.executor.clock())
        self._carry_out()

    def expire(self, now: float) -> None:
        """The run's deadline passed (see ``RunCore.expire``)."""
        self.core.expire(now)
        self._carry_out()

    def abandon(self, now: float) -> None:
        """Give up on the directives that ignore their cancellation (see ``RunCore.abandon``)."""
        self.core.abandon(now)
        self._carry_out()

    def report(self, ctx: DirectiveContext, result: Ok[Any] | Err | Parked | None) -> None:
        """The work of ``ctx`` ended with ``result`` (``None``: it was cancelled;
        ``Parked``: it waits for decisions)."""
        now = self.executor.clock()
        if isinstance(result, Parked):
            self.park(ctx, result, now)
            return
        if self.accounts and type(result) is Ok and isinstance(ctx.directive, LLMGenerate):
            result = account(self, ctx, result, now)
        duration = now - ctx.started_at if ctx.started_at else 0.0
        self.core.finish(ctx, result, now, attempts=ctx.attempt or 1, duration_ms=duration * 1000.0)
        self._carry_out()

    def park(self, ctx: DirectiveContext, parked: Parked, now: float) -> None:
        """The work of ``ctx`` waits for decisions (see ``RunCore.park``)."""
        if parked.child is not None:
            self.keep_paused_child(ctx.directive.id, parked.child)
        if ctx.handed:
            ctx.handed = False  # counted as answered here: no terminal will come
            self.executor.counters.in_flight -= 1
        tel = self.executor.telemetry
        if ctx.span is not None and tel is not None:  # the span says it waits, and ends
            calls = ", ".join(p.call_id for p in parked.pending)
            tel.end_span(
                ctx.span,
                None,
                {"ptcflow.approval.status": "pending", "ptcflow.approval.calls": calls},
            )
        ctx.span = None
        self.core.park(ctx, parked.pending, now)
        self._carry_out()

    def keep_paused_child(self, call_id: str, child: PausedRun) -> None:
        """Keep the paused child run of call ``call_id`` (in the run's ``PausedRun``)."""
        if self.paused_children is None:
            self.paused_children = {}
        self.paused_children[call_id] = child

    def finish(
        self,
        ctx: DirectiveContext,
        result: Ok[Any] | Err | None,
        now: float,
        *,
        attempts: int = 1,
        duration_ms: float = 0.0,
    ) -> Ok[Any] | Err | None:
        """The work of ``ctx`` ended (see ``RunCore.finish``); returns the result published."""
        published = self.core.finish(ctx, result, now, attempts=attempts, duration_ms=duration_ms)
        self._carry_out()
        return published

    def emit(self, ctx: DirectiveContext | None, type: str, data: Any) -> Signal | None:
        """Publish an intermediate signal of ``ctx`` (see ``RunCore.emit``)."""
        signal = self.core.emit(ctx, type, data)
        self._carry_out()
        return signal

    def open_subcall(self, parent: DirectiveContext, directive: Directive) -> DirectiveContext:
        """Open a sub-call of ``parent`` (see ``RunCore.open_subcall``)."""
        return self.core.open_subcall(parent, directive)

    # -- the work an event handed out --------------------------------------------------------

    def _new_flight(
        self, directive: Directive, state: Any, parent: DirectiveContext | None
    ) -> DirectiveContext:
        """A directive's context, for the core (a sub-call's inherits its parent's
        deadline and span)."""
        if parent is None:
            turns = self.turn_spans
            return DirectiveContext(
                directive,
                state,
                run=self,
                max_retries=directive.max_retries,
                attempt_ms=self.executor.retry.attempt_timeout_ms,
                deadline=self.core.deadline,
                otel_parent=self.otel_context
                if turns is None or directive.iteration < 1
                else turn_context(
                    self.executor.telemetry,
                    turns,
                    directive.iteration,
                    agent=self.name,
                    run_id=self.run_id,
                    parent=self.otel_context,
                ),
            )
        return subcall_context(directive, state, parent)

    def _carry_out(self) -> None:
        """Carry out the work the last event handed out, in the core's order: perform,
        stop, account for the answered, end."""
        core = self.core
        if core.to_perform is not None:
            starting, core.to_perform = core.to_perform, None
            for ctx in starting:
                self._perform(ctx)
        if core.to_cancel is not None:
            stopping, core.to_cancel = core.to_cancel, None
            for ctx in stopping:
                ctx.interrupt()
        if core.answered is not None:
            answered, core.answered = core.answered, None
            for ctx in answered:
                self._answered(ctx)
        if core.step is not None and self.step is None:
            self._end(core.step)
        elif core.held and self.checking is None and self.on_held is not None:
            self.checking = True  # its output guards decide how it ends
            self.executor.task_group.start_soon(self.on_held, self, name=f"{self.run_id} output")

    def _perform(self, ctx: DirectiveContext) -> None:
        """Give a new directive to the driver when it is idle, else to a task."""
        ctx.handed = True
        meter = self.meter
        if meter is not None:  # UsageMeter.admit, its usual cases in this frame
            cls = type(ctx.directive)
            if cls is LLMGenerate and meter.requests < meter.request_bound:
                meter.requests += 1
            elif cls is ToolExec and meter.tool_calls < meter.tool_call_bound:
                meter.tool_calls += 1
            elif (over := meter.admit(ctx.directive)) is not None:
                self.cancel(over, self.executor.clock())
        counters = self.executor.counters
        counters.started += 1
        counters.in_flight = n = counters.in_flight + 1
        if n > counters.max_in_flight:
            counters.max_in_flight = n
        if self.driver_idle and self.ready is None:
            self.driver_idle = False
            self.ready = ctx
            if self.wake is not None:
                self.wake.set()
        else:
            self.performer.spawn(ctx)

    def _answered(self, ctx: DirectiveContext) -> None:
        """Count the answered directive and end its span (and its turn's, when done)."""
        counters = self.executor.counters
        if ctx.handed:
            counters.in_flight -= 1
            if ctx.span is not None:
                ctx.close()
        else:
            counters.started += 1  # answered without being performed
        if self.turn_spans is not None and ctx.directive.iteration >= 1:
            turn_answered(self.turn_spans, ctx.directive.iteration)
        result = ctx.result
        if isinstance(result, Ok):
            counters.succeeded += 1
        else:
            counters.failed += 1
            kind = result.error.type if result is not None else ""
            if kind == CANCELLED:
                counters.cancelled += 1
            elif kind == TIMEOUT:
                counters.timed_out += 1

    def _end(self, step: Step) -> None:
        """Finish the Step (``finish_step``), end the run's span, count it, wake whoever
        waits for it."""
        ex = self.executor
        if self.finish_step is not None:
            try:
                step = self.finish_step(step)
            except Exception as exc:  # the run is over: report it, keep the Step as is
                if ex.log is not None:
                    ex.log.error("run.finish_crashed", run_id=self.run_id, exc_info=exc)
        if self.checking is not None and self.checking is not True:
            self.checking.cancel()  # ended another way (cancelled) while they ran
        costs = self.costs
        if costs is not None:  # its total (RunCost.total), in this frame
            unpriced = costs.unpriced
            if unpriced:
                step = msgspec.structs.replace(step, cost_usd=None, unpriced_models=unpriced)
            else:  # the core's Step has no unpriced models
                step = msgspec.structs.replace(step, cost_usd=round(costs.usd, 12))
        if step.paused_run is not None:
            paused = step.paused_run
            if self.paused_children:
                paused = msgspec.structs.replace(paused, children=dict(self.paused_children))
            step = msgspec.structs.replace(step, paused_run=paused.signed(self.pause_key))
        if step.signals and not self.show_signals:
            step = msgspec.structs.replace(step, signals=())
        self.step = step
        # Only sub-calls of work that outlived the run can still be opened: their context
        # comes from their parent's, and the core no longer refers back to this run (no
        # reference cycle: the run is freed as soon as nobody holds it, without the
        # garbage collector).
        self.core.make_flight = subcall_context
        if self.counted:  # count the ended run, end its span (and its turns'), log it
            ex.counters.runs_active -= 1
            ex.counters.late_results += self.core.late_results
            tel = ex.telemetry
            if self.turn_spans:
                end_turns(self.turn_spans)
            if tel is not None and self.span is not None:
                usage = step.usage
                attrs: dict[str, Any] = {
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                }
                if costs is not None:
                    cost_attributes(attrs, usage, step.cost_usd, step.unpriced_models)
                if step.paused:  # not an error: the status stays unset
                    attrs["ptcflow.run.paused"] = True
                    attrs["ptcflow.run.pending_calls"] = len(step.pending)
                tel.end_span(
                    self.span,
                    Ok(payload=None) if step.error is None else Err(error=step.error),
                    attrs,
                )
            if ex.log_events:
                ex.log.debug(
                    "run.finished",
                    run_id=self.run_id,
                    agent=self.name,
                    ok=step.ok,
                    reason=step.reason,
                    error_type=None if step.error is None else step.error.type,
                    duration_ms=step.duration_ms,
                    turns=step.turns,
                    tool_calls=step.tool_calls,
                )
        if self.done is not None:
            self.done.set()
        if self.wake is not None:
            self.wake.set()


class ModelChoice(msgspec.Struct, frozen=True, gc=False):
    """The provider and model name a model directive resolved to (the model kinds')."""

    provider: Any
    name: str


class DirectiveContext(Flight):
    """What a directive handler may use while it performs one directive.

    One context exists per directive: it is the run core's record of the directive (a
    :class:`~ptcflow.core.Flight`) with what performing it needs. The runtime
    creates it, runs the handler (once per attempt) and publishes the directive's
    terminal signal itself. Handlers publish intermediate signals through :meth:`emit`
    and call tools through :meth:`call_tool`.

    Attributes:
        directive: the directive being performed.
        attempt: the current attempt, starting at 1.
        max_retries: retries allowed (the directive's, or the tool's own option).
        attempt_ms: the per-attempt timeout (the retry policy's, or the tool's own).
        deadline: when the directive times out, on the event loop's clock
            (``anyio.current_time()``).
        retry_after: set by a handler to the seconds a provider asked to wait before the
            next attempt (HTTP ``Retry-After``); the executor honours it.
        no_retry: set by a handler when retrying would repeat a visible side effect (a
            stream that already published deltas); the executor then stops retrying.
        cancel_reason: why the directive is being cancelled (``None`` while it is not).
        traceparent: the W3C trace context its signals carry (its span's).
        span: the OpenTelemetry span of this directive, when tracing is on.
        snapshot: the strategy's snapshot when the directive was emitted (tool calls).
        data: free for a custom handler (the built-in kinds keep their own state in
            typed fields: ``model`` / ``refused`` for model calls, ``completed`` for
            programs).
    """

    run: LocalRun = cast("LocalRun", None)
    """The run this directive belongs to."""
    handed: bool = False
    """True once handed to the driver to perform (else the core answered it itself)."""
    kind: Any = None
    attempt: int = 0
    max_retries: int = 0
    attempt_ms: int | None = None
    retry_after: float | None = None
    no_retry: bool = False
    deadline: float = math.inf
    span: Span | None = None
    otel_parent: Any = None
    otel_context: Any = None
    snapshot: Any = None
    data: Any = None
    started_at: float = 0.0
    scope: anyio.CancelScope | None = None
    used_indexes: set[tuple[int, int]] | None = None
    """The ``(attempt, index)`` pairs its handler gave ``call_tool``."""
    # The built-in kinds' own state, typed (one record class for every kind: the hot
    # paths read the same attributes of the same class whatever the directive).
    model: ModelChoice | None = None
    """The model kinds': the provider and model name the directive resolved to."""
    refused: Err | None = None
    """The model kinds': why no model could be resolved (its attempt returns this)."""
    reserved: Any = None
    """The model kinds': ``(Reservation, tokens)`` an attempt took from a rate limit."""
    fallback: Any = None
    """The model kinds': ``(FallbackModel, models in order, index, request)`` of a call
    that falls back between models."""
    completed: dict[int, ProgramToolCall] | None = None
    """The program kind's: the program's tool calls its attempts completed, by index."""

    @property
    def run_id(self) -> str:
        """The id of the run this directive belongs to."""
        return self.run.run_id

    @property
    def parent_run_id(self) -> str | None:
        """The parent run's id when this run is a child run."""
        return self.run.parent_run_id

    def emit(self, type: str, data: Any = None) -> Signal | None:
        """Publish an intermediate signal of this directive (never the terminal one).

        The signal carries the directive's correlation (``call_id``, ``causation_id``,
        ``request_id``, ``iteration``), the next ``seq`` of the run and, when tracing is on,
        the directive span's ``traceparent``. It is routed to the strategy at once.

        Returns:
            The signal, or ``None`` when the directive has ended already (a signal never
            follows its directive's terminal signal).
        """
        return self.run.emit(self, type, data)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, index: int
    ) -> Ok[Any] | Err | Parked:
        """Call tool ``name`` from this directive's handler, as a ``ToolExec`` would. Blocks.

        The call goes through the same machinery as a ``ToolExec`` directive: arguments
        validated by the tool's signature, the tool's own ``timeout_ms`` / ``max_retries``
        and the run's retry policy, the tool concurrency limits and the sync-tool thread
        pool, an ``execute_tool`` span nested under this directive's span, and exactly one
        ``ai.tool.started`` then one ``ai.tool.result`` signal, with ``call_id =
        f"{directive.id}/tool/{index}"`` (``.../tool/{index}/attempt/{n}`` from the second
        attempt of the directive on) and ``causation_id = directive.id``. Its
        ``ai.tool.result`` is not this directive's terminal signal. Several calls may run at
        once (start them in a task group).

        Args:
            name: the tool's name (an unknown name gives ``unknown_tool``).
            arguments: the named arguments, a JSON object.
            index: the call's number within this attempt of the directive, an int >= 0:
                0, 1, ... (a program's call indexes) or 1, 2, ..., in the order the calls
                were issued, each number once per attempt.

        Returns:
            ``Ok(payload)`` or ``Err(error)``, as ``ai.tool.result`` carries them (a timeout
            is an ``Err`` of type ``timeout``); a :class:`~ptcflow.core.Parked` when the
            tool waits for a person's decision (``requires_approval``, deferred): return
            it from the handler, and the directive waits too (the run pauses; see
            ``docs/approvals.md``).

        Raises:
            UsageError: ``index`` is not an int >= 0, or was used already in this attempt.
            Cancellation: when this directive is cancelled (the run ended, was cancelled
                or timed out) the call's ``ai.tool.result`` says ``cancelled`` and the
                cancellation propagates; let it.

        Example:
            >>> async def lookup_all(d: Lookup, ctx: DirectiveContext) -> list[Any]:  # doctest: +SKIP
            ...     return [await ctx.call_tool("search", {"q": q}, index=n)
            ...             for n, q in enumerate(d.queries, 1)]
        """
        return await self.run.performer.call_tool(self, name, arguments, index)

    def cancel(self, reason: Err) -> None:
        """Cancel the directive; its terminal signal will carry ``reason``."""
        if self.done or self.cancel_reason is not None:
            return
        self.cancel_reason = reason
        self.interrupt()

    def interrupt(self) -> None:
        """Stop the work of this directive (its cancel scope), now or when it next awaits."""
        if self.scope is not None:
            self.scope.cancel()

    def close(self) -> None:
        """The directive was answered: end its span (the driver calls this once)."""
        kind = self.kind
        tel = self.run.executor.telemetry
        if tel is not None and kind is not None and self.span is not None:
            duration = self.run.executor.clock() - self.started_at
            kind.close_span(self, tel, self.result, duration)


def subcall_context(
    directive: Directive, state: Any, parent: DirectiveContext | None
) -> DirectiveContext:
    """The context of a sub-call of ``parent``: its run, deadline and span parent are its
    parent's."""
    assert parent is not None, "the run is over: only sub-calls can be opened"
    return DirectiveContext(
        directive,
        state,
        parent,
        run=parent.run,
        max_retries=directive.max_retries,
        attempt_ms=parent.run.executor.retry.attempt_timeout_ms,
        deadline=parent.deadline,
        otel_parent=parent.otel_context,
    )
