"""The activities a ``ptcflow worker`` hosts: :class:`ActivityHost`.

One activity type, ``ptcflow.perform``, performs one attempt of any side-effect directive
(model calls, tools, custom kinds, programs) with the local executor's code
(``_activity_run.py``). Its result is an :class:`ActivityOutcome` (the directive's signals,
its terminal last); a retryable failure that has attempts left is raised as a retryable
``ApplicationError`` so that Temporal retries it with the directive's backoff, honouring a
provider's ``Retry-After``; every other failure is returned as the terminal signal itself.
While it works the activity heartbeats (its sub-calls' record as details), so a lost worker
is noticed within the heartbeat timeout and cancellation reaches it. A program that waits
on agents used as tools only is suspended: its outcome names the pending calls
(``_activity_run``). A directive whose calls wait for a person (a tool that requires
approval, a deferred tool; the predicate is user code, so it runs here, not in the
workflow) ends with those calls (``approvals``) and its record instead of a result; the
workflow performs it again with the decisions (``ActivityCall.decisions``).
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import anyio
import msgspec
from temporalio import activity
from temporalio.exceptions import ApplicationError

from ptcflow.core import TerminalTable
from ptcflow.directives import Directive, LLMGenerate
from ptcflow.errors import UsageError
from ptcflow.providers import ModelPrice, ModelSource, PriceTable
from ptcflow.runtime import UNSET, Limits, RetryPolicy, Telemetry, Unset
from ptcflow.runtime.lowlevel import (
    EXPIRED,
    Executor,
    Performer,
    Toolbox,
    current_context,
    drive,
)
from ptcflow.signals import UNKNOWN_TOOL, Err, ErrorEnvelope, Ok, PendingCall as WaitingCall
from ptcflow.temporal._activity_run import (
    NO_CHILD,
    ActivityRun,
    Recorded,
    ResumingPerformer,
    decode_record,
    encode_record,
    suspend_when_blocked,
)
from ptcflow.temporal._refs import ToolRef
from ptcflow.temporal._spec import ActivityCall, ActivityOutcome, PendingCall, payload_size

__all__ = ("PAYLOAD_TOO_LARGE", "PERFORM", "ActivityHost")

PERFORM = "ptcflow.perform"
"""The activity type of every side-effect directive."""
PAYLOAD_TOO_LARGE = "payload_too_large"
"""The error type of a directive whose result is too large for Temporal's history."""


_KEEP = 4_096
"""Finished attempts' work a worker keeps for a later attempt that asks for it (the
latest to end)..."""
_ORPHAN_S = 600.0
"""How long a worker keeps running an attempt the server gave up, with no start-to-close
timeout to bound it, unless a later attempt adopts it (seconds)."""
_KEEP_S = 300.0
"""... for at most this long after it ended (seconds)."""


class _Work:
    """The work of one attempt on this worker. It runs in the worker's task group, not in
    the activity's task: when the server gives the attempt up while the worker lives (the
    server was down, or the network, for longer than the heartbeat timeout) the work goes
    on, and the attempt the workflow then sends to this worker's own queue (its
    ``previous``) adopts it: its calls in flight are not run twice, its result is not lost."""

    __slots__ = ("done", "ended", "error", "keys", "performer", "recorded", "run", "scope")

    def __init__(self, run: ActivityRun, performer: ResumingPerformer) -> None:
        self.run = run
        self.performer = performer
        self.done = anyio.Event()
        self.recorded = anyio.Event()
        self.error: Exception | None = None
        self.scope = anyio.CancelScope()
        self.ended: float | None = None
        self.keys: list[tuple[str | None, str]] = []
        """The attempts it answers for: (workflow id, activity id)."""


class ActivityHost:
    """The activities of one worker process, sharing its executor (limits, threads,
    telemetry) like the runs of one Runtime do.

    Args:
        llm: the model provider or model resolver of model calls.
        tools: tools hosted by name (anything ``ptcflow.tools.for_agent`` accepts); tools
            not listed here are imported by the path their run gives.
        handlers: handlers of custom directive kinds, ``{MyDirective: handler}``.
        limits: concurrency limits of this worker (threads of sync tools, per tool, ...).
        retry: the retry policy of sub-calls (a directive's own retries are Temporal's).
        telemetry: spans and metrics (default: the global OpenTelemetry providers).
        max_payload_bytes: the largest outcome returned into history (``None``: no check).

    Use it as an async context manager (it owns a task group), then pass
    :attr:`activities` to a Temporal ``Worker``.
    """

    def __init__(
        self,
        *,
        llm: Any = None,
        tools: Any = None,
        handlers: Mapping[type[Directive], Callable[..., Any]] | None = None,
        limits: Limits | None = None,
        retry: RetryPolicy | None = None,
        telemetry: Telemetry | Unset | None = UNSET,
        max_payload_bytes: int | None = 2_000_000,
        prices: PriceTable | Mapping[str, ModelPrice] | None = None,
    ) -> None:
        self.llm = llm
        self.prices: PriceTable | None = None if prices is None else PriceTable.of(prices)
        """What model calls cost (a run with a ``max_cost_usd`` budget asks for its calls'
        cost): these prices on top of genai-prices' table; ``None``: that table alone."""
        self._source = ModelSource.of(llm)
        self.registry = Toolbox.build(tools)
        self.handlers = dict(handlers or {})
        self.limits = limits or Limits()
        self.retry = retry or RetryPolicy()
        self.telemetry = Telemetry() if isinstance(telemetry, Unset) else telemetry
        self.max_payload_bytes = max_payload_bytes
        self._terminals = TerminalTable(self.handlers)
        self._loaded: dict[ToolRef, Toolbox | ErrorEnvelope] = {}
        self._merged: dict[tuple[ToolRef, ...], Toolbox] = {}
        self._executor: Executor | None = None
        self._performer: Performer | None = None
        self._tg: Any = None
        self.identity = f"{os.getpid()}@{socket.gethostname()}"
        self.own_queue: str | None = None
        """This worker's own task queue (``open_worker`` polls it), heartbeated with each
        attempt's record."""
        self.reattached = 0
        """Attempts that took over the work of an earlier attempt the server gave up."""
        self._works: dict[tuple[str | None, str], _Work] = {}
        self._ended: deque[_Work] = deque()
        """The finished works, in the order they ended."""

    async def __aenter__(self) -> ActivityHost:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._executor = Executor(
            self._tg,
            retry=self.retry,
            limits=self.limits,
            telemetry=self.telemetry,
            handlers=self.handlers,
        )
        self._performer = Performer(self._executor, _no_child)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._tg is not None and self._executor is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        self._executor.close()

    @property
    def activities(self) -> list[Callable[..., Any]]:
        """The activity functions to register on a Temporal worker."""
        return [self.perform]

    def _toolbox_of(self, call: ActivityCall) -> Toolbox | ErrorEnvelope:
        """The toolbox of a call: its tool (or its sub-calls' tools) as the worker hosts
        them or as their refs name them; the error of the first that cannot be loaded."""
        if not call.tools:
            return self._tools_for(call.tool)
        found = self._merged.get(call.tools)
        if found is None:
            tools = dict(self.registry.tools)
            for ref in call.tools:
                box = self._tools_for(ref)
                if isinstance(box, ErrorEnvelope):
                    return box
                tools[ref.name] = box.tools[ref.name]
            found = self._merged[call.tools] = Toolbox(tools)
        return found

    def _tools_for(self, ref: ToolRef | None) -> Toolbox | ErrorEnvelope:
        """The toolbox of a call: the worker's own tools, or the one its ref names."""
        if ref is None or ref.name in self.registry.tools:
            return self.registry
        found = self._loaded.get(ref)
        if found is None:
            try:
                found = Toolbox({ref.name: ref.build()})
            except Exception as exc:
                queue = activity.info().task_queue
                found = ErrorEnvelope.make(
                    UNKNOWN_TOOL,
                    f"tool {ref.name!r} ({ref.path}) cannot be loaded on worker "
                    f"{self.identity} (task queue {queue!r}): {type(exc).__name__}: {exc}. "
                    "Install its module where the workers of that queue run (or start them "
                    "with `ptcflow worker --tools ...`), or route the tool to a queue whose "
                    "workers have it (TemporalOptions.tool_queues)",
                    {"tool": ref.name, "path": ref.path, "task_queue": queue},
                    retryable=False,
                )
            self._loaded[ref] = found
        return found

    @activity.defn(name=PERFORM)
    async def perform(self, call: ActivityCall) -> ActivityOutcome:
        """Perform one attempt of ``call.directive`` (see the module docstring)."""
        assert self._executor is not None and self._performer is not None
        info = activity.info()
        self._prune()
        work = None
        # the server gave an earlier attempt up: is its work here? (a retry runs afresh)
        if call.previous is not None and info.attempt == 1:
            work = self._works.get((info.workflow_id, call.previous))
        if work is None:
            tools = self._toolbox_of(call)
            if isinstance(tools, ErrorEnvelope):
                return ActivityOutcome(signals=(), error=tools, attempt=info.attempt)
            record = decode_record(info.heartbeat_details)
            if not record and call.record is not None:  # run again after its worker was lost
                record = decode_record([call.record])
            work = self._start(call, tools, record)
        else:
            self.reattached += 1
        key = (info.workflow_id, info.activity_id)
        self._works[key] = work
        work.keys.append(key)
        beat = not info.is_local and info.heartbeat_timeout is not None
        try:
            async with anyio.create_task_group() as tg:
                if beat:
                    assert info.heartbeat_timeout is not None
                    tg.start_soon(_heartbeats, work, info.heartbeat_timeout, self.own_queue)
                await work.done.wait()
                tg.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            why = activity.cancellation_details()
            if why is None or not why.not_found:
                work.scope.cancel()  # the run cancelled it, or the worker stops
            else:  # the server gave this attempt up while the worker lives (an outage): the
                # work goes on, for the attempt that asks this worker for it (``previous``),
                # within the attempt's own start-to-close timeout
                bound = info.start_to_close_timeout
                seconds = bound.total_seconds() if bound else _ORPHAN_S
                self._tg.start_soon(_unless_adopted, work, seconds, len(work.keys))
            raise
        if work.error is not None:
            raise work.error
        if work.performer.suspended:
            return _suspended(work.run, work.performer, info.attempt)
        step = work.run.run.core.step
        if step is not None and step.paused:
            return _awaiting(work.run, work.performer, step.pending, info.attempt)
        if work.run.performed is None or work.run.performed.result is None:
            raise anyio.get_cancelled_exc_class()()  # cancelled with its worker's shutdown
        return self._outcome(call, work.run, info.attempt)

    def _start(self, call: ActivityCall, tools: Toolbox, record: dict[int, Recorded]) -> _Work:
        """Start the work of an attempt in the worker's task group (it may outlive the
        attempt's activity: see :class:`_Work`)."""
        assert self._executor is not None and self._performer is not None
        holder: list[_Work] = []

        def recorded(done: dict[int, Recorded]) -> None:
            holder[0].recorded.set()  # the activity heartbeats the new record at once

        decisions: dict[str, Any] | None = None
        if call.decisions or call.expired:
            decisions = {**(call.decisions or {}), **dict.fromkeys(call.expired, EXPIRED)}
        run = ActivityRun(
            call.directive.value(),
            decisions=decisions,
            inner=self._performer,
            record=record,
            on_record=recorded,
            agents=frozenset(call.agent_tools),
            executor=self._executor,
            tools=tools,
            llm=self._source,
            run_id=call.run_id,
            parent_run_id=call.parent_run_id,
            snapshot=call.snapshot,
            terminals=self._terminals,
        )
        if call.agent_path:
            run.run.path = call.agent_path
        tel = self._executor.telemetry
        if tel is not None and tel.tracing:
            run.run.otel_context = current_context()
        work = _Work(run, run.performer)
        holder.append(work)
        self._tg.start_soon(self._do, work, bool(call.agent_tools))
        return work

    async def _do(self, work: _Work, agents: bool) -> None:
        assert self._executor is not None
        try:
            with work.scope:
                async with anyio.create_task_group() as tg:
                    with anyio.CancelScope() as program:
                        if agents:
                            tg.start_soon(suspend_when_blocked, work.performer, program)
                        work.run.start(self._executor.clock())
                        await drive(work.run.run)
                    tg.cancel_scope.cancel()
        except Exception as exc:
            work.error = exc
        finally:
            work.ended = time.monotonic()
            self._ended.append(work)
            work.done.set()

    def _prune(self) -> None:
        """Forget finished work kept for attempts that may ask for it: beyond the latest
        ``_KEEP`` to end, or ended more than ``_KEEP_S`` ago."""
        ended = self._ended
        now = time.monotonic()
        while ended and (len(ended) > _KEEP or now - (ended[0].ended or now) > _KEEP_S):
            work = ended.popleft()
            for key in work.keys:
                if self._works.get(key) is work:
                    del self._works[key]

    def _outcome(self, call: ActivityCall, run: ActivityRun, attempt: int) -> ActivityOutcome:
        ctx = run.performed
        assert ctx is not None and ctx.result is not None
        outcome = ActivityOutcome(
            signals=tuple(run.lines), traceparent=ctx.traceparent, attempt=attempt
        )
        result = ctx.result
        if call.price and isinstance(result, Ok) and isinstance(ctx.directive, LLMGenerate):
            response = result.payload
            model = str(getattr(response, "model", "") or ctx.directive.model or "")
            if self.prices is None:
                self.prices = PriceTable()
            cost = self.prices.dollars(model, response.usage)
            outcome = msgspec.structs.replace(outcome, priced=True, cost_usd=cost, model=model)
        limits = [n for n in (self.max_payload_bytes, call.max_payload_bytes) if n is not None]
        limit = min(limits) if limits else None
        if limit is not None:
            size = payload_size(outcome, limit)
            if size > limit:
                d = ctx.directive
                error = ErrorEnvelope.make(
                    PAYLOAD_TOO_LARGE,
                    f"the result of {type(d).__name__} {d.id!r} takes {size} bytes compressed, "
                    f"more than the {limit} bytes a Temporal history event may hold: return "
                    "less (a summary, a reference to where the data is), or keep large "
                    "payloads in external storage (see docs/temporal.md, Limits)",
                    {"bytes": size, "limit": limit},
                    retryable=False,
                )
                return ActivityOutcome(signals=(), error=error, attempt=attempt)
        if (
            isinstance(result, Err)
            and result.error.retryable
            and attempt < call.max_attempts
            and not any(b'"ai.llm.delta"' in bytes(line) for line in run.lines)
        ):
            delay = ctx.retry_after if self.retry.honor_retry_after else None
            if delay is not None:
                delay = min(delay, self.retry.max_retry_after_ms / 1000.0)
            raise ApplicationError(
                result.error.message,
                msgspec.json.encode(outcome),
                type=result.error.type,
                next_retry_delay=timedelta(seconds=delay) if delay else None,
            )
        return outcome


async def _unless_adopted(work: _Work, seconds: float, keys: int) -> None:
    """Cancel ``work`` after ``seconds`` unless a later attempt adopted it (or it ended)."""
    await anyio.sleep(seconds)
    if len(work.keys) == keys and not work.done.is_set():
        work.scope.cancel()


async def _heartbeats(work: _Work, every: timedelta, queue: str | None) -> None:
    """Heartbeat the record every third of the heartbeat timeout, and at once when a
    sub-call completed; with this worker's own task queue (where it answers for the
    work if the server gives the attempt up while it lives)."""
    interval = max(every.total_seconds() / 3, 0.05)
    while True:
        work.recorded = anyio.Event()
        activity.heartbeat(encode_record(work.performer.record), *([queue] if queue else []))
        with anyio.move_on_after(interval):
            await work.recorded.wait()


def _suspended(run: ActivityRun, performer: ResumingPerformer, attempt: int) -> ActivityOutcome:
    """A suspended program's outcome: its pending agent calls, its completed sub-calls'
    signals and its record (everything else it published, it publishes again when it
    runs again)."""
    top = run.top_id
    done = {f"{top}/tool/{i}" for i in performer.record}
    lines = tuple(line for line, c in zip(run.lines, run.calls, strict=True) if c in done)
    pending: tuple[PendingCall, ...] = tuple(
        performer.pending[i] for i in sorted(performer.pending)
    )
    return ActivityOutcome(
        signals=lines, attempt=attempt, pending=pending, record=encode_record(performer.record)
    )


def _awaiting(
    run: ActivityRun,
    performer: ResumingPerformer,
    waiting: tuple[WaitingCall, ...],
    attempt: int,
) -> ActivityOutcome:
    """The outcome of a directive whose calls wait for a person's decision: the signals
    of its completed sub-calls and of the waiting calls (``ai.approval.requested``), and
    its record (a program performed again after the decisions answers its completed
    calls from it)."""
    top = run.top_id
    keep = {f"{top}/tool/{i}" for i in performer.record} | {p.call_id for p in waiting}
    lines = tuple(line for line, c in zip(run.lines, run.calls, strict=True) if c in keep)
    record = encode_record(performer.record) if performer.record else None
    return ActivityOutcome(signals=lines, attempt=attempt, approvals=waiting, record=record)


async def _no_child(ctx: Any, strategy: Any, input: Any) -> Any:
    raise UsageError(NO_CHILD)
