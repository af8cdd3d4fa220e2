"""Where and how one directive runs on Temporal: its activity options, the activity itself
(:func:`perform_activity`), and what a failure Temporal reports means for the directive
(used by the workflow: ``temporalio.workflow`` only)."""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta
from typing import Any

import msgspec
from temporalio import workflow
from temporalio.common import RetryPolicy as TemporalRetry
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutError as TemporalTimeout,
    TimeoutType,
)

from ptcflow.directives import Directive, LLMEmbed, LLMGenerate, ToolExec
from ptcflow.signals import INTERNAL, TIMEOUT, TRANSIENT, Err, ErrorEnvelope
from ptcflow.temporal._activities import PERFORM
from ptcflow.temporal._activity_run import decode_record
from ptcflow.temporal._options import TemporalOptions
from ptcflow.temporal._refs import ToolRef
from ptcflow.temporal._spec import ActivityCall, ActivityOutcome, RunSpec

__all__ = (
    "Placement",
    "failure_of",
    "is_lost_worker",
    "last_heartbeat",
    "perform_activity",
    "place",
)

_ATTEMPT_GRACE_S = 5.0
"""Start-to-close beyond a tool's own attempt timeout, so its own clean ``timeout`` wins."""


class Placement:
    """The activity options of one directive (see :func:`place`)."""

    __slots__ = (
        "ends",
        "heartbeat",
        "local",
        "max_attempts",
        "retry",
        "schedule_to_close",
        "start_to_close",
        "task_queue",
        "tool",
    )

    def __init__(
        self,
        *,
        task_queue: str,
        local: bool,
        tool: ToolRef | None,
        max_attempts: int,
        retry: TemporalRetry,
        schedule_to_close: timedelta | None,
        start_to_close: timedelta,
        heartbeat: timedelta | None,
        ends: float = math.inf,
    ) -> None:
        self.task_queue = task_queue
        self.local = local
        self.tool = tool
        self.max_attempts = max_attempts
        self.retry = retry
        self.schedule_to_close = schedule_to_close
        self.start_to_close = start_to_close
        self.heartbeat = heartbeat
        self.ends = ends
        """When the directive's time is up (epoch seconds, the workflow's clock)."""


def place(
    spec: RunSpec, tools: dict[str, ToolRef], d: Directive, now: float, deadline: float
) -> Placement:
    """The activity options of ``d``: its queue (routing), its retry policy (the directive's
    retries and backoff, the tool's own ``max_retries``), its schedule-to-close (its own
    deadline within the run's), its start-to-close (one attempt) and its heartbeat."""
    options = spec.options
    policy = spec.retry
    tool = tools.get(d.tool_name) if isinstance(d, ToolExec) else None
    local = tool is not None and tool.name in options.local_tools
    if isinstance(d, ToolExec):
        queue = options.queue_of_tool(d.tool_name)
    elif isinstance(d, LLMGenerate | LLMEmbed):
        queue = options.model_queue
    else:
        queue = options.task_queue
    retries = d.max_retries
    if tool is not None and tool.max_retries is not None:
        retries = tool.max_retries
    retries = max(0, min(retries, policy.max_retries_cap))
    budget = math.inf if d.timeout_ms is None else d.timeout_ms / 1000.0
    budget = min(budget, deadline - now)
    schedule_to_close = None if budget == math.inf else timedelta(seconds=max(budget, 0.001))
    attempt_ms = (
        tool.timeout_ms if tool is not None and tool.timeout_ms else policy.attempt_timeout_ms
    )
    attempt_s = (
        attempt_ms / 1000.0 + _ATTEMPT_GRACE_S
        if attempt_ms
        else options.attempt_timeout_ms / 1000.0
    )
    attempt_s = min(attempt_s, budget)
    return Placement(
        task_queue=queue,
        local=local,
        tool=tool,
        max_attempts=retries + 1,
        retry=TemporalRetry(
            initial_interval=timedelta(milliseconds=max(d.retry_backoff_ms, 1)),
            backoff_coefficient=policy.multiplier,
            maximum_interval=timedelta(
                milliseconds=max(policy.max_backoff_ms, d.retry_backoff_ms, 1)
            ),
            maximum_attempts=retries + 1,
        ),
        schedule_to_close=schedule_to_close,
        start_to_close=timedelta(seconds=max(attempt_s, 0.001)),
        heartbeat=None if local else timedelta(milliseconds=options.heartbeat_timeout_ms),
        ends=now + budget,
    )


def is_lost_worker(exc: BaseException) -> bool:
    """True when an activity failed because its worker stopped heartbeating."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    return isinstance(cause, TemporalTimeout) and cause.type == TimeoutType.HEARTBEAT


def last_heartbeat(exc: BaseException) -> bytes | None:
    """The last heartbeat details of an activity whose worker was lost (its record)."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    details = cause.last_heartbeat_details if isinstance(cause, TemporalTimeout) else ()
    return details[0] if details and isinstance(details[0], bytes) else None


def heartbeat_queue(exc: BaseException) -> str | None:
    """The own task queue of the worker that last heartbeated a timed-out activity."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    details = cause.last_heartbeat_details if isinstance(cause, TemporalTimeout) else ()
    return details[1] if len(details) > 1 and isinstance(details[1], str) else None


def _no_answer(exc: BaseException) -> bool:
    """True when an activity sent to a worker's own queue was not picked up in time."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    return isinstance(cause, TemporalTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START


def _count(record: bytes | None) -> int:
    """How many sub-calls a record holds (heartbeat details' format)."""
    return len(decode_record([record])) if record is not None else 0


def failure_of(d: Directive, exc: Exception, lost: int) -> Err:
    """The terminal error of ``d`` for what Temporal reported (an activity or child
    workflow that failed, timed out, or whose worker was lost ``lost`` times)."""
    what = f"{type(d).__name__} {d.id!r}"
    cause = exc.cause if isinstance(exc, ActivityError | ChildWorkflowError) else exc
    if isinstance(cause, TemporalTimeout):
        if cause.type in (TimeoutType.HEARTBEAT, TimeoutType.SCHEDULE_TO_START):
            return Err(
                error=ErrorEnvelope.make(
                    TRANSIENT,
                    f"{what}: its worker was lost {lost} time(s) without making progress (it "
                    "stopped heartbeating and did not answer on its own task queue); the "
                    "directive was not completed. TemporalOptions.lost_worker_retries bounds "
                    "such losses (None: as many as the directive's timeouts allow)",
                    {"scope": "worker", "lost": lost},
                    retryable=False,
                )
            )
        if cause.type == TimeoutType.SCHEDULE_TO_CLOSE:
            return Err(
                error=ErrorEnvelope.make(
                    TIMEOUT,
                    f"{what} exceeded its deadline ({d.timeout_ms} ms or the run's remaining "
                    "time) on Temporal",
                    {"timeout_ms": d.timeout_ms, "scope": "directive"},
                    retryable=False,
                )
            )
        return Err(
            error=ErrorEnvelope.make(
                TIMEOUT,
                f"an attempt of {what} exceeded its start-to-close timeout on Temporal",
                {"scope": "attempt"},
            )
        )
    if isinstance(cause, ApplicationError) and cause.type:
        kind = cause.type if cause.type.islower() else INTERNAL
        details: dict[str, Any] = {"temporal_type": cause.type}
        return Err(
            error=ErrorEnvelope.make(
                kind, f"{what} failed on Temporal: {cause}", details, retryable=False
            )
        )
    return Err(
        error=ErrorEnvelope.make(
            INTERNAL,
            f"{what} failed on Temporal: {type(cause).__name__}: {cause}",
            {"exception": type(cause).__name__},
            retryable=False,
        )
    )


async def perform_activity(
    d: Directive, call: ActivityCall, where: Placement, options: TemporalOptions, round: str = ""
) -> ActivityOutcome:
    """Perform ``call`` as an activity placed at ``where`` (workflow code); ``round``: the
    activity id's suffix of a program's later round.

    An attempt that stops heartbeating is not yet lost: the server may have been down
    (or the network) while its worker lived on. Its worker is asked first, on the own
    task queue its heartbeats named, for ``options.grace_ms``: a live worker answers
    with the attempt's work (finished, or still running: adopted, no call runs twice).
    Only a worker that does not answer is lost; the directive then runs again with the
    sub-calls its last heartbeat recorded, as often as its timeouts allow, or
    ``lost_worker_retries`` times counting only losses that made no progress.

    Raises:
        asyncio.CancelledError: the activity was cancelled (its run is being cancelled).
    """
    budget = options.lost_worker_retries
    lost = 0  # losses without progress (what the budget counts)
    executions = 0
    own_queue: str | None = None  # the silent attempt's worker, asked first
    previous: str | None = None
    base = _count(call.record)  # the record the lost attempt started from
    while True:
        activity_id = d.id + round + (f"~{executions + 1}" if executions else "")
        executions += 1
        try:
            if where.local:
                outcome: ActivityOutcome = await workflow.execute_local_activity(
                    PERFORM,
                    call,
                    result_type=ActivityOutcome,
                    activity_id=activity_id,
                    schedule_to_close_timeout=where.schedule_to_close,
                    start_to_close_timeout=where.start_to_close,
                    retry_policy=where.retry,
                )
                return outcome
            schedule_to_close = where.schedule_to_close
            if executions > 1 and where.ends != math.inf:
                left = where.ends - workflow.now().timestamp()
                if left <= 0:
                    return ActivityOutcome(error=_out_of_time(d, lost).error)
                schedule_to_close = timedelta(seconds=left)
            outcome = await workflow.execute_activity(
                PERFORM,
                msgspec.structs.replace(call, previous=previous),
                result_type=ActivityOutcome,
                task_queue=own_queue or where.task_queue,
                activity_id=activity_id,
                schedule_to_close_timeout=schedule_to_close,
                schedule_to_start_timeout=(
                    timedelta(milliseconds=options.grace_ms) if own_queue else None
                ),
                start_to_close_timeout=where.start_to_close,
                heartbeat_timeout=where.heartbeat,
                retry_policy=where.retry,
                summary=f"{type(d).__name__} {getattr(d, 'tool_name', '')}".strip(),
            )
            return outcome
        except ActivityError as exc:
            if isinstance(exc.cause, CancelledError):
                raise asyncio.CancelledError from None
            silent = is_lost_worker(exc)
            if not silent and not (own_queue is not None and _no_answer(exc)):
                return ActivityOutcome(error=failure_of(d, exc, lost).error)
            previous = activity_id
            if silent:
                details = last_heartbeat(exc)
                if details is not None:  # the sub-calls it completed: not again
                    call = msgspec.structs.replace(call, record=details)
                asked = heartbeat_queue(exc)
                if asked is not None:  # ask its worker before counting it lost
                    own_queue = asked
                    continue
            own_queue = None  # lost: run again on the directive's queue
            if _count(call.record) <= base:
                lost += 1
                if budget is not None and lost > budget:  # its record goes with its error
                    error = failure_of(d, exc, lost).error
                    return ActivityOutcome(error=error, record=call.record)
            base = _count(call.record)


def _out_of_time(d: Directive, lost: int) -> Err:
    return Err(
        error=ErrorEnvelope.make(
            TIMEOUT,
            f"{type(d).__name__} {d.id!r} exceeded its deadline ({d.timeout_ms} ms or the run's "
            f"remaining time) on Temporal while its workers were lost ({lost} time(s) "
            "without progress)",
            {"timeout_ms": d.timeout_ms, "scope": "directive", "lost": lost},
            retryable=False,
        )
    )
