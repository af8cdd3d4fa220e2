"""Cancelling a run on Temporal, routing tools to their own task queue, local activities,
continue-as-new."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from ptcflow.runtime import Runtime
from ptcflow.signals import TOOL_RESULT, TOOL_STARTED
from ptcflow.strategies import ReAct
from ptcflow.temporal import TemporalOptions, TemporalRuntime, open_worker
from ptcflow.temporal._spec import RunResult
from temporal.agents import ANALYST, add, analyst, model, planner, wait_for_ever

pytestmark = pytest.mark.anyio


async def test_cancelling_a_run_cancels_its_activities_and_children_with_one_result_each(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(
        client=client,
        tools=[wait_for_ever],
        agents={"analyst": analyst()},
        options=options,
    ) as trt:
        handle = await trt.start(
            planner(), "go", record=True, run_id=f"cancel-{options.task_queue}"
        )
        started = trt.handle(handle.run_id)
        # wait until both children and the parent's own tool are running
        with anyio.fail_after(20):
            while True:
                desc = await client.get_workflow_handle(handle.run_id).describe()
                raw = desc.raw_description
                if len(raw.pending_children) == 2 and len(raw.pending_activities) == 1:
                    break
                await anyio.sleep(0.05)
        await started.cancel()
        step = await handle.wait()
    assert not step.ok and step.error is not None and step.error.type == "cancelled"
    assert step.reason == "cancelled"
    results = [s for s in step.signals if s.type == TOOL_RESULT]
    starts = [s for s in step.signals if s.type == TOOL_STARTED]
    assert len(results) == len(starts) == 3  # two child runs and one tool call
    assert all(s.data.result.error.type == "cancelled" for s in results), [s.data for s in results]
    for child in (f"{handle.run_id}/call_a", f"{handle.run_id}/call_b"):
        with anyio.fail_after(20):
            result = await client.get_workflow_handle(child, result_type=RunResult).result()
        assert result.step.error.type == "cancelled"


async def test_a_tool_routed_to_its_own_queue_runs_on_that_queues_workers(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    pool = f"{options.task_queue}-pool"
    routed = msgspec.structs.replace(options, tool_queues={"add": pool})

    def pooled(x: int, y: int) -> int:
        """Add, in the pool."""
        return 1000 + x + y

    async with (
        open_worker(client, task_queue=pool, tools={"add": pooled}, workflows=False),
        TemporalRuntime(client=client, tools=[add], options=routed) as trt,
    ):
        step = await trt.run(analyst(), "emea")
    assert step.ok and "1005" in str(step.value), step


async def test_short_pure_tools_run_as_local_activities(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    local = msgspec.structs.replace(options, local_tools=frozenset({"add"}))
    run_id = f"local-{options.task_queue}"
    async with TemporalRuntime(client=client, tools=[add], options=local) as trt:
        step = await trt.run(analyst(), "emea", run_id=run_id)
    assert step.ok and "5" in str(step.value)
    history = await client.get_workflow_handle(run_id).fetch_history()
    kinds = {e.WhichOneof("attributes") for e in history.events}
    assert "marker_recorded_event_attributes" in kinds  # the local activity's record
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_id
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert all("llm" in a for a in scheduled)  # only the model calls were scheduled


async def test_a_long_run_continues_as_new_and_ends_the_same(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    short = msgspec.structs.replace(options, continue_as_new_events=12)
    strategy = ReAct(system_prompt=ANALYST, name="analyst", max_iterations=10)
    run_id = f"long-{options.task_queue}"
    async with Runtime(llm=model(), tools=[add], telemetry=None) as rt:
        local = await rt.run(strategy, "emea", run_id=run_id, record=True)
    async with TemporalRuntime(client=client, tools=[add], options=short) as trt:
        remote = await trt.run(strategy, "emea", run_id=run_id, record=True)
    assert remote.ok, remote.error
    assert msgspec.structs.replace(remote, duration_ms=0.0, signals=()) == msgspec.structs.replace(
        local, duration_ms=0.0, signals=()
    )
    assert [s.seq for s in remote.signals] == list(range(1, len(local.signals) + 1))
    desc = await client.get_workflow_handle(run_id).describe()
    assert desc.run_id != desc.raw_description.workflow_execution_info.first_run_id


async def test_a_tool_error_needs_no_activity(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    """The model calls a tool the run does not have: ReAct answers with ``EmitToolError``,
    which the run core answers in the workflow; only the two model calls are activities."""
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(analyst(), "emea", record=True)
    assert step.ok and "unknown_tool" in str(step.value), step.value
    results = [s for s in step.signals if s.type == TOOL_RESULT]
    assert [r.data.result.error.type for r in results] == ["unknown_tool"]
    history = await client.get_workflow_handle(step.run_id).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_id
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert len(scheduled) == 2 and results[0].call_id not in scheduled, scheduled
