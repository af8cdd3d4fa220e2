"""The local driver's records: a run (:class:`LocalRun`) and a directive
(:class:`DirectiveContext`, the object directive handlers receive).

Both extend the run core's own records (``RunCore`` and ``Flight``, in ``_core.py``) with
what the local anyio driver needs: the run's tools, model, agents, telemetry and cancel
scope; the directive's kind, attempts, deadline, span and cancel scope. The core calls
the run's hooks as it decides (:meth:`LocalRun.on_perform` hands a directive to the
driver's task or to a task of its own, :meth:`LocalRun.on_interrupt` cancels its scope,
...); the driver (``_driver.py``) awaits the work.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import msgspec

from ptcflow.core._core import RunCore
from ptcflow.core._flight import Flight
from ptcflow.core._step import Step
from ptcflow.core._terminals import TerminalTable
from ptcflow.directives import Directive, ProgramCache
from ptcflow.providers import ModelSource
from ptcflow.runtime._executor import Executor
from ptcflow.runtime._toolbox import Toolbox
from ptcflow.runtime._turn_spans import end_turns, turn_answered, turn_context
from ptcflow.runtime._usage import RunCost, UsageMeter, account, admit, cost_attributes
from ptcflow.signals import CANCELLED, TIMEOUT, Err, Ok, Signal

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ("DirectiveContext", "LocalRun", "Performer")


class Performer(Protocol):
    """How a run's directives get performed (``_perform.Performer``; a protocol here so
    that this module does not import the one that imports it)."""

    def spawn(self, ctx: DirectiveContext) -> None:
        """Perform ``ctx`` in a task of the Runtime's task group."""
        ...

    async def perform(self, ctx: DirectiveContext) -> Ok[Any] | Err | None:
        """Perform ``ctx`` in the current task, under ``ctx.scope``."""
        ...

    async def call_tool(
        self, parent: DirectiveContext, name: str, arguments: Mapping[str, Any], index: int
    ) -> Ok[Any] | Err:
        """Perform a sub-call of ``parent`` (see :meth:`DirectiveContext.call_tool`)."""
        ...

    async def run_child(self, ctx: DirectiveContext, strategy: Any, input: Any) -> Step:
        """Run ``strategy`` as a child run of ``ctx``'s run, to its Step."""
        ...


class LocalRun(RunCore["DirectiveContext"]):
    """One run on the local driver: the run core plus the driver's state.

    Args:
        strategy / input / run_id / ...: the run core's arguments (see ``RunCore``).
        executor: the Runtime's shared resources.
        performer: performs the run's directives.
        tools: the run's tools.
        llm: the run's model (``None``: none), normalised once at the edge: the kinds
            only call its ``resolve(model, alias)``.
        agents: the agents ``RunChild`` directives may start.
    """

    __slots__ = (
        "agents",
        "costs",
        "done",
        "driver_idle",
        "executor",
        "finish_step",
        "guards",
        "inherit",
        "llm",
        "meter",
        "otel_context",
        "own_deadline",
        "performer",
        "programs",
        "ready",
        "scope",
        "span",
        "tools",
        "turn_spans",
        "wake",
    )

    def __init__(
        self,
        strategy: Any,
        input: Any,
        *,
        executor: Executor,
        performer: Performer,
        tools: Toolbox,
        llm: ModelSource | None,
        agents: dict[str, Any],
        run_id: str,
        request_id: str | None = None,
        parent_run_id: str | None = None,
        name: str | None = None,
        deadline: float = math.inf,
        publish: Callable[[Signal], None] | None = None,
        record: bool = False,
        terminals: TerminalTable | None = None,
    ) -> None:
        super().__init__(
            strategy,
            input,
            run_id=run_id,
            request_id=request_id,
            parent_run_id=parent_run_id,
            tool_specs=tools.specs,
            name=name,
            deadline=deadline,
            publish=publish,
            record=record,
            terminals=terminals,
            log=executor.log,
        )
        self.executor = executor
        self.performer = performer
        self.tools = tools
        self.llm = llm
        self.agents = agents
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
        self.finish_step: Callable[[Step], Step] | None = None
        """Turns the run's Step into the one its caller gets (``RunPlan.finish``)."""
        self.guards: Any = None
        """The run's :class:`~ptcflow.runtime.Guardrails` (its tool guards run here)."""
        self.costs: RunCost | None = None
        """The priced cost of the run's own model calls (``Step.cost_usd``), when the
        Runtime prices calls."""
        self.meter: UsageMeter | None = None
        """The usage budget the run counts against (``usage_limits=``; a child run
        shares its parent's), else ``None``."""
        self.turn_spans: dict[int, list[Any]] | None = None
        """With tracing on, for a strategy whose iterations are turns (``turn_spans``):
        ``{iteration: [span, otel context, directives not answered yet]}``."""

    def __repr__(self) -> str:
        return f"<LocalRun {super().__repr__()[1:-1]}>"

    # -- events from the driver ----------------------------------------------------------------

    def begin(self, otel_parent: Any = None) -> None:
        """Open the run's span and start it."""
        ex = self.executor
        ex.counters.runs_started += 1
        ex.counters.runs_active += 1
        tel = ex.telemetry
        if tel is not None and tel.tracing:
            self.span = tel.start_span(
                f"invoke_agent {self.name}",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": self.name,
                    "gen_ai.conversation.id": self.run_id,
                },
                otel_parent,
            )
            self.otel_context = tel.context_of(self.span, otel_parent)
            self.traceparent = tel.traceparent(self.span)
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
        self.start(ex.clock())

    def stop(self, reason: Err) -> None:
        """Cancel the run now (its directives end with ``reason``)."""
        self.cancel(reason, self.executor.clock())

    def report(self, ctx: DirectiveContext, result: Ok[Any] | Err | None) -> None:
        """The work of ``ctx`` ended with ``result`` (``None``: it was cancelled)."""
        now = self.executor.clock()
        if type(result) is Ok and (self.costs is not None or self.meter is not None):
            result = account(self, ctx, result, now)
        duration = now - ctx.started_at if ctx.started_at else 0.0
        self.finish(ctx, result, now, attempts=ctx.attempt or 1, duration_ms=duration * 1000.0)

    # -- the core's hooks -----------------------------------------------------------------------

    def new_flight(self, directive: Directive, parent: DirectiveContext | None) -> DirectiveContext:
        """A directive's context (a sub-call's inherits its parent's deadline and span)."""
        if parent is None:
            turns = self.turn_spans
            return DirectiveContext(
                directive,
                self.state,
                run=self,
                max_retries=directive.max_retries,
                attempt_ms=self.executor.retry.attempt_timeout_ms,
                deadline=self.deadline,
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
        return DirectiveContext(
            directive,
            parent.state,
            parent,
            run=self,
            max_retries=directive.max_retries,
            attempt_ms=self.executor.retry.attempt_timeout_ms,
            deadline=parent.deadline,
            otel_parent=parent.otel_context,
        )

    def on_perform(self, ctx: DirectiveContext) -> None:
        """Give a new directive to the driver when it is idle, else to a task."""
        ctx.handed = True
        if self.meter is not None:
            admit(self, ctx, self.executor.clock())
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

    def on_interrupt(self, ctx: DirectiveContext) -> None:
        """Stop the work of ``ctx`` (its cancel scope: now, or when it next awaits)."""
        ctx.interrupt()

    def on_answered(self, ctx: DirectiveContext) -> None:
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

    def on_end(self, step: Step) -> None:
        """Finish the Step (``finish``), end the run's span, count it, wake whoever waits
        for it."""
        ex = self.executor
        if self.finish_step is not None:
            try:
                self.step = step = self.finish_step(step)
            except Exception as exc:  # the run is over: report it, keep the Step as is
                if ex.log is not None:
                    ex.log.error("run.finish_crashed", run_id=self.run_id, exc_info=exc)
        costs = self.costs
        if costs is not None:
            self.step = step = msgspec.structs.replace(
                step, cost_usd=costs.total, unpriced_models=tuple(costs.unpriced)
            )
        ex.counters.runs_active -= 1
        ex.counters.late_results += self.late_results
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


class DirectiveContext(Flight):
    """What a directive handler may use while it performs one directive.

    One context exists per directive: it is the run core's record of the directive (a
    :class:`~ptcflow.core._core.Flight`) with what performing it needs. The runtime
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
        data: private data of the directive's handler (free for custom handlers).
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
    ) -> Ok[Any] | Err:
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
            is an ``Err`` of type ``timeout``).

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
