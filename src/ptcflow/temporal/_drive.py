"""The loop inside the ``ptcflow.run`` workflow (see ``_workflow.py``): :class:`Driver`.

After every event it takes the run core's work lists, starts each new directive as an
activity (a child workflow for ``RunChild`` and for a call of an agent used as a tool: see
``_family``), cancels what the core interrupts, and reports each outcome
(``core.finish``), in the order the work started; it continues the workflow as new at a
quiet moment when its history grows long. Only ``temporalio.workflow`` and asyncio: time
is ``workflow.now()``, ids come from the workflow's seeded random.

A program that calls agents used as tools runs in rounds: its activity suspends when it
waits on agent calls only (``_activity_run``), the workflow publishes the sub-calls it
completed, runs the pending calls as child workflows (concurrently, each with its
``ai.tool.started`` / ``ai.tool.result``), then runs the program again with their results
added to its record; the program, run again from its start, answers all of them from the
record. Sub-calls published once are not published again (``report``'s ``published``).

A directive whose activity reports calls that wait for a person (``approvals``: a tool
that requires approval, a deferred tool, a program stopped at such calls) stays open: the
workflow publishes ``ai.approval.requested``, lists the calls (``ptcflow.pending``) and
waits, holding no worker, for the ``ptcflow.decide`` update or the calls'
``approval_timeout`` (see ``_approvals``); then it performs the directive again with the
decisions (a program with its record: no completed call runs again). While every
directive in flight waits for a person, the run's clock stops: its deadline moves on by
the time waited.

A child workflow tells its parent what waits in it (``ptcflow.child_waits``, sent from
the loop whenever its list of waiting calls, or whether it only waits on people, changed):
the parent lists those calls with its own, and a directive whose child only waits on
people waits on people too (a program waiting on agent calls, when all of them do), so
the parent's clock stops with the child's (see ``_approvals``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

import msgspec
from temporalio import workflow

from ptcflow.core import Approve, Deny, Flight, RunCore, Supply, TerminalTable, cancelled
from ptcflow.directives import Directive, LLMEmbed, LLMGenerate, RunChild, RunProgram, ToolExec
from ptcflow.runtime import GUARDRAIL, GUARDRAIL_FAILED, GUARDRAIL_TRIPPED
from ptcflow.runtime.lowlevel import EXPIRED, guard_error
from ptcflow.signals import (
    HANDOFF,
    INTERNAL,
    TERMINAL_TYPES,
    TOOL_RESULT,
    TOOL_STARTED,
    Err,
    ErrorEnvelope,
    HandoffData,
    Ok,
    Signal,
    ToolResultData,
    ToolStartedData,
    Usage,
    decode_signal,
    encode_signal,
    json_safe,
)
from ptcflow.temporal._activities import PAYLOAD_TOO_LARGE
from ptcflow.temporal._activity_run import Recorded, decode_record, encode_record
from ptcflow.temporal._approvals import CHILD_WAITS_SIGNAL, Approvals, ChildWaits, expiry_of
from ptcflow.temporal._checkpoint import checkpoint_of, resume, should_continue
from ptcflow.temporal._family import RUN_WORKFLOW, Family
from ptcflow.temporal._guardrails import GUARD_TOOL, run_guard
from ptcflow.temporal._placement import Placement, perform_activity, place
from ptcflow.temporal._refs import ToolRef, path_of
from ptcflow.temporal._report import answered, publish_lines, report
from ptcflow.temporal._spec import (
    ActivityCall,
    ActivityOutcome,
    GuardPlan,
    PendingCall,
    RunResult,
    RunSpec,
    Typed,
    decode_lines,
    encode_lines,
    payload_size,
)

__all__ = ("RUN_WORKFLOW", "Driver", "Observer")

_T = TypeVar("_T")


class Observer(Protocol):
    """What the workflow keeps for observers (the signals query)."""

    @property
    def children(self) -> tuple[str, ...]:
        """The child runs started so far."""
        ...

    def observe(self, signal: Signal) -> None:
        """Keep ``signal``."""
        ...

    def add_child(self, run_id: str) -> None:
        """A child run was started."""
        ...

    def tail(self, n: int) -> list[msgspec.Raw]:
        """The latest ``n`` signals kept."""
        ...

    def carry(self, lines: Any, children: Any) -> None:
        """What the previous execution kept."""
        ...


def _stamp() -> tuple[str, str]:
    """A deterministic ``(UUIDv7, RFC 3339 time)`` pair from the workflow's clock and random."""
    now = workflow.now()
    ms = int(now.timestamp() * 1000)
    bits = workflow.random().getrandbits(74)
    value = (
        (ms << 80) | (0x7 << 76) | ((bits >> 62) << 64) | (0b10 << 62) | (bits & ((1 << 62) - 1))
    )
    h = f"{value:032x}"
    stamp = f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond // 1000:03d}Z"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}", stamp


def _now() -> float:
    return workflow.now().timestamp()


class Driver:
    """The loop of one workflow execution (see the module docstring)."""

    def __init__(
        self, owner: Observer, spec: RunSpec, strategy: Any, approvals: Approvals | None = None
    ) -> None:
        self.owner = owner
        self.approvals = Approvals() if approvals is None else approvals
        """The calls waiting for a person (the workflow's query and update)."""
        self.waits: set[str] = set()
        """The directives in flight that wait for decisions, by id."""
        self.paused_at: float | None = None
        """Since when every directive in flight waits for a person (the run's clock stops)."""
        self.spec = spec
        self.tools: dict[str, ToolRef] = {t.name: t for t in spec.tools}
        self.deadline = math.inf if spec.deadline is None else spec.deadline
        self.terminals = TerminalTable()  # with the workers' own kinds as they answer
        self.core: RunCore[Flight] = RunCore(
            strategy,
            spec.input,
            run_id=spec.run_id,
            request_id=spec.request_id,
            parent_run_id=spec.parent_run_id,
            tool_specs=spec.tool_specs,
            name=spec.name,
            deadline=self.deadline,
            publish=owner.observe if spec.observe else None,
            record=spec.record,
            stamp=_stamp,
            terminals=self.terminals,
            traceparent=spec.traceparent,
            history=spec.history,
            memory=spec.memory,
            compaction=spec.compaction,
            summary=spec.summary,
        )
        self.tasks: dict[asyncio.Task[Any], Flight] = {}
        self.begun: dict[str, float] = {}
        self.family = Family(spec, self.core.request_id, owner.add_child)
        self.salvage: bytes | None = spec.salvage
        """The record of a program whose workers were lost (its budget spent): the next
        program of the run gets it, so the calls it repeats are answered, not run again;
        a run that fails with it hands it to its caller, whose next call of the same
        agent with the same arguments starts with it (``Family.agent_call``)."""
        self.published: dict[str, set[str]] = {}
        """The sub-calls of each suspended program published already, by directive id."""
        self.subs: dict[str, dict[str, Flight]] = {}
        """The sub-calls of each directive opened and still open (a program's calls that
        wait for a decision), by directive id."""
        self.wake = asyncio.Event()
        """Set when work done in a task left the core with work to start or to cancel."""
        self._prices = spec.usage is not None and spec.usage.limits.max_cost_usd is not None
        """The run has a cost budget: its model calls are priced on the workers."""
        self.guards: GuardPlan | None = spec.guards
        """The run's guardrails (each check runs on a worker: ``_guardrails``)."""
        if self.guards is not None and self.guards.output:
            self.core.hold_end = True  # the run's successful end waits for its output guards
        self.rounds: dict[str, set[str]] = {}
        """The agent calls of each program waiting on them, still running, by directive id."""
        self.told: tuple[Any, ...] = ((), {}, False)
        """What this run last told its parent (``_tell``)."""
        self.approvals.run_id = spec.run_id
        self.approvals.agent = self.core.name
        self.approvals.changed = self.wake.set

    async def drive(self) -> RunResult:
        core = self.core
        checkpoint = self.spec.checkpoint
        if checkpoint is None and self.guards is not None and self.guards.input:
            await self._check_input()
        elif checkpoint is None:
            core.start(_now())
        else:
            self.owner.carry(checkpoint.signals, checkpoint.children)
            self.family.resume(checkpoint.turns_used, checkpoint.steps, checkpoint.usage_used)
            resume(core, checkpoint, _now())
        waiter: asyncio.Task[Any] | None = None
        while core.step is None:
            self._pump()
            if core.finished:
                break
            if core.held:  # a successful end waits for its output guards
                await self._check_output()
                continue
            if not self.tasks:
                continue
            if waiter is None:
                waiter = asyncio.get_running_loop().create_task(self.wake.wait())
            idle = all(self._waits_on_people(f) for f in self.tasks.values())
            if idle:
                if self.paused_at is None:  # only people are awaited: the clock stops
                    self.paused_at = _now()
                timeout = None
            else:
                self._resume_clock()
                timeout = None if self.deadline == math.inf else max(0.0, self.deadline - _now())
            try:
                await self._tell(idle)  # a cancel may come while the parent is told
                done, _ = await workflow.wait(
                    [*self.tasks, waiter], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
            except asyncio.CancelledError:
                core.cancel(cancelled(f"run {core.run_id} ({core.name}) was cancelled"), _now())
                continue
            now = _now()
            self._resume_clock()  # before any result is settled (the next turn may stop it)
            if waiter in done:
                self.wake.clear()
                waiter = None
            elif not done:
                core.expire(now)
                continue
            for task in [t for t in self.tasks if t in done]:  # in start order
                flight = self.tasks.pop(task)
                self._settle(flight, task, now)
        if waiter is not None:
            waiter.cancel()
        for task in self.tasks:  # nothing outlives the run
            task.cancel()
        step = core.step
        assert step is not None
        value = json_safe(step.value)
        step = self.family.finish(msgspec.structs.replace(step, value=value, signals=()))
        lines = encode_lines(core.recorded) if core.recorded is not None else ()
        salvage = None if step.ok else self.salvage
        return RunResult(
            step=step,
            signals=lines,
            turns_used=self.family.turns_used,
            salvage=salvage,
            usage_used=self.family.usage_now(),
        )

    def _waits_on_people(self, flight: Flight) -> bool:
        """``flight`` waits for decisions: its own calls', or its child's that only waits
        on people, or (a program) all its running agent calls' children."""
        i = flight.directive.id
        if i in self.waits or self.approvals.idle(i):
            return True
        subs = self.rounds.get(i, set())
        return bool(subs) and all(self.approvals.idle(s) for s in subs)

    async def _tell(self, idle: bool) -> None:
        """Tell the parent workflow (if any) what waits in this run, when it changed."""
        parent = workflow.info().parent
        if parent is None:
            return
        approvals = self.approvals
        told = (approvals.pending(), approvals.decided_all(), idle)
        if told == self.told:
            return
        self.told = told
        report = ChildWaits(run_id=self.spec.run_id, pending=told[0], decided=told[1], idle=idle)
        try:
            await workflow.get_external_workflow_handle(parent.workflow_id).signal(
                CHILD_WAITS_SIGNAL, report
            )
        except Exception:  # the parent has ended (it cancels us): nobody to tell
            workflow.logger.debug("run %s: its parent has ended", self.spec.run_id)

    async def _child(self, key: str, child: Awaitable[_T]) -> _T:
        """Await the child workflow of call ``key``, listing what waits in it meanwhile."""
        self.approvals.opened(key)
        try:
            return await child
        finally:
            self.approvals.closed(key)

    def _waited(self, directive_id: str) -> None:
        """``directive_id`` waits no more."""
        self.waits.discard(directive_id)
        self._resume_clock()
        self.wake.set()

    def _resume_clock(self) -> None:
        """Work goes on again: the deadline moves on by the time every directive waited."""
        if self.paused_at is not None:
            self.deadline += _now() - self.paused_at
            self.core.deadline = self.deadline
            self.paused_at = None

    def _poke(self) -> None:
        """Work done in a task (a sub-call's signals) may have given the core work."""
        core = self.core
        if core.to_perform or core.to_cancel or core.answered or core.finished:
            self.wake.set()

    # -- work out -------------------------------------------------------------------------

    def _pump(self) -> None:
        core = self.core
        while core.to_cancel or core.to_perform or core.answered:
            stopping, core.to_cancel = core.to_cancel or [], None
            for flight in stopping:
                if isinstance(flight.work, asyncio.Task):
                    flight.work.cancel()
            starting, core.to_perform = core.to_perform or [], None
            if starting and not self.tasks and should_continue(self.spec.options):
                carried = checkpoint_of(
                    core, starting, self.owner, self.family, self.spec.options.signal_tail
                )
                workflow.continue_as_new(
                    msgspec.structs.replace(self.spec, checkpoint=carried, salvage=self.salvage)
                )
            meter = self.family.meter
            for flight in starting:
                if flight.cancel_reason is None and meter is not None:
                    over = meter.admit(flight.directive)  # the call past a budget is not made
                    if over is not None:
                        core.cancel(over, _now())
                if flight.cancel_reason is not None:
                    core.finish(flight, None, _now())
                    continue
                self._start(flight)
            core.answered = None

    def _start(self, flight: Flight) -> None:
        d = flight.directive
        if isinstance(d, ToolExec):
            self.core.emit(
                flight,
                TOOL_STARTED,
                ToolStartedData(tool_name=d.tool_name, arguments=json_safe(d.arguments)),
            )
        if isinstance(d, RunChild) or (
            isinstance(d, ToolExec) and d.tool_name in self.family.agent_tools
        ):
            self.begun[d.id] = _now()
        if isinstance(d, RunChild):
            self.core.emit(
                flight,
                TOOL_STARTED,
                ToolStartedData(tool_name=d.agent, arguments=json_safe(d.input)),
            )
        if flight.done:  # the strategy's reaction to the start ended the run
            return
        task = asyncio.get_running_loop().create_task(self._perform(flight), name=d.id)
        flight.work = task
        self.tasks[task] = flight

    async def _perform(self, flight: Flight) -> ActivityOutcome | Ok[Any] | Err:
        d = flight.directive
        traceparent = flight.traceparent or self.spec.traceparent
        family = self.family
        if isinstance(d, RunChild):
            return await self._child(d.id, family.run_child(d, self.deadline, traceparent))
        guards = self.guards
        if guards is not None and guards.tool:
            if isinstance(d, ToolExec):
                checked = await self._check_tool(d)
                if isinstance(checked, Err):
                    return ActivityOutcome(error=checked.error)
                d = checked
            elif isinstance(d, RunProgram) and d.tool_names:
                error = guard_error(
                    GUARDRAIL_FAILED,
                    "tool",
                    "tool",
                    "tool guards do not check a program's tool calls on Temporal yet: run "
                    "this agent on the local Runtime, or without tool guards",
                )
                self.core.cancel(error, _now())
                self._poke()
                return ActivityOutcome(error=error.error)
        if isinstance(d, ToolExec) and d.tool_name in family.agent_tools:
            if family.agent_tools[d.tool_name].handoff:
                return await self._handoff(flight, d, from_program=False)
            return await self._child(
                d.id,
                family.agent_call(
                    d, from_program=False, deadline=self.deadline, traceparent=traceparent
                ),
            )
        now = _now()
        where = place(self.spec, self.tools, d, now, self.deadline)
        snapshot = None
        if isinstance(d, ToolExec) and where.tool is not None:
            try:
                snapshot = json_safe(self.core.snapshot(flight))
            except Exception as exc:
                name = self.core.name
                return _error(
                    INTERNAL,
                    f"strategy {name!r} raised {type(exc).__name__} in snapshot() while preparing "
                    f"the context of tool call {d.id!r}: {exc}",
                )
        call = ActivityCall(
            directive=Typed.of(d),
            run_id=self.core.run_id,
            parent_run_id=self.core.parent_run_id,
            tool=where.tool,
            tools=self._sub_tools(d),
            snapshot=snapshot,
            max_attempts=where.max_attempts,
            max_payload_bytes=self.spec.options.max_payload_bytes,
            agent_tools=self._agents_of(d),
            agent_path=(self.core.name,),
            price=isinstance(d, LLMGenerate) and self._prices,
        )
        if isinstance(d, RunProgram) and self.salvage is not None:
            call = msgspec.structs.replace(call, record=self.salvage)
            self.salvage = None
        limit = self.spec.options.max_payload_bytes
        if limit is not None:
            size = payload_size(call, limit)
            if size > limit:
                return _error(
                    PAYLOAD_TOO_LARGE,
                    f"{type(d).__name__} {d.id!r} takes {size} bytes compressed, more than the "
                    f"{limit} bytes a Temporal history event may hold: send less (shorter "
                    "history, smaller arguments), or keep large payloads in external storage "
                    "(see docs/temporal.md, Limits)",
                )
        if call.agent_tools:
            return await self._program(flight, call, where)
        options = self.spec.options
        if isinstance(d, LLMGenerate) and family.mission is not None:
            refused = family.take_turn(self.core.name)
            if refused is not None:
                return ActivityOutcome(error=refused)
            try:
                outcome = await perform_activity(d, call, where, options)
            except BaseException:
                family.give_back()
                raise
            if not answered(outcome, d.id):
                family.give_back()
            return outcome
        return await self._until_decided(flight, call, where)

    async def _until_decided(
        self, flight: Flight, call: ActivityCall, where: Placement
    ) -> ActivityOutcome:
        """Perform ``call``; while its calls wait for decisions, wait for them and perform
        it again with them."""
        d = flight.directive
        options = self.spec.options
        outcome = await perform_activity(d, call, where, options)
        rounds = 0
        while outcome.error is None and outcome.approvals:
            call = await self._decided(flight, call, outcome)
            rounds += 1
            where = place(self.spec, self.tools, d, _now(), self.deadline)
            outcome = await perform_activity(d, call, where, options, f"~d{rounds}")
        return outcome

    async def _decided(
        self, flight: Flight, call: ActivityCall, outcome: ActivityOutcome
    ) -> ActivityCall:
        """Publish the calls of ``flight`` that wait (``ai.approval.requested``), wait for
        their decisions (or their ``approval_timeout``); ``call`` with the decisions, and
        the record of the sub-calls completed."""
        d = flight.directive
        approvals = self.approvals
        published = self.published.setdefault(d.id, set())
        subs = self.subs.setdefault(d.id, {})
        publish_lines(self.core, self.terminals, flight, outcome.signals, _now(), published, subs)
        asked = outcome.approvals
        ids = [p.call_id for p in asked]
        for p in asked:
            approvals.waiting[p.call_id] = p
        approvals.publish()
        self.waits.add(d.id)
        self.wake.set()  # the main loop sees what waits (the run's clock may stop)
        try:
            while not all(i in approvals.given for i in ids):
                ends = [
                    e
                    for p in asked
                    if p.call_id not in approvals.given and (e := expiry_of(p)) is not None
                ]
                timeout = None if not ends else max(0.0, min(ends) - _now())
                try:
                    await workflow.wait_condition(
                        lambda: all(i in approvals.given for i in ids), timeout=timeout
                    )
                except TimeoutError:
                    now = _now()
                    for p in asked:
                        e = expiry_of(p)
                        if e is not None and e <= now + 0.01:
                            approvals.expire(p.call_id, EXPIRED)
                    approvals.publish()
        except GeneratorExit:  # the workflow leaves this worker's cache: not its end
            raise
        except BaseException:
            for i in ids:  # the run ends (cancelled): nobody decides these any more
                approvals.waiting.pop(i, None)
                approvals.given.pop(i, None)
            approvals.publish()
            self._waited(d.id)
            raise
        self._waited(d.id)
        decisions = {i: approvals.take(i) for i in ids}
        chosen = {i: v for i, v in decisions.items() if isinstance(v, Approve | Deny | Supply)}
        expired = tuple(i for i in ids if i not in chosen)
        record = outcome.record if outcome.record is not None else call.record
        return msgspec.structs.replace(
            call,
            decisions={**(call.decisions or {}), **chosen},
            expired=(*call.expired, *expired),
            record=record,
        )

    async def _program(
        self, flight: Flight, call: ActivityCall, where: Placement
    ) -> ActivityOutcome:
        """A program that may call agents used as tools, in rounds (see the module doc)."""
        d = flight.directive
        published = self.published.setdefault(d.id, set())
        rounds = 0
        while True:
            outcome = await perform_activity(
                d,
                call,
                where,
                self.spec.options,
                f"~r{rounds}" if rounds else "",
            )
            if outcome.error is None and outcome.approvals:
                call = await self._decided(flight, call, outcome)
                rounds += 1
                where = place(self.spec, self.tools, d, _now(), self.deadline)
                continue
            if not outcome.pending or outcome.error is not None:
                return outcome
            rounds += 1
            publish_lines(self.core, self.terminals, flight, outcome.signals, _now(), published)
            self._poke()
            record = decode_record([outcome.record]) if outcome.record is not None else {}
            pending = outcome.pending
            lines = await asyncio.gather(*(self._agent_call(flight, p, published) for p in pending))
            for p, line in zip(pending, lines, strict=True):
                record[p.index] = Recorded(
                    index=p.index, name=p.name, arguments=p.arguments, result=line
                )
            call = msgspec.structs.replace(call, record=encode_record(record))

    async def _agent_call(self, flight: Flight, p: PendingCall, published: set[str]) -> Any:
        """One pending call of a suspended program: its signals, its child workflow; the
        ``ai.tool.result`` line of its record."""
        d = flight.directive
        core = self.core
        sub_d = ToolExec(
            id=f"{d.id}/tool/{p.index}",
            tool_name=p.name,
            arguments=p.arguments,
            request_id=d.request_id,
            iteration=d.iteration,
        )
        sub = core.open_subcall(flight, sub_d)
        sub.traceparent = flight.traceparent
        published.add(sub_d.id)
        core.emit(sub, TOOL_STARTED, ToolStartedData(tool_name=p.name, arguments=p.arguments))
        self._poke()
        began = _now()
        running = self.rounds.setdefault(d.id, set())
        running.add(sub_d.id)
        try:
            if self.family.agent_tools[p.name].handoff:
                result = await self._handoff(sub, sub_d, from_program=True)
            else:
                result = await self._child(
                    sub_d.id,
                    self.family.agent_call(
                        sub_d,
                        from_program=True,
                        deadline=self.deadline,
                        traceparent=flight.traceparent or self.spec.traceparent,
                    ),
                )
        finally:
            running.discard(sub_d.id)
        now = _now()
        ms = (now - began) * 1000.0
        core.finish(sub, result, now, duration_ms=ms)
        self._poke()
        data = ToolResultData(tool_name=p.name, result=result, duration_ms=ms)
        line = Signal(type=TOOL_RESULT, source="ptcflow", id="", time="", data=data)
        return msgspec.Raw(encode_signal(line))

    async def _handoff(self, flight: Flight, d: ToolExec, *, from_program: bool) -> Ok[Any] | Err:
        """A handoff call: the conversation as it stands (the strategy's), ``ai.handoff``
        emitted on ``flight``, the next agent's child workflow (``Family.handoff_call``)."""
        core = self.core
        kept = getattr(core.strategy, "conversation", None)
        conversation = tuple(kept(core.state)) if kept is not None else ()

        def emit(data: HandoffData) -> None:
            core.emit(flight, HANDOFF, data)
            self._poke()

        return await self.family.handoff_call(
            d,
            conversation,
            caller=core.name,
            from_program=from_program,
            deadline=self.deadline,
            traceparent=flight.traceparent or self.spec.traceparent,
            emit=emit,
        )

    def _agents_of(self, d: Directive) -> tuple[str, ...]:
        """The agents used as tools a program may call (suspending it)."""
        if not isinstance(d, RunProgram) or not self.family.agent_tools:
            return ()
        return tuple(n for n in d.tool_names if n in self.family.agent_tools)

    def _sub_tools(self, d: Directive) -> tuple[ToolRef, ...]:
        """The tools ``d``'s sub-calls may call: a program's own, all the run's for a
        custom kind; none for a model call or a tool call."""
        if isinstance(d, ToolExec | LLMGenerate | LLMEmbed):
            return ()
        if isinstance(d, RunProgram):
            return tuple(self.tools[n] for n in d.tool_names if n in self.tools)
        return tuple(self.tools.values())

    # -- guardrails ------------------------------------------------------------------------

    async def _guard(
        self, stage: str, value: Any, key: str, tool: str | None = None
    ) -> tuple[Any, Err | None, list[dict[str, Any]]]:
        """Run ``stage``'s guards on ``value`` one after the other, each on a worker; the
        value (rewritten or not), the error of the first trip or failure, the records."""
        guards = self.guards
        assert guards is not None
        core = self.core
        info = {"run_id": core.run_id, "agent": core.name, "stage": stage, "tool": tool}
        ref = ToolRef(
            name=GUARD_TOOL,
            path=_RUN_GUARD,
            blocking=False,
            timeout_ms=int(guards.timeout_s * 1000) + 30_000,
            max_retries=0,
        )
        records: list[dict[str, Any]] = []
        for i, path in enumerate(getattr(guards, stage)):
            d = ToolExec(
                id=f"{key}/guard/{stage}/{i}",
                tool_name=GUARD_TOOL,
                arguments={
                    "guard": path,
                    "stage": stage,
                    "value": json_safe(value),
                    "info": info,
                    "timeout_s": guards.timeout_s,
                },
                request_id=core.request_id,
                max_retries=0,
            )
            where = place(self.spec, {GUARD_TOOL: ref}, d, _now(), self.deadline)
            call = ActivityCall(
                directive=Typed.of(d),
                run_id=core.run_id,
                parent_run_id=core.parent_run_id,
                tool=ref,
                max_attempts=where.max_attempts,
                max_payload_bytes=self.spec.options.max_payload_bytes,
            )
            outcome = await perform_activity(d, call, where, self.spec.options)
            name = path.rpartition(":")[2].rpartition(".")[2]
            result: Any = outcome.error and Err(error=outcome.error)
            for signal in decode_lines(outcome.signals):
                if signal.type == TOOL_RESULT and isinstance(signal.data, ToolResultData):
                    result = signal.data.result
            answer = result.payload if isinstance(result, Ok) else None
            if not isinstance(answer, dict) or not isinstance(answer.get("record"), dict):
                why = result.error.message if isinstance(result, Err) else "no answer"
                reason = f"its worker failed: {why}"
                record = {"guard": name, "stage": stage, "verdict": GUARDRAIL_FAILED}
                records.append({**record, "reason": reason})
                return value, guard_error(GUARDRAIL_FAILED, name, stage, reason), records
            record = answer["record"]
            records.append(record)
            verdict = record.get("verdict")
            if verdict in (GUARDRAIL_TRIPPED, GUARDRAIL_FAILED):
                error = guard_error(
                    str(verdict), str(record["guard"]), stage, str(record.get("reason", ""))
                )
                return value, error, records
            if verdict == "rewrite":
                value = answer.get("value")
        return value, None, records

    def _publish(self, records: list[dict[str, Any]]) -> None:
        """The ``ai.guardrail`` signals of ``records`` (while the run runs)."""
        core = self.core
        if core.started_at and not core.finished:
            for record in records:
                core.emit(None, GUARDRAIL, record)
        self._poke()

    async def _check_input(self) -> None:
        """The input guards, before the run starts (they may rewrite its input)."""
        core = self.core
        value, error, records = await self._guard("input", core.input, core.run_id)
        core.input = value
        core.start(_now())
        self._publish(records)
        if error is not None:
            core.cancel(error, _now())

    async def _check_tool(self, d: ToolExec) -> ToolExec | Err:
        """The tool guards of ``d``: ``d`` (its arguments rewritten or not), or the error
        of a trip or failure (the run is cancelled with it)."""
        value = {"tool": d.tool_name, "arguments": d.arguments}
        new, error, records = await self._guard("tool", value, d.id, d.tool_name)
        self._publish(records)
        if error is None and new is not value:
            arguments = new.get("arguments") if isinstance(new, dict) else None
            if not isinstance(arguments, dict):
                error = guard_error(
                    GUARDRAIL_FAILED,
                    "tool",
                    "tool",
                    "a tool guard's Rewrite must hold {'tool': ..., 'arguments': {...}}",
                )
            else:
                d = msgspec.structs.replace(d, arguments=arguments)
        if error is not None:
            self.core.cancel(error, _now())
            self._poke()
            return error
        return d

    async def _check_output(self) -> None:
        """The output guards of the run's held successful end: publish each verdict
        (before the end signal), then release the end with the value, a rewrite or the
        guard's error."""
        core = self.core
        result = core.ending_result
        assert isinstance(result, Ok)  # only a successful end is held
        try:
            value, error, records = await self._guard("output", result.payload, core.run_id)
        except asyncio.CancelledError:
            core.cancel(cancelled(f"run {core.run_id} ({core.name}) was cancelled"), _now())
            return
        for record in records:
            core.emit(None, GUARDRAIL, record)
        if error is not None:
            core.release(error, _now())
        elif value is not result.payload:
            core.release(Ok(payload=value), _now())
        else:
            core.release(None, _now())

    # -- events in --------------------------------------------------------------------------

    def _settle(self, flight: Flight, task: asyncio.Task[Any], now: float) -> None:
        core = self.core
        if task.cancelled():
            core.finish(flight, None, now)
            return
        exc = task.exception()
        if exc is not None:
            if isinstance(exc, asyncio.CancelledError):
                core.finish(flight, None, now)
                return
            raise exc  # a bug in this module: fail the workflow task, keep the history
        outcome = task.result()
        d = flight.directive
        if isinstance(outcome, Ok | Err):  # a child run's outcome
            started = self.begun.pop(d.id, now)
            core.finish(flight, outcome, now, duration_ms=(now - started) * 1000.0)
            meter = self.family.meter
            if meter is not None and (over := meter.over()) is not None:
                core.cancel(over, now)  # concurrent children passed the budget together
            return
        if outcome.error is not None:
            if isinstance(d, RunProgram) and outcome.record is not None:
                self.salvage = outcome.record  # its workers were lost: see ``salvage``
            core.finish(flight, Err(error=outcome.error), now, attempts=outcome.attempt)
            return
        meter = self.family.meter
        usage = _response_usage(outcome, d.id) if isinstance(d, LLMGenerate) else None
        if meter is not None and meter.checks_tokens and usage is not None:
            # counted before the strategy sees the response, as locally: a response past
            # a token or cost budget is answered with the error (its tokens still count)
            model = outcome.model if outcome.priced else core.name
            over = meter.charge(model, usage, outcome.cost_usd)
            if over is not None:
                before = core.usage
                core.cancel(over, now)
                report(core, self.terminals, flight, outcome, now)
                if core.usage is before:
                    core.usage = core.usage + usage
                return
        report(
            core,
            self.terminals,
            flight,
            outcome,
            now,
            self.published.pop(d.id, None),
            self.subs.pop(d.id, None),
        )


_RUN_GUARD = path_of(run_guard, "the guardrail runner")


def _response_usage(outcome: ActivityOutcome, call_id: str) -> Usage | None:
    """The usage of the model response ``outcome`` carries (``None``: none, an error)."""
    for line in reversed(outcome.signals):
        s = decode_signal(bytes(line))
        if s.call_id == call_id and s.type in TERMINAL_TYPES:
            result = s.data.result
            usage = getattr(result.payload, "usage", None) if isinstance(result, Ok) else None
            return usage if isinstance(usage, Usage) else None
    return None


def _error(kind: str, message: str) -> ActivityOutcome:
    return ActivityOutcome(error=ErrorEnvelope.make(kind, message, retryable=False))
