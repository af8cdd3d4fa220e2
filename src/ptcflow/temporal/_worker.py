"""Workers: the processes that run ptcflow's workflows and activities on Temporal.

:func:`open_worker` runs a Temporal ``Worker`` on one task queue with the ``ptcflow.run``
workflow (the sandbox lets ptcflow and its pure dependencies pass through: they are
imported once, not per workflow) and the ``ptcflow.perform`` activity of an
:class:`~ptcflow.temporal._activities.ActivityHost`. ``ptcflow worker`` is the same from
the command line.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ptcflow.directives import Directive
from ptcflow.providers import ModelPrice, PriceTable
from ptcflow.runtime import UNSET, Limits, RetryPolicy, Telemetry, Unset
from ptcflow.temporal._connect import require_temporalio
from ptcflow.temporal._options import DEFAULT_TASK_QUEUE

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.worker import Worker

__all__ = ("PASSTHROUGH", "open_worker", "workflow_runner")

_THROTTLE = timedelta(milliseconds=100)
"""The longest a worker holds back an activity's heartbeat (Temporal's default: 0.8 x the
heartbeat timeout, up to 60 s)."""

PASSTHROUGH = (
    "ptcflow",
    "msgspec",
    "anyio",
    "sniffio",
    "structlog",
    "opentelemetry",
    "greenlet",
    "immutables",
    "pyrsistent",
    "re2",
)
"""Modules the workflow sandbox imports once and shares: ptcflow (its strategies are pure
and deterministic by contract) and its dependencies."""


def workflow_runner(passthrough: Sequence[str] = ()) -> Any:
    """The sandboxed workflow runner of ptcflow's workers and replayers.

    Args:
        passthrough: more modules to import once outside the sandbox (your strategies'
            modules, once you trust them to be deterministic: the sandbox then no longer
            checks them).
    """
    require_temporalio()
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from ptcflow.temporal._converter import prepare_struct_types

    prepare_struct_types(passthrough)  # before the runner's threads decode them

    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH, *passthrough)
    return SandboxedWorkflowRunner(restrictions=restrictions)


@asynccontextmanager
async def open_worker(
    client: Client,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    llm: Any = None,
    tools: Any = None,
    handlers: Mapping[type[Directive], Callable[..., Any]] | None = None,
    limits: Limits | None = None,
    retry: RetryPolicy | None = None,
    telemetry: Telemetry | Unset | None = UNSET,
    workflows: bool = True,
    activities: bool = True,
    passthrough: Sequence[str] = (),
    max_concurrent_activities: int | None = None,
    max_payload_bytes: int | None = 2_000_000,
    sticky_timeout: float | None = None,
    prices: PriceTable | Mapping[str, ModelPrice] | None = None,
) -> AsyncIterator[Worker]:
    """Run a worker on ``task_queue`` while the block is open. Blocks on exit until the
    worker has stopped (in-flight activities are cancelled; Temporal runs them again).

    Args:
        client: a client from :func:`ptcflow.temporal.connect`.
        task_queue: the queue to poll.
        llm: the model provider (or resolver) of the model calls it performs.
        tools: tools it hosts by name (others are imported by the path their run gives).
        handlers: handlers of custom directive kinds.
        limits: concurrency limits of its activities (``Limits``).
        retry: the retry policy of sub-calls.
        telemetry: spans and metrics of its activities.
        workflows: run ``ptcflow.run`` workflows (the run cores).
        activities: run ``ptcflow.perform`` activities (a workflow-only worker cannot
            run local activities).
        passthrough: more modules the workflow sandbox imports once (see
            :func:`workflow_runner`).
        max_concurrent_activities: activities performed at once (default: Temporal's).
        max_payload_bytes: the largest activity result sent into history.
        sticky_timeout: seconds before a run cached on a lost worker moves to another
            worker (Temporal's sticky schedule-to-start timeout; default 10 s).
        prices: what model calls cost, for runs with a ``max_cost_usd`` budget: a
            :class:`~ptcflow.providers.PriceTable` or ``{model: ModelPrice(...)}`` on top
            of genai-prices' table (default: that table alone).

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     client = await connect()
        ...     async with open_worker(client, llm=my_model, tools=[add]):
        ...         await anyio.sleep_forever()
    """
    require_temporalio()
    from temporalio.worker import Worker

    from ptcflow.temporal._activities import ActivityHost
    from ptcflow.temporal._workflow import AgentWorkflow

    host = ActivityHost(
        llm=llm,
        tools=tools,
        handlers=handlers,
        limits=limits,
        retry=retry,
        telemetry=telemetry,
        max_payload_bytes=max_payload_bytes,
        prices=prices,
    )
    async with host:
        # a completed sub-call's record reaches the server at once, not after 0.8 x the
        # heartbeat timeout (the SDK's throttle): a worker lost just after it loses less
        kwargs: dict[str, Any] = {"max_heartbeat_throttle_interval": _THROTTLE}
        if max_concurrent_activities is not None:
            kwargs["max_concurrent_activities"] = max_concurrent_activities
        if sticky_timeout is not None:
            kwargs["sticky_queue_schedule_to_start_timeout"] = timedelta(seconds=sticky_timeout)
        worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[AgentWorkflow] if workflows else [],
            activities=host.activities if activities else [],
            workflow_runner=workflow_runner(passthrough),
            **kwargs,
        )
        if not activities:
            async with worker:
                yield worker
            return
        # its own queue: where the workflow asks it for an attempt the server gave up
        host.own_queue = f"{task_queue}@{host.identity}/{uuid.uuid4().hex[:12]}"
        own = Worker(
            client,
            task_queue=host.own_queue,
            activities=host.activities,
            max_concurrent_activity_task_polls=1,
            **kwargs,
        )
        async with worker, own:
            yield worker
