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
(``_activity_run``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import anyio
import msgspec
from temporalio import activity
from temporalio.exceptions import ApplicationError

from ptcflow.core import TerminalTable
from ptcflow.directives import Directive
from ptcflow.errors import UsageError
from ptcflow.runtime import UNSET, Limits, RetryPolicy, Telemetry, Unset
from ptcflow.runtime.lowlevel import (
    Executor,
    Performer,
    Toolbox,
    current_context,
    drive,
    is_resolver,
    model_of,
)
from ptcflow.signals import UNKNOWN_TOOL, Err, ErrorEnvelope
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
    ) -> None:
        self.llm = llm
        self._llm_is_resolver = is_resolver(llm)
        self._llm_model = "" if self._llm_is_resolver else model_of(llm)
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
        tools = self._toolbox_of(call)
        if isinstance(tools, ErrorEnvelope):
            return ActivityOutcome(signals=(), error=tools, attempt=info.attempt)
        directive = call.directive.value()
        record = decode_record(info.heartbeat_details)
        if not record and call.record is not None:  # run again after its worker was lost
            record = decode_record([call.record])
        beat = not info.is_local and info.heartbeat_timeout is not None

        def heartbeat(done: dict[int, Recorded]) -> None:
            if beat:
                activity.heartbeat(encode_record(done))

        activity_run = ActivityRun(
            directive,
            inner=self._performer,
            record=record,
            on_record=heartbeat,
            agents=frozenset(call.agent_tools),
            executor=self._executor,
            tools=tools,
            llm=self.llm,
            llm_is_resolver=self._llm_is_resolver,
            llm_model=self._llm_model,
            run_id=call.run_id,
            parent_run_id=call.parent_run_id,
            snapshot=call.snapshot,
            terminals=self._terminals,
        )
        performer = activity_run.performer
        tel = self._executor.telemetry
        if tel is not None and tel.tracing:
            activity_run.run.otel_context = current_context()
        async with anyio.create_task_group() as tg:
            if beat:
                assert info.heartbeat_timeout is not None
                tg.start_soon(_heartbeats, performer, info.heartbeat_timeout)
            with anyio.CancelScope() as program:
                if call.agent_tools:
                    tg.start_soon(suspend_when_blocked, performer, program)
                activity_run.start(self._executor.clock())
                await drive(activity_run.run)
            tg.cancel_scope.cancel()
        if performer.suspended:
            return _suspended(activity_run, performer, info.attempt)
        return self._outcome(call, activity_run, info.attempt)

    def _outcome(self, call: ActivityCall, run: ActivityRun, attempt: int) -> ActivityOutcome:
        ctx = run.performed
        assert ctx is not None and ctx.result is not None
        outcome = ActivityOutcome(
            signals=tuple(run.lines), traceparent=ctx.traceparent, attempt=attempt
        )
        result = ctx.result
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


async def _heartbeats(performer: ResumingPerformer, every: timedelta) -> None:
    """Heartbeat the record every third of the heartbeat timeout."""
    interval = max(every.total_seconds() / 3, 0.05)
    while True:
        activity.heartbeat(encode_record(performer.record))
        await anyio.sleep(interval)


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


async def _no_child(ctx: Any, strategy: Any, input: Any) -> Any:
    raise UsageError(NO_CHILD)
