"""Runs replay from their recorded histories with the SDK's Replayer; a strategy that
reads the clock is caught, and named."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowHistory

from ptcflow.temporal import (
    DevServer,
    NondeterministicRun,
    TemporalOptions,
    TemporalRuntime,
    check_determinism,
    connect,
    open_worker,
)
from temporal.agents import Clocky, add, analyst, model, planner

pytestmark = pytest.mark.anyio


async def test_recorded_histories_replay(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    run_id = f"replay-{options.task_queue}"
    async with TemporalRuntime(
        client=client, tools=[add], agents={"analyst": analyst()}, options=options
    ) as trt:
        step = await trt.run(planner(), "go", run_id=run_id)
    assert step.ok, step.error
    ids = [run_id, f"{run_id}/call_a", f"{run_id}/call_b"]
    saved = [(await client.get_workflow_handle(i).fetch_history()).to_json() for i in ids]
    histories = [WorkflowHistory.from_json(i, text) for i, text in zip(ids, saved, strict=True)]
    assert await check_determinism(histories) == 3


async def test_a_strategy_that_reads_the_clock_is_caught_by_the_sandbox(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
        step = await trt.run(Clocky(), "go")
    assert not step.ok and step.error is not None
    assert "strategy 'clocky'" in step.error.message
    assert "time" in step.error.message


async def test_a_strategy_that_reads_the_clock_is_caught_by_replaying_its_history(
    dev_server: DevServer, options: TemporalOptions
) -> None:
    client = await connect(dev_server.address)
    # its module let through the sandbox, the run itself goes through
    async with (
        open_worker(
            client, task_queue=options.task_queue, llm=model(), passthrough=("temporal.agents",)
        ),
        TemporalRuntime(client=client, tools=[add], options=options) as trt,
    ):
        step = await trt.run(Clocky(), "go", run_id=f"clocky-{options.task_queue}")
    assert step.ok, step.error
    history = await client.get_workflow_handle(step.run_id).fetch_history()
    with pytest.raises(NondeterministicRun) as caught:
        await check_determinism([history], passthrough=("temporal.agents",))
    assert "strategy 'clocky' (temporal.agents:Clocky) is not deterministic" in str(caught.value)
    assert caught.value.run_id == step.run_id
