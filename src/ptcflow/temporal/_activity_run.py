"""One directive performed inside an activity, by the local executor's own code.

An activity runs the directive as a tiny run of the local driver (:class:`ActivityRun`, which
holds a ``LocalRun``): its strategy asks for the one directive and ends when its terminal signal is
out. So the directive's kind, its attempt timeout, the concurrency limits, sync tools in
worker threads, its span and its sub-calls are exactly what a local Runtime does; only the
retries are Temporal's (one attempt per activity execution). Every signal the directive
publishes is collected as a journal line for the workflow, which publishes them again with
the run's own numbering.

Sub-calls (tool calls a handler makes with ``ctx.call_tool``, a program's calls) are
recorded as they complete and heartbeated: an attempt that runs again after its worker was
lost answers the calls its record holds (same index, same tool, same arguments) from the
record, calling no completed tool again (:class:`ResumingPerformer`).

A program's call of an agent used as a tool is not performed here: only the workflow can
start the child workflow that runs it. The call waits, and once the program waits on
nothing else (all its calls in flight are agent calls) the activity *suspends*: it ends
with the pending calls and its record, the workflow runs the children and runs the program
again with their results in the record (see ``_drive``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import msgspec

from ptcflow.core import Outcome, RunCore, RunInfo, TerminalTable
from ptcflow.directives import Directive, ToolExec
from ptcflow.errors import UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime import Step
from ptcflow.runtime.lowlevel import DirectiveContext, Executor, LocalRun, Toolbox
from ptcflow.signals import (
    TOOL_RESULT,
    TOOL_STARTED,
    Err,
    ErrorEnvelope,
    Ok,
    Signal,
    ToolResultData,
    ToolStartedData,
    Usage,
    decode_signal,
    encode_signal,
    json_safe,
)
from ptcflow.temporal._spec import PendingCall

__all__ = (
    "NO_CHILD",
    "ActivityRun",
    "Recorded",
    "ResumingPerformer",
    "last_terminal_type",
    "suspend_when_blocked",
)

NO_CHILD = (
    "an agent used as a tool (a ChildTool) cannot run inside an activity: its run is a child "
    "workflow, which only the workflow can start. Do not host agent tools on a worker "
    "(ptcflow worker --tools); give them to the run's tools (TemporalRuntime(tools=...) or "
    "the agent's own), whose calls the workflow runs as child workflows"
)
"""The error of an agent tool hosted by a worker, called by a run that does not know it."""

_DONE = Outcome(result=Ok(payload=None), usage=Usage())


class Recorded(msgspec.Struct, frozen=True, kw_only=True):
    """A completed sub-call: its index, tool, arguments and ``ai.tool.result`` line."""

    index: int
    name: str
    arguments: Any
    result: msgspec.Raw


_RECORD_ENCODER = msgspec.json.Encoder()
_RECORD_DECODER = msgspec.json.Decoder(tuple[Recorded, ...])


def encode_record(record: Mapping[int, Recorded]) -> bytes:
    """The heartbeat details of a record."""
    return _RECORD_ENCODER.encode(tuple(record.values()))


def decode_record(details: Any) -> dict[int, Recorded]:
    """A record from heartbeat details (empty when there are none)."""
    if not details or not isinstance(details[0], bytes):
        return {}
    return {r.index: r for r in _RECORD_DECODER.decode(details[0])}


def last_terminal_type(terminals: TerminalTable, d: Directive) -> str:
    """The type of the last terminal signal of ``d``'s class."""
    probe = Err(error=ErrorEnvelope.make("internal", "probe"))
    return str(terminals[type(d)](d, probe, 1, 0.0)[-1][0])


class _Single:
    """The strategy of an activity's run: the one directive, done at its terminal. Its
    snapshot is the one the workflow took when the strategy emitted the directive."""

    name = "activity"

    def __init__(self, directive: Directive, last: str, snapshot: Any) -> None:
        self.directive = directive
        self.last = last
        self.given_snapshot = snapshot

    def init(self, run: RunInfo) -> tuple[bool, list[Directive]]:
        return False, [self.directive]

    def handle(self, state: bool, signal: Signal) -> tuple[bool, list[Directive]]:
        if signal.type == self.last and signal.call_id == self.directive.id:
            return True, []
        return state, []

    def outcome(self, state: bool) -> Outcome | None:
        return _DONE if state else None

    def snapshot(self, state: bool) -> Any:
        return self.given_snapshot


class ActivityRun:
    """The local driver's run of one directive inside an activity (see the module doc).

    It holds what it reuses: a :class:`~ptcflow.runtime.lowlevel.LocalRun` of the one
    directive (not counted as a run of the worker: :meth:`start` starts it without
    :meth:`~ptcflow.runtime.lowlevel.LocalRun.begin`) and the
    :class:`ResumingPerformer` that performs it; it collects the run's signals as journal
    lines for the workflow.

    Args:
        directive: the directive to perform.
        inner: the worker's performer.
        record / on_record / agents: the sub-calls' record (see :class:`ResumingPerformer`).
        executor / tools / llm / terminals: the run's
            (see ``LocalRun``).
        run_id / parent_run_id: the workflow's run.
        snapshot: the strategy's snapshot, taken by the workflow when it emitted the
            directive (what tools taking a context receive).
        decisions: the decisions on calls that waited for one, by call id (applied
            where each call starts, as ``rt.resume`` does).
    """

    __slots__ = (
        "calls",
        "lines",
        "performed",
        "performer",
        "results",
        "run",
        "skip_started",
        "top_id",
    )

    def __init__(
        self,
        directive: Directive,
        *,
        inner: Any,
        record: dict[int, Recorded],
        on_record: Callable[[dict[int, Recorded]], None],
        agents: frozenset[str] = frozenset(),
        executor: Executor,
        tools: Toolbox,
        llm: ModelSource | None,
        run_id: str,
        parent_run_id: str | None,
        snapshot: Any,
        terminals: TerminalTable,
        decisions: dict[str, Any] | None = None,
    ) -> None:
        self.lines: list[msgspec.Raw] = []
        self.calls: list[str] = []
        """The ``call_id`` of each line."""
        self.results: dict[str, msgspec.Raw] = {}
        """The ``ai.tool.result`` line of each call (the sub-calls' records)."""
        self.performed: DirectiveContext | None = None
        """The directive's context, once the run has started."""
        self.top_id = directive.id
        self.skip_started = isinstance(directive, ToolExec)
        self.performer = ResumingPerformer(inner, record, on_record, agents, self.results)
        core: RunCore[DirectiveContext] = RunCore(
            _Single(directive, last_terminal_type(terminals, directive), snapshot),
            None,
            run_id=run_id,
            parent_run_id=parent_run_id,
            tool_specs=tools.specs,
            publish=self._collect,
            terminals=terminals,
            log=executor.log,
        )
        self.run = LocalRun(
            core,
            executor=executor,
            performer=self.performer,
            tools=tools,
            llm=llm,
            agents={},
        )
        self.run.decisions = decisions

    def start(self, now: float) -> None:
        """Start the run: its one directive goes to the driver (``drive(self.run)``)."""
        run = self.run
        run.start(now)
        # The core accepted the one directive (the workflow's core checked its fields
        # already, so it is not answered at once): the driver performs it, in one attempt
        # (Temporal retries it; its sub-calls keep their own retries).
        ctx = self.performed = run.ready
        assert ctx is not None
        ctx.no_retry = True

    def _collect(self, signal: Signal) -> None:
        if signal.call_id is None:  # the activity run's own start and end
            return
        if self.skip_started and signal.type == TOOL_STARTED and signal.call_id == self.top_id:
            return  # the workflow published it when it scheduled the activity
        line = msgspec.Raw(encode_signal(signal))
        self.lines.append(line)
        self.calls.append(signal.call_id)
        if signal.type == TOOL_RESULT:
            self.results[signal.call_id] = line


class ResumingPerformer:
    """A performer whose sub-calls are recorded, and answered from the record of an
    earlier attempt when it holds them (see the module docstring).

    Args:
        inner: the worker's performer.
        record: the completed sub-calls of earlier attempts, by index.
        on_record: called after each new completed sub-call (heartbeats the record).
        agents: the agents used as tools a program may call: a call of one not in the
            record waits, pending (see the module docstring).
        results: the ``ai.tool.result`` line of each call published so far, by
            ``call_id`` (what :class:`ActivityRun` collects).
    """

    def __init__(
        self,
        inner: Any,
        record: dict[int, Recorded],
        on_record: Callable[[dict[int, Recorded]], None],
        agents: frozenset[str] = frozenset(),
        results: Mapping[str, msgspec.Raw] | None = None,
    ) -> None:
        self.inner = inner
        self.results: Mapping[str, msgspec.Raw] = {} if results is None else results
        self.record = record
        self.on_record = on_record
        self.agents = agents
        self.replayed = 0
        self.indexes: set[int] = set()
        """The indexes the handler gave ``call_tool`` in this attempt."""
        self.pending: dict[int, PendingCall] = {}
        """The agent calls waiting for the workflow, by index."""
        self.in_flight = 0
        self.blocked = anyio.Event()
        """Set when every call in flight is a pending agent call."""
        self.suspended = False

    @property
    def waiting_on_agents_only(self) -> bool:
        """True when calls wait and all of them are agent calls."""
        return bool(self.pending) and self.in_flight <= len(self.pending)

    def spawn(self, ctx: DirectiveContext) -> None:
        """Perform ``ctx`` in a task of the worker's task group."""
        self.inner.spawn(ctx)

    async def perform(self, ctx: DirectiveContext) -> Ok[Any] | Err | None:
        """Perform ``ctx`` in the current task."""
        result: Ok[Any] | Err | None = await self.inner.perform(ctx)
        return result

    async def run_child(self, ctx: DirectiveContext, strategy: Any, input: Any) -> Step:
        """Child runs are child workflows, never performed in an activity.

        Raises:
            UsageError: always (an agent used as a tool, hosted by a worker).
        """
        raise UsageError(NO_CHILD)

    async def call_tool(
        self, parent: DirectiveContext, name: str, arguments: Mapping[str, Any], index: int
    ) -> Ok[Any] | Err:
        """Answer from the record when it holds this call, else call and record it (an
        agent call waits for the workflow instead: see the module docstring).

        Raises:
            UsageError: ``index`` was given already in this attempt.
        """
        self.in_flight += 1
        try:
            return await self._call_tool(parent, name, arguments, index)
        finally:
            self.in_flight -= 1
            if self.waiting_on_agents_only:
                self.blocked.set()

    async def _call_tool(
        self, parent: DirectiveContext, name: str, arguments: Mapping[str, Any], index: int
    ) -> Ok[Any] | Err:
        given: Any = index  # from a handler: a bad one is the inner performer's to report
        number = given if isinstance(given, int) else None
        if number in self.indexes:
            raise UsageError(
                f"call_tool(index={index}) was used already by {parent.directive.id!r}; "
                "number the calls in the order they are issued, each number once"
            )
        arguments_json = json_safe(arguments)
        done = self.record.get(index)
        if number is not None:
            self.indexes.add(number)
        if done is not None and done.name == name and done.arguments == arguments_json:
            return self._replay(parent, done)
        if name in self.agents and number is not None:
            self.pending[number] = PendingCall(index=number, name=name, arguments=arguments_json)
            if self.waiting_on_agents_only:
                self.blocked.set()
            await anyio.sleep_forever()  # until the activity suspends (cancelled)
        result: Ok[Any] | Err = await self.inner.call_tool(parent, name, arguments, index)
        line = self.results.get(f"{parent.directive.id}/tool/{index}")
        if line is not None and not parent.done:
            self.record[index] = Recorded(
                index=index, name=name, arguments=arguments_json, result=line
            )
            self.on_record(self.record)
        return result

    def _replay(self, parent: DirectiveContext, done: Recorded) -> Ok[Any] | Err:
        """Publish a recorded call's signals again, without calling the tool."""
        self.replayed += 1
        d = parent.directive
        data = decode_signal(bytes(done.result)).data
        assert isinstance(data, ToolResultData)
        arguments = done.arguments if isinstance(done.arguments, dict) else {}
        sub = ToolExec(
            id=f"{d.id}/tool/{done.index}",
            tool_name=done.name,
            arguments=arguments,
            request_id=d.request_id,
            iteration=d.iteration,
        )
        run = parent.run
        ctx = run.open_subcall(parent, sub)
        if not ctx.done:
            ctx.emit(TOOL_STARTED, ToolStartedData(tool_name=done.name, arguments=arguments))
            run.finish(
                ctx,
                data.result,
                run.executor.clock(),
                attempts=data.attempts,
                duration_ms=data.duration_ms,
            )
        final = ctx.result
        assert final is not None
        return final


async def suspend_when_blocked(performer: ResumingPerformer, program: anyio.CancelScope) -> None:
    """Cancel ``program`` (the activity's run) once it waits on agent calls only.

    A ``pmap`` issues its calls from tasks that start one after the other: the check is
    made again after a few scheduling rounds, so that its agent calls are all pending (and
    run concurrently as child workflows) before the program is suspended.
    """
    while True:
        await performer.blocked.wait()
        for _ in range(_SETTLE_ROUNDS):
            await anyio.lowlevel.checkpoint()
        if performer.waiting_on_agents_only:
            performer.suspended = True
            program.cancel()
            return
        performer.blocked = anyio.Event()  # no await since the check: nothing missed


_SETTLE_ROUNDS = 8
