"""The loop inside the ``ptcflow.run`` workflow (see ``_workflow.py``): :class:`Driver`.

After every event it takes the run core's work lists, starts each new directive as an
activity (a child workflow for ``RunChild``), cancels what the core interrupts, and reports
each outcome (``core.finish``), in the order the work started; it continues the workflow
as new at a quiet moment when its history grows long. Only ``temporalio.workflow`` and
asyncio: time is ``workflow.now()``, ids come from the workflow's seeded random.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any, Protocol

import msgspec
from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError, ChildWorkflowError

from ptcflow.directives import Directive, LLMEmbed, LLMGenerate, RunChild, RunProgram, ToolExec
from ptcflow.runtime._core import Flight, RunCore
from ptcflow.runtime._flight import cancelled
from ptcflow.runtime._terminals import TerminalTable, journal_safe
from ptcflow.signals import (
    INTERNAL,
    TOOL_STARTED,
    UNKNOWN_TOOL,
    Err,
    ErrorEnvelope,
    Ok,
    Signal,
    ToolStartedData,
    json_safe,
)
from ptcflow.temporal._activities import PAYLOAD_TOO_LARGE, PERFORM
from ptcflow.temporal._placement import failure_of, is_lost_worker, last_heartbeat, place
from ptcflow.temporal._refs import ToolRef
from ptcflow.temporal._report import report
from ptcflow.temporal._spec import (
    ActivityCall,
    ActivityOutcome,
    Checkpoint,
    RunResult,
    RunSpec,
    Typed,
    decode_lines,
    encode_lines,
    payload_size,
)

__all__ = ("RUN_WORKFLOW", "Driver", "Observer")

RUN_WORKFLOW = "ptcflow.run"
"""The workflow type of a run (its child runs too)."""


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

    def __init__(self, owner: Observer, spec: RunSpec, strategy: Any) -> None:
        self.owner = owner
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
        )
        self.tasks: dict[asyncio.Task[Any], Flight] = {}
        self.begun: dict[str, float] = {}

    async def drive(self) -> RunResult:
        core = self.core
        checkpoint = self.spec.checkpoint
        if checkpoint is None:
            core.start(_now())
        else:
            self._resume(checkpoint)
        while core.step is None:
            self._pump()
            if core.finished:
                break
            if not self.tasks:
                continue
            timeout = None if self.deadline == math.inf else max(0.0, self.deadline - _now())
            try:
                done, _ = await workflow.wait(
                    list(self.tasks), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
            except asyncio.CancelledError:
                core.cancel(cancelled(f"run {core.run_id} ({core.name}) was cancelled"), _now())
                continue
            now = _now()
            if not done:
                core.expire(now)
                continue
            for task in [t for t in self.tasks if t in done]:  # in start order
                flight = self.tasks.pop(task)
                self._settle(flight, task, now)
        for task in self.tasks:  # nothing outlives the run
            task.cancel()
        step = core.step
        assert step is not None
        value = json_safe(step.value)
        step = msgspec.structs.replace(step, value=value, signals=())
        lines = encode_lines(core.recorded) if core.recorded is not None else ()
        return RunResult(step=step, signals=lines)

    # -- work out -------------------------------------------------------------------------

    def _pump(self) -> None:
        core = self.core
        while core.to_cancel or core.to_perform or core.answered:
            stopping, core.to_cancel = core.to_cancel or [], None
            for flight in stopping:
                if isinstance(flight.work, asyncio.Task):
                    flight.work.cancel()
            starting, core.to_perform = core.to_perform or [], None
            if starting and not self.tasks and self._should_continue():
                self._continue_as_new(starting)
            for flight in starting:
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
        elif isinstance(d, RunChild):
            self.begun[d.id] = _now()
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
        if isinstance(d, RunChild):
            return await self._child(flight, d)
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
        )
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
        lost = 0
        while True:
            suffix = f"~{lost + 1}" if lost else ""
            try:
                if where.local:
                    outcome: ActivityOutcome = await workflow.execute_local_activity(
                        PERFORM,
                        call,
                        result_type=ActivityOutcome,
                        activity_id=d.id + suffix,
                        schedule_to_close_timeout=where.schedule_to_close,
                        start_to_close_timeout=where.start_to_close,
                        retry_policy=where.retry,
                    )
                    return outcome
                outcome = await workflow.execute_activity(
                    PERFORM,
                    call,
                    result_type=ActivityOutcome,
                    task_queue=where.task_queue,
                    activity_id=d.id + suffix,
                    schedule_to_close_timeout=where.schedule_to_close,
                    start_to_close_timeout=where.start_to_close,
                    heartbeat_timeout=where.heartbeat,
                    retry_policy=where.retry,
                    summary=f"{type(d).__name__} {getattr(d, 'tool_name', '')}".strip(),
                )
                return outcome
            except ActivityError as exc:
                if isinstance(exc.cause, CancelledError):
                    raise asyncio.CancelledError from None
                if is_lost_worker(exc) and lost < self.spec.options.lost_worker_retries:
                    lost += 1
                    details = last_heartbeat(exc)
                    if details is not None:  # the sub-calls it completed: not again
                        call = msgspec.structs.replace(call, record=details)
                    continue
                return ActivityOutcome(error=failure_of(d, exc, lost + 1).error)

    def _sub_tools(self, d: Directive) -> tuple[ToolRef, ...]:
        """The tools ``d``'s sub-calls may call: a program's own, all the run's for a
        custom kind; none for a model call or a tool call."""
        if isinstance(d, ToolExec | LLMGenerate | LLMEmbed):
            return ()
        if isinstance(d, RunProgram):
            return tuple(self.tools[n] for n in d.tool_names if n in self.tools)
        return tuple(self.tools.values())

    async def _child(self, flight: Flight, d: RunChild) -> ActivityOutcome | Ok[Any] | Err:
        spec = self.spec
        agent = spec.agents.get(d.agent)
        if agent is None:
            known = ", ".join(spec.agents) or "none"
            return _error(
                UNKNOWN_TOOL,
                f"RunChild {d.id!r} names agent {d.agent!r}, which this run does not have; "
                f"agents: {known} (pass agents={{name: strategy}} to rt.run)",
            )
        deadline = self.deadline
        if d.timeout_ms is not None:
            deadline = min(deadline, _now() + d.timeout_ms / 1000.0)
        child_id = f"{spec.run_id}/{d.id}"
        child = msgspec.structs.replace(
            spec,
            agent=agent,
            input=d.input,
            run_id=child_id,
            request_id=d.request_id or self.core.request_id,
            parent_run_id=spec.run_id,
            name=d.agent,
            deadline=None if deadline == math.inf else deadline,
            record=False,
            traceparent=flight.traceparent or spec.traceparent,
            checkpoint=None,
        )
        self.owner.add_child(child_id)
        try:
            result = await workflow.execute_child_workflow(
                RUN_WORKFLOW,
                child,
                id=child_id,
                result_type=RunResult,
                task_queue=spec.options.task_queue,
                cancellation_type=workflow.ChildWorkflowCancellationType.TRY_CANCEL,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            )
        except ChildWorkflowError as exc:
            if isinstance(exc.cause, CancelledError):  # we cancelled it: the reason is ours
                raise asyncio.CancelledError from None
            return ActivityOutcome(error=failure_of(d, exc, 0).error)
        step = result.step
        if step.ok:
            return journal_safe(Ok(payload=step.value))
        return Err(error=step.error or _unknown())

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
            return
        if outcome.error is not None:
            core.finish(flight, Err(error=outcome.error), now, attempts=outcome.attempt)
            return
        report(core, self.terminals, flight, outcome, now)

    # -- continue-as-new ---------------------------------------------------------------------

    def _should_continue(self) -> bool:
        info = workflow.info()
        limit = self.spec.options.continue_as_new_events
        if limit is not None:
            return info.get_current_history_length() >= limit
        return info.is_continue_as_new_suggested()

    def _continue_as_new(self, pending: list[Flight]) -> None:
        core = self.core
        tail = self.spec.options.signal_tail
        lines = self.owner.tail(tail)
        checkpoint = Checkpoint(
            state=Typed.of(core.state),
            pending=tuple(Typed.of(f.directive) for f in pending),
            seq=core.seq,
            usage=core.usage,
            turns=core.turns,
            tool_calls=core.tool_calls,
            started_at=core.started_at,
            signals=tuple(lines),
            recorded=encode_lines(core.recorded) if core.recorded is not None else (),
            children=self.owner.children,
        )
        workflow.continue_as_new(msgspec.structs.replace(self.spec, checkpoint=checkpoint))

    def _resume(self, checkpoint: Checkpoint) -> None:
        core = self.core
        self.owner.carry(checkpoint.signals, checkpoint.children)
        if core.recorded is not None:
            core.recorded.extend(decode_lines(checkpoint.recorded))
        pending: list[Directive] = [p.value() for p in checkpoint.pending]
        core.resume(
            _now(),
            state=checkpoint.state.value(),
            directives=pending,
            seq=checkpoint.seq,
            usage=checkpoint.usage,
            turns=checkpoint.turns,
            tool_calls=checkpoint.tool_calls,
            started_at=checkpoint.started_at,
        )


def _error(kind: str, message: str) -> ActivityOutcome:
    return ActivityOutcome(error=ErrorEnvelope.make(kind, message, retryable=False))


def _unknown() -> ErrorEnvelope:
    return ErrorEnvelope.make(INTERNAL, "the child run failed without an error")
