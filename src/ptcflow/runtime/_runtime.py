"""The :class:`Runtime`: owns the task group, runs strategies, returns :class:`Step`s."""

from __future__ import annotations

import enum
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from ptcflow.core import Decision, PausedRun, RunCore, Step, TerminalTable, cancelled
from ptcflow.directives import Directive
from ptcflow.errors import UsageError
from ptcflow.providers import ModelPrice, ModelSource, PriceTable
from ptcflow.runtime._config import UNSET, Limits, RetryPolicy, Unset
from ptcflow.runtime._driver import drive, wait_done
from ptcflow.runtime._executor import Executor, ExecutorStatistics
from ptcflow.runtime._guards import Guardrails, guarded_drive
from ptcflow.runtime._options import RunOptions
from ptcflow.runtime._perform import Performer
from ptcflow.runtime._plan import RunPlan, check_model, plan_of, typed_finish
from ptcflow.runtime._rate import RateLimit, RateLimiter
from ptcflow.runtime._resume import resume_child, resume_run
from ptcflow.runtime._run import DirectiveContext, LocalRun
from ptcflow.runtime._session_turn import session_turn
from ptcflow.runtime._stream import EventStream
from ptcflow.runtime._telemetry import Telemetry, current_context
from ptcflow.runtime._toolbox import Toolbox
from ptcflow.runtime._usage import NO_LIMITS, RunCost, UsageLimits, UsageMeter
from ptcflow.sessions import Compaction, Session, Summary
from ptcflow.signals import ProgramMemory, SignalBus, new_id

__all__ = ("RunHandle", "Runtime")


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSED = "closed"


class RunHandle:
    """A run started with :meth:`Runtime.start`: wait for it, or cancel it.

    Example:
        >>> # handle = rt.start(strategy, "hi"); handle.cancel(); step = await handle.wait()
    """

    __slots__ = ("_run",)

    def __init__(self, run: LocalRun) -> None:
        self._run = run

    def __repr__(self) -> str:
        return f"<RunHandle {self.run_id!r} {'done' if self.done else 'running'}>"

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._run.run_id

    @property
    def done(self) -> bool:
        """True once the run has ended (its Step is available)."""
        return self._run.finished

    @property
    def step(self) -> Step | None:
        """The run's Step once it has ended, else ``None``."""
        return self._run.step

    def cancel(self, message: str = "") -> None:
        """Cancel the run (does not block; a no-op once it has ended).

        In-flight LLM calls, tools and child runs are cancelled; each pending tool call
        still gets an ``ai.tool.result`` of type ``cancelled``; the Step fails with type
        ``cancelled``.
        """
        text = message or f"run {self.run_id} was cancelled by its handle"
        self._run.stop(cancelled(text))

    async def wait(self) -> Step:
        """Block until the run has ended and its directives have exited; return its Step."""
        return await wait_done(self._run)


class Runtime:
    """Runs agent strategies: an async context manager owning one long-lived task group.

    Args:
        llm: the model backend, an :class:`~ptcflow.runtime.LLMProvider` or a
            :class:`~ptcflow.runtime.ModelResolver` (a model registry).
        tools: the default tools of every run (anything :func:`ptcflow.tools.for_agent`
            accepts; a mapping of name to function works too).
        retry: the :class:`RetryPolicy` (default ``RetryPolicy()``).
        limits: the :class:`Limits` (default ``Limits()``: no concurrency caps).
        telemetry: a :class:`Telemetry` (default: the global OpenTelemetry providers, which
            cost nothing unless an SDK is configured). ``None`` turns telemetry off.
        bus: a :class:`~ptcflow.signals.SignalBus` (or anything with a sync
            ``publish(signal)``) that receives every signal of every run.
        handlers: handlers for extra directive kinds, ``{MyDirective: handler}``.
        agents: agents child runs may start by name (``RunChild``), ``{name: strategy}``.
        rand: the random source of backoff jitter (``random.random``; fix it in tests).
        usage_limits: the :class:`~ptcflow.UsageLimits` of every run that gives none
            (each run, with its children, counts against its own copy).
        prices: what model calls cost: a :class:`~ptcflow.providers.PriceTable`, or
            ``{model: ModelPrice(...)}`` on top of genai-prices' table (the ``prices``
            extra). A model with no price has an unknown cost. Default: runs are not
            priced (``Step.cost_usd`` is ``None``, nothing is looked up per response),
            except a run with a ``max_cost_usd`` budget, priced with genai-prices' table.
        rate_limits: ``{provider or "provider:model": RateLimit(...)}``: requests and
            tokens per minute, shared by every run on this Runtime.
        guardrails: the :class:`~ptcflow.runtime.Guardrails` of every run that gives none.
        pause_key: a secret (16 bytes or more) that signs paused runs (HMAC-SHA256), so
            a paused Step kept by a client cannot be forged; give every process that
            resumes the same key (see :meth:`resume`).

    Raises:
        UsageError: when used outside ``async with``, re-entered or used after closing.

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     async with Runtime(llm=my_llm, tools=[add]) as rt:
        ...         step = await rt.run(ReAct(), "What is 2 + 3?")
        ...     return step.unwrap()
    """

    def __init__(
        self,
        *,
        llm: Any = None,
        tools: Any = None,
        retry: RetryPolicy | Unset = UNSET,
        limits: Limits | Unset = UNSET,
        telemetry: Telemetry | Unset | None = UNSET,
        bus: Any = None,
        handlers: Mapping[type[Directive], Callable[..., Any]] | None = None,
        agents: Mapping[str, Any] | None = None,
        rand: Callable[[], float] | None = None,
        usage_limits: UsageLimits | None = None,
        prices: PriceTable | Mapping[str, ModelPrice] | None = None,
        rate_limits: Mapping[str, RateLimit] | RateLimiter | None = None,
        guardrails: Guardrails | None = None,
        pause_key: bytes | str | None = None,
    ) -> None:
        self.llm = llm
        self.model_source = ModelSource.of(llm)
        """``llm`` normalised once (what the runs use, and agents planning a run)."""
        self._toolbox = Toolbox.build(tools)
        self.retry = retry if isinstance(retry, RetryPolicy) else RetryPolicy()
        self.limits = limits if isinstance(limits, Limits) else Limits()
        if isinstance(telemetry, Unset):
            telemetry = Telemetry()
        self.telemetry = telemetry
        self._tel = telemetry if telemetry is not None and telemetry.active else None
        self._tracing = self._tel is not None and self._tel.tracing
        self.bus = bus
        self._handlers = dict(handlers or {})
        for cls in self._handlers:
            if not (isinstance(cls, type) and issubclass(cls, Directive)):
                raise UsageError(
                    f"handlers keys must be Directive subclasses, got {cls!r}; "
                    "write Runtime(handlers={MyDirective: handler})"
                )
        self.agents = dict(agents or {})
        self._rand = rand
        if usage_limits is not None and not isinstance(usage_limits, UsageLimits):
            raise UsageError(
                f"usage_limits must be a UsageLimits, got {type(usage_limits).__name__}"
            )
        self.usage_limits = usage_limits
        self.prices: PriceTable | None = None if prices is None else PriceTable.of(prices)
        """The prices of every run's model calls (``None``: runs are not priced unless
        their budget has a ``max_cost_usd``)."""
        self._catalogue: PriceTable | None = None
        self.rate_limiter = (
            rate_limits
            if isinstance(rate_limits, RateLimiter) or rate_limits is None
            else RateLimiter(rate_limits)
        )
        """The requests- and tokens-per-minute limits every run on this Runtime shares."""
        if guardrails is not None and not isinstance(guardrails, Guardrails):
            raise UsageError(f"guardrails must be a Guardrails, got {type(guardrails).__name__}")
        self.guardrails = guardrails
        """The guards of every run that gives none of its own."""
        if isinstance(pause_key, str):
            pause_key = pause_key.encode()
        if pause_key is not None and (not isinstance(pause_key, bytes) or len(pause_key) < 16):
            raise UsageError(
                "pause_key must be at least 16 bytes (a secret shared by the processes that "
                "resume each other's paused runs), or None"
            )
        self.pause_key: bytes | None = pause_key
        """Signs paused runs (HMAC-SHA256): a Runtime with a key resumes only paused runs
        signed with it (``None``: a SHA-256 digest catches changes, not forgeries)."""
        self._resuming: dict[str, None] = {}
        """Pauses being resumed or resumed already (by digest), bounded: a pause is
        resumed once."""
        """What model calls cost (``Step.cost_usd``, the ``max_cost_usd`` budget)."""
        """The budget of each run that gives none of its own (each run its own meter)."""
        self._state = _State.NEW
        self._tg: TaskGroup | None = None
        self._executor: Executor | None = None
        self._performer: Performer | None = None
        self._terminals = TerminalTable(self._handlers)
        self._runs: dict[LocalRun, None] = {}
        self._publish = bus.publish if bus is not None else None
        self._strategy_types: set[type[Any]] = set()

    def __repr__(self) -> str:
        return f"<Runtime {self._state.value} runs={len(self._runs)} llm={self.llm!r}>"

    async def __aenter__(self) -> Runtime:
        if self._state is not _State.NEW:
            raise UsageError(
                f"this Runtime is {self._state.value}; a Runtime can be entered once. "
                "Create a new Runtime(...) for each `async with` block."
            )
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        kwargs: dict[str, Any] = {}
        if self._rand is not None:
            kwargs["rand"] = self._rand
        self._executor = Executor(
            tg,
            retry=self.retry,
            limits=self.limits,
            telemetry=self.telemetry,
            handlers=self._handlers,
            **kwargs,
        )
        self._performer = Performer(self._executor, self._run_child)
        self._state = _State.OPEN
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Wait for runs started with :meth:`start`; cancel them if the block raised.

        An exception raised in the block comes out as itself (not wrapped in an
        exception group) unless the Runtime's own tasks failed too.
        """
        assert self._tg is not None and self._executor is not None
        if exc is not None:
            for run in list(self._runs):
                run.stop(cancelled(f"the Runtime closed with {type(exc).__name__}"))
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            if exc is None or len(group.exceptions) != 1 or group.exceptions[0] is not exc:
                raise
        finally:
            self._state = _State.CLOSED
            self._executor.close()
        raise exc  # the body's own exception, unwrapped (outside the except: no new context)

    @property
    def executor(self) -> Executor:
        """The executor (for :meth:`Executor.statistics`)."""
        self._check_open()
        assert self._executor is not None
        return self._executor

    def statistics(self) -> ExecutorStatistics:
        """Return the executor's counters (a frozen snapshot); also after the block ends."""
        if self._executor is None:
            return ExecutorStatistics()
        return self._executor.statistics()

    def _check_open(self) -> None:
        if self._state is _State.OPEN:
            return
        if self._state is _State.NEW:
            raise UsageError(
                "this Runtime is not open: use it inside `async with Runtime(...) as rt:`"
            )
        raise UsageError("this Runtime is closed; create a new Runtime(...) to run more agents")

    def _open(
        self, strategy: Any, input: Any, options: RunOptions, in_session: bool = False
    ) -> LocalRun:
        if self._state is not _State.OPEN:
            self._check_open()
        cls = type(strategy)
        plan: RunPlan | None = None
        tools, llm, timeout, name = options.tools, options.llm, options.timeout, options.name
        # A strategy class seen before is known to be no agent (checked once per class).
        if options.agent_options or (cls not in self._strategy_types and hasattr(cls, "plan_run")):
            plan = plan_of(self, strategy, input, options)
            strategy, input, tools, llm = plan.strategy, plan.input, plan.tools, plan.llm
            timeout, name = plan.timeout, plan.name
            cls = type(strategy)
        if llm is None:
            source = self.model_source
        elif type(llm) is ModelSource:  # an agent's plan: normalised by the agent already
            source = llm
        else:
            source = ModelSource.of(llm)
        if cls not in self._strategy_types:
            if not callable(getattr(strategy, "init", None)) or not callable(
                getattr(strategy, "handle", None)
            ):
                raise UsageError(
                    f"rt.run() needs a strategy (init/handle/outcome/snapshot), got {strategy!r}"
                )
            if callable(getattr(cls, "init", None)) and callable(getattr(cls, "handle", None)):
                self._strategy_types.add(cls)  # checked once per strategy class
        memory = options.memory_for(strategy, in_session=in_session)
        if isinstance(timeout, Unset):
            ms = self.limits.mission_timeout_ms
            timeout = None if ms is None else ms / 1000.0
        assert self._executor is not None
        enclosing = deadline = anyio.current_effective_deadline()
        if timeout is not None:
            if timeout <= 0:
                raise UsageError(f"timeout must be > 0 seconds or None, got {timeout!r}")
            deadline = min(deadline, self._executor.clock() + timeout)
        if source is not None and source.unnamed:  # a provider that names no model itself
            check_model(strategy, source)
        rid = options.run_id or new_id("run_")
        agents = options.agents
        assert self._executor is not None and self._performer is not None
        toolbox = self._toolbox if tools is None else Toolbox.build(tools)
        core: RunCore[DirectiveContext] = RunCore(
            strategy,
            input,
            run_id=rid,
            request_id=options.request_id or rid,
            tool_specs=toolbox.specs,
            name=name,
            deadline=deadline,
            publish=self._publish,
            record=options.record,
            terminals=self._terminals,
            history=tuple(options.history),
            memory=memory,
            compaction=options.compaction,
            summary=options.summary,
            log=self._executor.log,
        )
        if toolbox.may_pause and core.recorded is None:
            core.recorded = []  # the journal is the paused state: kept, not shown
        run = LocalRun(
            core,
            executor=self._executor,
            performer=self._performer,
            tools=toolbox,
            llm=source,
            agents=self.agents if agents is None else {**self.agents, **agents},
        )
        run.pause_key = self.pause_key
        run.show_signals = options.record
        if deadline < enclosing:  # the mission timeout is the tighter one: the driver's
            run.own_deadline = deadline
        if plan is not None:
            run.inherit = plan.inherit
            run.finish_step = plan.finish
            run.resumed = plan.resumed
        else:
            run.finish_step = typed_finish(strategy)
        run.guards = options.guardrails or self.guardrails
        run.rate = self.rate_limiter
        limits = options.usage_limits or self.usage_limits
        if limits is not None or toolbox.may_pause:
            # a run that may pause journals what its tree used: a resume's budget goes on
            run.meter = UsageMeter(limits or NO_LIMITS, tally=toolbox.may_pause)
            if toolbox.may_pause:
                core.spent = run.meter.spent
        if run.meter is not None or self.prices is not None:  # else nothing to price or count
            run.costs = self._costs(run.meter)
            run.accounts = run.costs is not None or (
                run.meter is not None and run.meter.checks_tokens
            )
        return run

    def _costs(self, meter: UsageMeter | None) -> RunCost | None:
        """The cost record of a run counting against ``meter``: with the Runtime's prices,
        or genai-prices' table for a ``max_cost_usd`` budget; ``None`` (not priced, nothing
        looked up per response) without either."""
        table = self.prices
        if table is None:
            if meter is None or meter.limits.max_cost_usd is None:
                return None
            table = self._catalogue
            if table is None:
                table = self._catalogue = PriceTable()
        return RunCost(table)

    def run(
        self,
        strategy: Any,
        input: Any = None,
        *,
        tools: Any = None,
        llm: Any = None,
        run_id: str | None = None,
        request_id: str | None = None,
        timeout: float | Unset | None = UNSET,  # the mission deadline (see docs)
        agents: Mapping[str, Any] | None = None,
        record: bool = False,
        name: str | None = None,
        usage_limits: UsageLimits | None = None,
        guardrails: Guardrails | None = None,
        history: Sequence[Any] = (),
        session: Session | None = None,
        memory: ProgramMemory | None = None,
        compaction: Compaction | None = None,
        summary: Summary | None = None,
        options: RunOptions | None = None,
        **agent_options: Any,
    ) -> Coroutine[Any, Any, Step]:
        """Run ``strategy`` on ``input`` to the end and return its :class:`Step`. Blocks.

        Args:
            strategy: a :class:`~ptcflow.strategies.Strategy`, or an agent (a
                :class:`~ptcflow.runtime.Plannable` such as :class:`ptcflow.SubAgent`):
                ``rt.run(agent, context={...})``.
            input: the run's input (the strategy reads it from ``RunInfo.input``; an
                agent's context).
            tools: tools for this run instead of the Runtime's.
            llm: a provider or model resolver for this run instead of the Runtime's (an
                agent's ``llm``: also a model name or a function).
            run_id: the run's id (default: a fresh ``run_<uuid7>``).
            request_id: the request id on the run's signals (default: the run id).
            timeout: the mission deadline in seconds (``None``: none; default:
                ``Limits.mission_timeout_ms``). An enclosing anyio deadline also applies.
            agents: extra agents this run's ``RunChild`` directives may start.
            record: keep the run's signals on ``Step.signals``.
            name: the agent name on ``ai.request.started`` and the ``invoke_agent`` span.
            usage_limits: the run's :class:`~ptcflow.UsageLimits` (tokens, requests,
                tool calls, cost), shared by the child runs it starts; past one the run
                fails with ``usage_limit_exceeded`` (default: the Runtime's).
            guardrails: the run's :class:`~ptcflow.runtime.Guardrails` (input, output and
                tool-call guards; default: the Runtime's).
            history: the conversation so far (e.g. an earlier ``step.messages``): the
                strategy continues it, and ``step.messages`` holds it followed by this
                run's messages. Checked: every tool call must have its result.
            session: a :class:`~ptcflow.sessions.Session`: its messages are the history,
                and a successful run's own messages are stored as its next turn (runs on
                one session in this process take turns). Storing can raise
                :class:`~ptcflow.sessions.SessionError` (``.step`` holds the run's Step).
            memory: what a SubAgent's earlier programs kept (an earlier ``step.memory``):
                this run's programs start from it (a session carries it for you).
            compaction: a :class:`~ptcflow.sessions.Compaction`: past its limit, the
                history sent to the model shrinks (the last messages kept, the older ones
                dropped or summarized by a model call, itself a directive);
                ``step.messages`` stays whole (default: the session's, else none).
            summary: an earlier ``step.summary`` a summarizing compaction reuses or
                extends instead of summarizing again (a session passes its own).
            options: all of the above as one :class:`RunOptions` (instead of keywords).
            agent_options: an agent's own options (a SubAgent's ``context``, ``llm_opts``,
                ``context_signature``, ``trace``, ``debug``, ``signature_validation``).

        Returns:
            The Step. Failures inside the run (a tool raised, the model timed out, the
            strategy raised) are on ``step.error``, not raised.

        Raises:
            UsageError: the Runtime is not open, the arguments are invalid, or no model
                is set anywhere (a provider built without one and a strategy naming
                none): raised by the call itself; the run starts when the returned
                coroutine is awaited.
        """
        given = RunOptions(
            tools=tools,
            llm=llm,
            run_id=run_id,
            request_id=request_id,
            timeout=timeout,
            agents=agents,
            record=record,
            name=name,
            usage_limits=usage_limits,
            guardrails=guardrails,
            history=history,
            session=session,
            memory=memory,
            compaction=compaction,
            summary=summary,
        )
        if agent_options:  # set apart: a 16th keyword above would cost every call ~0.5 µs
            msgspec.structs.force_setattr(given, "agent_options", agent_options)
        chosen = given if options is None else RunOptions.merge(options, given)
        if chosen.session is not None:
            self._check_open()
            return self._run_in_session(strategy, input, chosen, chosen.session)
        run = self._open(strategy, input, chosen)
        otel_parent = current_context() if self._tracing else None
        if run.guards is not None:
            return guarded_drive(run, self._runs, otel_parent)
        return drive(run, self._runs, start=True, otel_parent=otel_parent)

    async def _run_in_session(
        self, strategy: Any, input: Any, options: RunOptions, session: Session
    ) -> Step:
        """Run with ``session``'s messages as the history (and its programs' memory);
        store the run's own messages, memory and journal as the session's next turn when
        it succeeds (its lock held throughout)."""

        async def run(agent: Any, given: RunOptions, index: int) -> Step:
            run = self._open(agent, input, given, in_session=True)
            otel_parent = current_context() if self._tracing else None
            step: Step
            if run.guards is not None:
                step = await guarded_drive(run, self._runs, otel_parent)
            else:
                step = await drive(run, self._runs, start=True, otel_parent=otel_parent)
            return step

        return await session_turn(
            session, strategy, options, agents=self.agents, tools=self._toolbox, run=run
        )

    def resume(
        self,
        step: Step | PausedRun,
        decisions: Mapping[str, Decision] | None = None,
        *,
        agent: Any,
        tools: Any = None,
        llm: Any = None,
        timeout: float | Unset | None = UNSET,
        agents: Mapping[str, Any] | None = None,
        record: bool = False,
        name: str | None = None,
        usage_limits: UsageLimits | None = None,
        guardrails: Guardrails | None = None,
        options: RunOptions | None = None,
        **agent_options: Any,
    ) -> Coroutine[Any, Any, Step]:
        """Continue a paused run with decisions on its waiting calls; return its next Step.

        ``step`` is the paused Step a run returned (``step.paused``), as it is or after a
        round trip through ``msgspec.json`` (another process, a restart), or its
        ``paused_run``. The run is rebuilt from its journal by folding it through the
        agent's strategy again, then continues under the same run id: each decided call
        meets its decision where it would have started (``Approve``: it runs; ``Deny``:
        it ends with an ``approval_denied`` error the model reads; ``Supply``: it ends
        with the value given); calls left undecided keep waiting, and the run pauses again
        (a call past its ``approval_timeout`` ends ``approval_expired``). No call that
        completed before the pause runs again: a program re-runs from its record. The
        time the run waited does not count against its ``timeout``.

        Args:
            step: the paused Step (or its ``paused_run``).
            decisions: ``{call_id: ptcflow.Approve() | ptcflow.Deny(reason) |
                ptcflow.Supply(value)}`` for calls of ``step.pending``.
            agent: the agent or strategy the run belongs to (checked: its strategy, name
                and tools must be the paused run's).
            tools, llm, timeout, agents, record, name, usage_limits, guardrails,
                options, agent_options: as :meth:`run` takes them (the run's own ``tools``
                and ``llm`` again, when it was given them).

        Returns:
            The next Step: the run's end, or its next pause.

        Raises:
            NotPausedError: ``step`` is not paused (the run ended).
            UnknownCallError: a decision names a call that does not wait.
            AlreadyDecidedError: a decision names a call decided by an earlier resume.
            WrongDecisionError: not a decision, or ``Approve`` for a deferred call.
            PauseMismatchError: another agent, strategy or tools; another version; a
                journal cut before the run started.
            TamperedPauseError: the paused run was changed (or is unsigned where this
                Runtime has a ``pause_key``).
            PauseInUseError: this pause is being resumed, or was resumed, by this Runtime.
        """
        given = RunOptions(
            tools=tools,
            llm=llm,
            timeout=timeout,
            agents=agents,
            record=record,
            name=name,
            usage_limits=usage_limits,
            guardrails=guardrails,
            agent_options=agent_options,
        )
        chosen = given if options is None else RunOptions.merge(options, given)
        return resume_run(self, step, decisions or {}, agent, chosen)

    def start(
        self,
        strategy: Any,
        input: Any = None,
        *,
        tools: Any = None,
        llm: Any = None,
        run_id: str | None = None,
        request_id: str | None = None,
        timeout: float | Unset | None = UNSET,
        agents: Mapping[str, Any] | None = None,
        record: bool = False,
        name: str | None = None,
        usage_limits: UsageLimits | None = None,
        guardrails: Guardrails | None = None,
        history: Sequence[Any] = (),
        session: Session | None = None,
        memory: ProgramMemory | None = None,
        compaction: Compaction | None = None,
        summary: Summary | None = None,
        options: RunOptions | None = None,
        **agent_options: Any,
    ) -> RunHandle:
        """Start a run in the Runtime's task group and return its :class:`RunHandle`.

        Does not block. Same arguments as :meth:`run` (agents and ``options=`` included). Leaving the Runtime's ``async
        with`` block waits for started runs (and cancels them if the block raised).
        """
        given = RunOptions(
            tools=tools,
            llm=llm,
            run_id=run_id,
            request_id=request_id,
            timeout=timeout,
            agents=agents,
            record=record,
            name=name,
            usage_limits=usage_limits,
            guardrails=guardrails,
            history=history,
            session=session,
            memory=memory,
            compaction=compaction,
            summary=summary,
        )
        if agent_options:  # set apart: a 16th keyword above would cost every call ~0.5 µs
            msgspec.structs.force_setattr(given, "agent_options", agent_options)
        chosen = given if options is None else RunOptions.merge(options, given)
        if chosen.session is not None:
            raise UsageError(
                "rt.start() does not take a session yet; use `await rt.run(..., session=...)` "
                "(in a task of your own to run it in the background)"
            )
        run = self._open(strategy, input, chosen)
        self._runs[run] = None
        run.own_deadline = run.deadline  # driven in another task: enforce it all
        run.begin(current_context() if self._tracing else None)
        assert self._tg is not None
        self._tg.start_soon(drive, run, self._runs, name=f"run {run.run_id}")
        return RunHandle(run)

    def stream(
        self, strategy: Any, input: Any = None, *, buffer: int = 10_000, **options: Any
    ) -> EventStream:
        """Start a run and return its events as they happen: an :class:`EventStream`.

        ``async with rt.stream(agent, context) as events: async for event in events:``
        gives a :class:`StreamEvent` per model text chunk, model message, tool call
        start and end, program print and end, and run start and end, for the run and
        every agent under it (each event's ``path`` names the agents down to its run).
        Iteration ends with the run's ``run_ended``; ``events.step`` is then its Step.
        A model that streams (``ReAct(stream=True)``, ``SubAgent(stream=True)`` or
        ``stream=True`` here for a SubAgent) gives its text chunk by chunk.

        Args:
            strategy: what :meth:`start` takes: a strategy or an agent.
            input: the run's input (an agent's context).
            buffer: signals the reader may fall behind before it gets
                :class:`~ptcflow.signals.SignalOverflowError` (the run never waits).
            options: :meth:`start`'s keyword arguments (an agent's own options
                included: ``context=``, ``stream=True``, ...).

        Raises:
            UsageError: the Runtime's bus is not a :class:`~ptcflow.signals.SignalBus`,
                or :meth:`start` refused the run.
        """
        bus = self.bus
        if not isinstance(bus, SignalBus):
            raise UsageError(
                "rt.stream() reads the run's signals from the Runtime's bus, which must be "
                "a SignalBus: Runtime(..., bus=SignalBus())"
            )
        self._check_open()
        # subscribed before the run starts: its first signal is published by start()
        subscription = bus.subscribe("**", buffer=buffer, overflow="error")
        try:
            handle = self.start(strategy, input, **options)
        except BaseException:
            subscription.close()
            raise
        return EventStream(handle, subscription)

    async def _run_child(self, ctx: DirectiveContext, strategy: Any, input: Any) -> Step:
        """Run ``strategy`` as a child of the run of directive ``ctx``, in ``ctx``'s task.

        Its run id is ``{parent run id}/{directive id}``; it gets the directive's
        remaining time, nests its spans under the directive's span and is cancelled with
        it. A plain strategy shares the parent's model, tools and agents; a
        :class:`RunPlan` (an agent used as a tool) brings its own tools, model (``None``:
        the Runtime's), name, deadline (the tighter of its ``timeout`` and the remaining
        time) and what it hands on to its own children.

        When the parent run was resumed and this directive's child had paused
        (``parent.paused_children``), the child is resumed in place from its paused run,
        with the parent's decisions on its calls (``{directive id}/{call id}``, prefix
        stripped), instead of starting again.
        """
        parent = ctx.run
        d = ctx.directive
        held = parent.paused_children.pop(d.id, None) if parent.paused_children else None
        enclosing = anyio.current_effective_deadline()
        deadline = min(ctx.deadline, enclosing)
        tools, source = parent.tools, parent.llm
        name = getattr(d, "agent", None)
        plan = strategy if isinstance(strategy, RunPlan) else None
        if plan is not None:
            strategy, input, name = plan.strategy, plan.input, plan.name
            tools = Toolbox.build(plan.tools)
            if plan.llm is not None and plan.llm is parent.llm:
                pass  # the caller's own model (a handoff's)
            else:
                source = self.model_source if plan.llm is None else ModelSource.of(plan.llm)
            if isinstance(plan.timeout, float | int):
                spent = 0.0 if held is None else held.elapsed_ms / 1000.0
                deadline = min(deadline, parent.executor.clock() + plan.timeout - spent)
            if source is not None and source.unnamed:
                check_model(strategy, source)
        core: RunCore[DirectiveContext] = RunCore(
            strategy,
            input,
            run_id=f"{parent.run_id}/{d.id}",
            request_id=d.request_id or parent.request_id,
            parent_run_id=parent.run_id,
            tool_specs=tools.specs,
            name=name,
            deadline=deadline,
            publish=self._publish,
            terminals=self._terminals,
            history=plan.history if plan is not None else (),
            log=parent.executor.log,
        )
        if tools.may_pause:
            core.recorded = []  # the journal is the paused state: kept, not shown
        child = LocalRun(
            core,
            executor=parent.executor,
            performer=parent.performer,
            tools=tools,
            llm=source,
            agents=parent.agents,
        )
        if plan is not None:
            child.inherit = plan.inherit
            child.finish_step = plan.finish
            child.resumed = plan.resumed
            child.handoffs = plan.handoffs
        else:
            child.finish_step = typed_finish(strategy)
        child.path = (*parent.path, core.name)
        child.show_signals = False
        child.pause_key = parent.pause_key
        child.rate = parent.rate
        child.meter = parent.meter  # one budget for the whole tree
        child.guards = parent.guards
        child.costs = self._costs(child.meter)
        child.accounts = child.costs is not None or (
            child.meter is not None and child.meter.checks_tokens
        )
        if deadline < enclosing:
            child.own_deadline = deadline
        if held is not None:
            prefix = f"{d.id}/"
            decided = parent.decisions or {}
            decisions = {k[len(prefix) :]: v for k, v in decided.items() if k.startswith(prefix)}
            resume_child(child, held, decisions, ctx.otel_context)
            return await drive(child)
        return await drive(child, start=True, otel_parent=ctx.otel_context)
