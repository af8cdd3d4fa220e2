"""Agents used as tools on Temporal: each call is a child workflow, and a mission gives the
same Step -- value, trace tree, signals -- as on a local Runtime (a real dev server)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowHistory

from ptcflow import MissionLimits, Step
from ptcflow.runtime import Runtime
from ptcflow.signals import SignalBus
from ptcflow.temporal import TemporalOptions, TemporalRuntime, check_determinism, open_worker
from ptcflow.temporal._spec import RunResult
from temporal import missions
from temporal.agents import model
from temporal.test_subagent import _comparable, _signals

pytestmark = pytest.mark.anyio


async def _both(client: Any, options: TemporalOptions, agent: Any, **kw: Any) -> tuple[Step, Step]:
    """The agent's Step on a local Runtime and on Temporal (same run id)."""
    run_id = f"{agent.name}-{options.task_queue}"
    async with Runtime(llm=model(), telemetry=None) as rt:
        local = await rt.run(agent, context={"n": 10}, run_id=run_id, record=True, **kw)
    async with TemporalRuntime(client=client, options=options) as trt:
        with anyio.fail_after(30):
            remote = await trt.run(agent, context={"n": 10}, run_id=run_id, record=True, **kw)
    return local, remote


def _first_turn(step: Step) -> tuple[Any, ...]:
    """The tool calls of the Step's first turn."""
    assert step.trace is not None
    return step.trace.turns[0].execution.tool_calls


def _tree(step: Step) -> list[Any]:
    """The trace's tree: each turn's tool calls, and their children's trees."""
    assert step.trace is not None
    return [
        [
            (c.name, c.index, None if c.child is None else (c.child.run_id, _tree(c.child)))
            for c in turn.execution.tool_calls
        ]
        for turn in step.trace.turns
    ]


async def test_a_mission_of_agents_as_tools_gives_the_same_step_locally_and_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    """A tool call, a pmap over an agent (two children at once), then the agent again:
    three child workflows, the same value, trace tree and signals as locally."""
    local, remote = await _both(client, options, missions.orchestrator())
    assert local.ok and remote.ok, (local.error, remote.error)
    assert remote.value == local.value == {"total": 129}
    assert _tree(remote) == _tree(local)
    children = [c for c in _first_turn(remote) if c.child is not None]
    assert len(children) == 3 and all(c.child.ok for c in children)
    assert _comparable(remote) == _comparable(local)
    assert _signals(remote) == _signals(local)
    # each agent call is a child workflow of the run, which ended
    for call in children:
        handle = client.get_workflow_handle(call.child.run_id)
        info = await handle.describe()
        assert info.status == WorkflowExecutionStatus.COMPLETED
        assert info.parent_id == remote.run_id


async def test_a_pmap_over_an_agent_runs_its_children_concurrently(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(missions.orchestrator(), context={"n": 10})
    assert step.ok, step.error
    calls = _first_turn(step)
    first, second = (c.child.run_id for c in calls if c.name == "summer" and c.index in (1, 2))
    spans = []
    for run_id in (first, second):
        info = await client.get_workflow_handle(run_id).describe()
        spans.append((info.start_time, info.close_time))
    (start_a, end_a), (start_b, end_b) = spans
    assert start_a < end_b and start_b < end_a  # both ran at once


async def test_a_failing_agent_is_a_tool_error_the_program_sees_as_locally(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    local, remote = await _both(client, options, missions.cautious())
    assert remote.ok and remote.value == local.value == {"total": -1}, remote.error
    assert remote.trace is not None
    error = remote.trace.turns[0].execution.error
    assert error is not None and "agent 'fragile' failed (no_data): nothing here" in error.message
    assert _comparable(remote) == _comparable(local)
    assert _signals(remote) == _signals(local)


async def test_the_turn_budget_of_a_mission_counts_its_childrens_model_calls(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    """Budget 2: the orchestrator's turn and the first child's; the second child fails
    ``turn_budget_exceeded`` (a tool error), then the orchestrator cannot take a turn."""
    local, remote = await _both(
        client, options, missions.budgeted(), mission_limits=MissionLimits(turn_budget=2)
    )
    assert not remote.ok and remote.reason == local.reason == "turn_budget_exceeded"
    first, second = _first_turn(remote)
    assert first.child.ok and second.child.reason == "turn_budget_exceeded"
    assert _comparable(remote) == _comparable(local)
    assert _signals(remote) == _signals(local)


async def test_a_react_agent_calling_an_agent_tool_starts_a_child_workflow(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    run_id = f"delegator-{options.task_queue}"
    tools = [missions.summer().as_tool()]
    local_bus, remote_bus = SignalBus(), SignalBus()
    async with (
        local_bus.subscribe("ai.**", buffer=1000) as mine,
        remote_bus.subscribe("ai.**", buffer=1000) as theirs,
    ):
        async with Runtime(llm=model(), tools=tools, bus=local_bus, telemetry=None) as rt:
            local = await rt.run(missions.delegator(), "go", run_id=run_id, record=True)
        async with TemporalRuntime(
            client=client, tools=tools, options=options, bus=remote_bus
        ) as trt:
            remote = await trt.run(missions.delegator(), "go", run_id=run_id, record=True)
        local_seen, remote_seen = list(mine.drain_nowait()), list(theirs.drain_nowait())
    assert remote.ok and remote.value == local.value, remote.error
    assert remote.value == 'delegated: {"ok":true,"result":{"sum":5}}'
    assert _signals(remote) == _signals(local)
    runs = {s.run_id for s in remote_seen}
    assert runs == {s.run_id for s in local_seen} == {run_id, f"{run_id}/call_sum"}


async def test_cancelling_the_parent_cancels_its_child_workflows(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(missions.stuck(), context={"n": 1}, record=True)
        parent = client.get_workflow_handle(handle.run_id)
        with anyio.fail_after(20):
            while True:  # until the child workflow runs
                children = [
                    w async for w in client.list_workflows(f"ParentWorkflowId = '{handle.run_id}'")
                ]
                if children:
                    break
                await anyio.sleep(0.05)
        await handle.cancel()
        with anyio.fail_after(20):
            step = await handle.wait()
    assert not step.ok and step.reason == "cancelled", step
    (child,) = children
    with anyio.fail_after(20):
        while True:
            status = (await client.get_workflow_handle(child.id).describe()).status
            if status != WorkflowExecutionStatus.RUNNING:
                break
            await anyio.sleep(0.05)
    assert status == WorkflowExecutionStatus.COMPLETED  # with its cancelled Step
    result = await client.get_workflow_handle(child.id, result_type=RunResult).result()
    assert result.step.reason == "cancelled" and child.parent_id == handle.run_id
    assert (await parent.describe()).status == WorkflowExecutionStatus.COMPLETED
    # the pending agent call got its one terminal result
    results = [s for s in step.signals if s.type == "ai.tool.result"]
    assert [r.data.result.error.type for r in results] == ["cancelled"]


async def test_a_mission_replays_from_its_recorded_histories(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(missions.orchestrator(), context={"n": 10})
    assert step.ok, step.error
    calls = _first_turn(step)
    ids = [step.run_id, *(c.child.run_id for c in calls if c.child is not None)]
    saved = [(await client.get_workflow_handle(i).fetch_history()).to_json() for i in ids]
    histories = [WorkflowHistory.from_json(i, text) for i, text in zip(ids, saved, strict=True)]
    assert await check_determinism(histories) == 4


async def test_a_worker_that_hosts_an_agent_tool_answers_its_calls_with_an_error(
    client: Any, options: TemporalOptions
) -> None:
    """A run that does not know the agent tool (its client was not given it) calls it by
    name; the worker hosting it (``ptcflow worker --tools``) cannot start a child workflow."""
    async with (
        open_worker(client, task_queue=options.task_queue, llm=model(), tools=missions.HOSTED),
        TemporalRuntime(client=client, options=options) as trt,
    ):
        with anyio.fail_after(20):
            step = await trt.run(missions.CallHosted(), "go")
    error = step.error
    assert not step.ok and error is not None, step
    assert "cannot run inside an activity" in error.message, error
    assert "give them to the run's tools" in error.message
