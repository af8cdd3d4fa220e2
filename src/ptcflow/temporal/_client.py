"""The client side: :class:`TemporalRuntime` starts runs as workflows and returns Steps."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from ptcflow.core import (
    AlreadyDecidedError,
    Decision,
    NotPausedError,
    ResumeError,
    UnknownCallError,
    WrongDecisionError,
)
from ptcflow.errors import UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime import UNSET, RetryPolicy, RunOptions, Step, Telemetry, Unset
from ptcflow.runtime.lowlevel import (
    Toolbox,
    attach,
    current_context,
    detach,
    session_turn,
    typed_finish,
)
from ptcflow.sessions import Session, SessionConflictError
from ptcflow.signals import (
    CANCELLED,
    INTERNAL,
    Err,
    ErrorEnvelope,
    Ok,
    PendingCall,
    json_safe,
    new_id,
)
from ptcflow.temporal._agent_tools import mission_of, plan_tools
from ptcflow.temporal._agents import WORKERS_MODEL, WorkersModel, plan_on_temporal
from ptcflow.temporal._approval_names import DECIDE_UPDATE, PENDING_MEMO, route
from ptcflow.temporal._connect import TemporalUnavailable, connect
from ptcflow.temporal._follow import follow_signals
from ptcflow.temporal._guardrails import plan_guards
from ptcflow.temporal._options import TemporalOptions
from ptcflow.temporal._refs import agent_ref
from ptcflow.temporal._spec import RunResult, RunSpec, UsageBudget, payload_size

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

__all__ = ("TemporalRunHandle", "TemporalRuntime")

_WORKERS_SOURCE: Final = ModelSource(WORKERS_MODEL, provider=WORKERS_MODEL)
_REFUSALS: Final[dict[str, type[ResumeError]]] = {
    "UnknownCallError": UnknownCallError,
    "AlreadyDecidedError": AlreadyDecidedError,
    "WrongDecisionError": WrongDecisionError,
}


class TemporalRunHandle:
    """A run on Temporal: wait for its Step, or cancel it. Made by :meth:`TemporalRuntime.start`
    (or :meth:`TemporalRuntime.handle` to reattach to a run by id)."""

    def __init__(
        self,
        rt: TemporalRuntime,
        run_id: str,
        span: Any = None,
        finish: Callable[[Step], Step] | None = None,
    ) -> None:
        self._rt = rt
        self.run_id = run_id
        self._span = span
        self._finish = finish

    def __repr__(self) -> str:
        return f"<TemporalRunHandle {self.run_id!r}>"

    def _workflow(self) -> WorkflowHandle[Any, RunResult]:
        return self._rt.client.get_workflow_handle(self.run_id, result_type=RunResult)

    async def wait(self) -> Step:
        """Block until the run has ended; return its Step (its signals go to the bus).

        Raises:
            TemporalUnavailable: the server stopped answering; the run goes on there
                (reattach with ``rt.handle(run_id).wait()``).
        """
        from temporalio.client import WorkflowFailureError
        from temporalio.service import RPCError

        rt = self._rt
        got: list[Step] = []
        try:
            async with anyio.create_task_group() as tg:
                if rt.bus is not None:
                    tg.start_soon(self._follow, got)
                try:
                    result = await self._workflow().result()
                    got.append(result.to_step())
                except WorkflowFailureError as exc:
                    got.append(_ended_without_step(self.run_id, exc))
        except RPCError as exc:
            raise TemporalUnavailable(
                f"lost the Temporal server while waiting for run {self.run_id}: {exc}. The run "
                f"goes on on the server; wait for it again with rt.handle({self.run_id!r}).wait()"
            ) from None
        step = got[0]
        if self._finish is not None:  # the agent's last word on its Step, as locally
            step = self._finish(step)
        rt.end_span(self._span, step)
        return step

    async def _follow(self, got: list[Step]) -> None:
        rt = self._rt
        assert rt.bus is not None
        await follow_signals(rt.client, self.run_id, rt.bus.publish, finished=lambda: bool(got))

    async def cancel(self) -> None:
        """Ask Temporal to cancel the run (it ends with a ``cancelled`` Step). Blocks until
        the request is accepted."""
        await self._workflow().cancel()

    async def pending(self) -> tuple[PendingCall, ...]:
        """The tool calls that wait for a decision now (empty: none, or the run ended).

        Read from the run's memo (``ptcflow.pending``), which the workflow keeps current
        and the server answers from without a worker (a run that waits may have none);
        the ``ptcflow.pending`` query of the workflow gives the same list. Calls waiting
        in child runs (agents used as tools) are listed too, their ids prefixed with the
        call that runs the child (``"{call id}/{call id in the child}"``), their
        ``agent`` the path of agent names from this run.

        Example:
            >>> for call in await handle.pending():  # doctest: +SKIP
            ...     print(call.call_id, call.tool, call.arguments, call.reason)
        """
        described = await self._workflow().describe()
        found: tuple[PendingCall, ...] = await described.memo_value(
            PENDING_MEMO, (), type_hint=tuple[PendingCall, ...]
        )
        return found

    async def decide(self, decisions: Mapping[str, Decision]) -> tuple[str, ...]:
        """Decide waiting calls: ``{call_id: ptcflow.Approve() | ptcflow.Deny(reason) |
        ptcflow.Supply(value)}``. The run goes on once all the calls of a directive are
        decided; returns the call ids decided (the update is in the run's history).

        A call waiting in a child run (a prefixed id :meth:`pending` lists) is decided in
        that run: its decision goes to the child workflow's ``ptcflow.decide`` update, whose
        validator checks it as this run's checks its own. Decisions for several runs are
        one update per run (this run's first): a refused one leaves those sent before it
        applied.

        Raises:
            UnknownCallError: a call id that does not wait in this run.
            AlreadyDecidedError: a call decided already (or whose approval_timeout passed).
            WrongDecisionError: no decisions, or one that does not fit its call.
            NotPausedError: the run has ended.
        """
        from temporalio.service import RPCError, RPCStatusCode

        routes: dict[str, dict[str, tuple[str, Decision]]] = {}
        listed: dict[str, PendingCall] = {}
        if any("/" in call_id for call_id in decisions):  # may wait in a child run
            try:
                listed = {p.call_id: p for p in await self.pending()}
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise  # not found: the update below says so
        for call_id, decision in decisions.items():
            listed_call = listed.get(call_id)
            run_id, local = (
                (self.run_id, call_id) if listed_call is None else route(self.run_id, listed_call)
            )
            routes.setdefault(run_id, {})[local] = (call_id, decision)
        own = routes.pop(self.run_id, {})
        done: list[str] = []
        if own or not routes:
            done += await self._decide(self.run_id, own)
        for run_id, part in routes.items():
            await self._decide(run_id, part)
            done += [call_id for call_id, _ in part.values()]
        return tuple(done)

    async def _decide(self, run_id: str, part: Mapping[str, tuple[str, Decision]]) -> list[str]:
        """The ``ptcflow.decide`` update of run ``run_id`` with ``{local id: (listed id,
        decision)}``; the listed ids decided."""
        from temporalio.client import WorkflowUpdateFailedError
        from temporalio.exceptions import ApplicationError
        from temporalio.service import RPCError, RPCStatusCode

        handle = self._rt.client.get_workflow_handle(run_id)
        try:
            await handle.execute_update(
                DECIDE_UPDATE, {k: v for k, (_, v) in part.items()}, result_type=tuple[str, ...]
            )
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type in _REFUSALS:
                raise _REFUSALS[cause.type](cause.message) from None
            raise
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise NotPausedError(
                    f"run {run_id} waits for no decision: it has ended, or does not "
                    f"exist ({exc.message})"
                ) from None
            raise
        return [call_id for call_id, _ in part.values()]


class TemporalRuntime:
    """Runs agent strategies, and agents (a ``SubAgent``), as Temporal workflows: ``run``
    returns the same :class:`Step`
    a local :class:`~ptcflow.runtime.Runtime` does.

    The strategy, its tools and its agents are sent by reference (import path and
    configuration): workers load them (``ptcflow worker``). Model calls use the workers'
    model.

    Args:
        address: the Temporal frontend, ``host:port``.
        namespace: the Temporal namespace.
        client: a connected client instead (see :func:`ptcflow.temporal.connect`).
        tools: the default tools of every run (anything ``for_agent`` accepts, made of
            module-level functions a worker can import).
        agents: agents ``RunChild`` directives may start, ``{name: strategy}`` (child
            workflows).
        options: routing and limits (:class:`TemporalOptions`).
        retry: the retry policy (backoff) of every directive.
        bus: a ``SignalBus`` (or anything with ``publish``) that receives every signal of
            the runs this client waits for, child runs included.
        telemetry: the ``invoke_agent`` span of each run, from the client (default: the
            global OpenTelemetry providers).

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     async with TemporalRuntime(tools=[add]) as rt:
        ...         step = await rt.run(ReAct(), "What is 2 + 3?")
    """

    def __init__(
        self,
        *,
        address: str = "127.0.0.1:7233",
        namespace: str = "default",
        client: Client | None = None,
        tools: Any = None,
        agents: Mapping[str, Any] | None = None,
        options: TemporalOptions | None = None,
        retry: RetryPolicy | None = None,
        bus: Any = None,
        telemetry: Telemetry | Unset | None = UNSET,
    ) -> None:
        self.address = address
        self.namespace = namespace
        self._client = client
        self.tools = Toolbox.build(tools)
        self.agents = dict(agents or {})
        self.options = options or TemporalOptions()
        self.retry = retry or RetryPolicy()
        self.bus = bus
        tel = Telemetry() if isinstance(telemetry, Unset) else telemetry
        self._tel = tel if tel is not None and tel.tracing else None

    def __repr__(self) -> str:
        return f"<TemporalRuntime {self.address} queue={self.options.task_queue!r}>"

    async def __aenter__(self) -> TemporalRuntime:
        if self._client is None:
            self._client = await connect(self.address, namespace=self.namespace)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    @property
    def client(self) -> Client:
        """The Temporal client."""
        if self._client is None:
            raise UsageError("use TemporalRuntime inside `async with TemporalRuntime(...) as rt:`")
        return self._client

    @property
    def llm(self) -> WorkersModel:
        """The model of runs on Temporal: the workers' (an agent planning its run sees
        that one exists; a model name the agent gives is sent with every call)."""
        return WORKERS_MODEL

    @property
    def model_source(self) -> ModelSource:
        """:attr:`llm` as a :class:`~ptcflow.providers.ModelSource` (what agents plan with)."""
        return _WORKERS_SOURCE

    def spec(
        self,
        strategy: Any,
        input: Any = None,
        *,
        tools: Any = None,
        run_id: str | None = None,
        request_id: str | None = None,
        timeout: float | Unset | None = UNSET,
        agents: Mapping[str, Any] | None = None,
        record: bool = False,
        name: str | None = None,
        options: RunOptions | None = None,
        **agent_options: Any,
    ) -> RunSpec:
        """The workflow input of a run (checked: a bad argument raises ``UsageError``).
        Takes the arguments of :meth:`run`."""
        given = RunOptions(
            tools=tools,
            llm=agent_options.pop("llm", None),
            run_id=run_id,
            request_id=request_id,
            timeout=timeout,
            agents=agents,
            record=record,
            name=name,
            agent_options=agent_options,
        )
        return self._plan(
            strategy, input, given if options is None else RunOptions.merge(options, given)
        )[0]

    def _plan(
        self, target: Any, input: Any, options: RunOptions, in_session: bool = False
    ) -> tuple[RunSpec, Callable[[Step], Step] | None]:
        if options.session is not None:
            raise UsageError(
                "TemporalRuntime.start() and spec() do not take a session; use "
                "`await rt.run(..., session=...)`"
            )
        guards = None if options.guardrails is None else plan_guards(options.guardrails)
        limits = options.usage_limits
        planned = plan_on_temporal(self, target, input, options)
        strategy, timeout = planned.strategy, planned.timeout
        if not callable(getattr(strategy, "init", None)) or not callable(
            getattr(strategy, "handle", None)
        ):
            raise UsageError(
                f"run() needs a strategy (init/handle/outcome/snapshot) or an agent, got "
                f"{strategy!r}"
            )
        memory = options.memory_for(strategy, in_session=in_session)
        if timeout is not None and (isinstance(timeout, bool) or timeout <= 0):
            raise UsageError(f"timeout must be > 0 seconds or None, got {timeout!r}")
        toolbox = self.tools if planned.tools is None else Toolbox.build(planned.tools)
        everyone = {**self.agents, **(options.agents or {})}
        rid = options.run_id or new_id("run_")
        label = planned.name or str(getattr(strategy, "name", "") or "") or None
        refs, agent_tools = plan_tools(
            toolbox,
            caller=label or "agent",
            model=getattr(strategy, "model", None) or None,
            inherit=planned.inherit,
            agents=everyone,
            max_handoffs=self.options.max_handoffs,
        )
        spec = RunSpec(
            agent=agent_ref(strategy),
            input=json_safe(planned.input),
            run_id=rid,
            request_id=options.request_id or rid,
            name=label,
            tools=refs,
            tool_specs=toolbox.specs,
            agent_tools=agent_tools,
            mission=mission_of(planned.inherit),
            usage=None if limits is None else UsageBudget(limits=limits),
            agents={  # RunChild's strategies (an agent given for handoffs is planned above)
                n: agent_ref(s)
                for n, s in everyone.items()
                if getattr(type(s), "plan_run", None) is None
            },
            deadline=None if timeout is None else time.time() + timeout,
            options=self.options,
            retry=self.retry,
            observe=self.bus is not None,
            record=options.record,
            history=tuple(options.history),
            memory=memory,
            compaction=options.compaction,
            summary=options.summary,
            guards=guards,
        )
        limit = self.options.max_payload_bytes
        if limit is not None and payload_size(spec, limit) > limit:
            raise UsageError(
                f"the input of run {rid} takes more than the {limit} bytes a Temporal history "
                "event may hold: pass a reference to the data (a path, a key) instead"
            )
        return spec, planned.finish or typed_finish(strategy)

    def run(self, strategy: Any, input: Any = None, **options: Any) -> Coroutine[Any, Any, Step]:
        """Run ``strategy`` on ``input`` as a workflow and return its :class:`Step`. Blocks.

        Takes the arguments of ``Runtime.run``: a strategy or an agent (a
        :class:`~ptcflow.runtime.Plannable` such as :class:`ptcflow.SubAgent`, with its own
        options: ``rt.run(agent, context={...})``), ``tools``, ``run_id``, ``request_id``,
        ``timeout``, ``agents``, ``record``, ``name``, ``history``, ``memory``,
        ``compaction``, ``summary`` (or all of these as one ``options=RunOptions(...)``),
        and ``session``: a session's run is the workflow ``{session id}/turn-{n}``, given
        the session's messages, memory and last summary (and its compaction), its turn
        stored once the workflow's result is in (a turn another
        client is running raises ``SessionConflictError``). An agent's model is the workers'
        unless it names one (a model name, sent with every call). Cancelling the caller
        cancels the run, as locally; use :meth:`start` for a run that outlives its caller.

        Raises:
            UsageError: a bad argument, or an agent (or an agent it calls as a tool)
                that brings a model object (raised by the call itself).
            TemporalUnavailable: the server cannot be reached.
        """
        given = RunOptions.split(options)
        if given.session is not None:
            return self._run_in_session(strategy, input, given, given.session)
        spec, finish = self._plan(strategy, input, given)
        return self._run(spec, finish)

    async def _run_in_session(
        self, target: Any, input: Any, options: RunOptions, session: Session
    ) -> Step:
        """A session's run as a workflow whose id is ``{session id}/turn-{n}``: given the
        session's messages and memory, its turn stored once the workflow's result is in."""
        if options.run_id is not None:
            raise UsageError(
                "a session's run on Temporal is named by its session and turn "
                f"({session.session_id!r}/turn-N): leave run_id out"
            )

        async def run(agent: Any, given: RunOptions, index: int) -> Step:
            named = msgspec.structs.replace(given, run_id=session_run_id(session.session_id, index))
            spec, finish = self._plan(agent, input, named, in_session=True)
            return await self._run(spec, finish, session=(session.session_id, index))

        return await session_turn(
            session, target, options, agents=self.agents, tools=self.tools, run=run
        )

    def _plan_args(
        self, target: Any, input: Any, keywords: Mapping[str, Any]
    ) -> tuple[RunSpec, Callable[[Step], Step] | None]:
        return self._plan(target, input, RunOptions.split(keywords))

    async def _run(
        self,
        spec: RunSpec,
        finish: Callable[[Step], Step] | None,
        session: tuple[str, int] | None = None,
    ) -> Step:
        handle = await self._start(spec, finish, session)
        try:
            return await handle.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await handle.cancel()
            raise

    async def start(self, strategy: Any, input: Any = None, **options: Any) -> TemporalRunHandle:
        """Start a run and return its handle at once (the run is durable: it goes on
        whatever happens to this process). Same arguments as :meth:`run`."""
        return await self._start(*self._plan_args(strategy, input, options))

    def handle(self, run_id: str) -> TemporalRunHandle:
        """A handle on an existing run (to wait for it again, decide its waiting calls, or
        cancel it)."""
        return TemporalRunHandle(self, run_id)

    async def resume(self, run: TemporalRunHandle | str, decisions: Mapping[str, Decision]) -> Step:
        """Decide a run's waiting calls and wait for its Step (``handle.decide`` then
        ``handle.wait``): the Temporal counterpart of ``Runtime.resume``. The run, which
        waited on the server, goes on where it stopped.

        Raises:
            UnknownCallError, AlreadyDecidedError, WrongDecisionError, NotPausedError: as
                :meth:`TemporalRunHandle.decide`.
        """
        handle = self.handle(run) if isinstance(run, str) else run
        await handle.decide(decisions)
        return await handle.wait()

    async def _start(
        self,
        spec: RunSpec,
        finish: Callable[[Step], Step] | None = None,
        session: tuple[str, int] | None = None,
    ) -> TemporalRunHandle:
        from temporalio.exceptions import WorkflowAlreadyStartedError
        from temporalio.service import RPCError

        from ptcflow.temporal._workflow import RUN_WORKFLOW

        span = token = None
        if self._tel is not None:
            label = spec.name or spec.agent.path.rsplit(":", 1)[-1]
            span = self._tel.start_span(
                f"invoke_agent {label}",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": label,
                    "gen_ai.conversation.id": spec.run_id,
                },
                current_context(),
            )
            spec = msgspec.structs.replace(spec, traceparent=self._tel.traceparent(span))
            token = attach(self._tel.context_of(span, current_context()))
        try:
            await self.client.start_workflow(
                RUN_WORKFLOW,
                spec,
                id=spec.run_id,
                task_queue=self.options.task_queue,
                result_type=RunResult,
            )
        except WorkflowAlreadyStartedError:
            if session is not None:
                session_id, index = session
                raise SessionConflictError(
                    f"session {session_id!r}: turn {index} is being run already (workflow "
                    f"{spec.run_id!r}, started by another client); this run was not started. "
                    f"Wait for it (rt.handle({spec.run_id!r}).wait()), then load the session "
                    "again and retry",
                    session_id,
                    index,
                ) from None
            raise UsageError(
                f"a run with id {spec.run_id!r} is already running on Temporal: pick another "
                f"run_id, or wait for that one with rt.handle({spec.run_id!r}).wait()"
            ) from None
        except RPCError as exc:
            raise TemporalUnavailable(
                f"could not start run {spec.run_id} on Temporal at {self.address}: {exc}"
            ) from None
        finally:
            detach(token)
        return TemporalRunHandle(self, spec.run_id, span, finish)

    def end_span(self, span: Any, step: Step) -> None:
        """End a run's ``invoke_agent`` span with its Step."""
        if span is None or self._tel is None:
            return
        result: Ok[Any] | Err = Ok(payload=None) if step.error is None else Err(error=step.error)
        self._tel.end_span(
            span,
            result,
            {
                "gen_ai.usage.input_tokens": step.usage.input_tokens,
                "gen_ai.usage.output_tokens": step.usage.output_tokens,
            },
        )


def session_run_id(session_id: str, turn: int) -> str:
    """The workflow id of turn ``turn`` of a session: the session id is its business key.

    Example:
        >>> session_run_id("user-42", 3)
        'user-42/turn-3'
    """
    return f"{session_id}/turn-{turn}"


def _ended_without_step(run_id: str, exc: BaseException) -> Step:
    """The Step of a workflow that ended without one (terminated, cancelled before it
    could answer, or failed)."""
    cause = getattr(exc, "cause", None) or exc
    kind = (
        CANCELLED
        if "cancel" in type(cause).__name__.lower() or "terminat" in str(cause).lower()
        else INTERNAL
    )
    error = ErrorEnvelope.make(
        kind,
        f"the workflow of run {run_id} ended without a Step: {type(cause).__name__}: {cause}",
        retryable=False,
    )
    return Step(run_id=run_id, ok=False, error=error, reason=kind)
