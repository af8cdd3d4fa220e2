"""A SubAgent (the PTC strategy: a program per turn, tool calls inside the programs) on
Temporal: the same Step and signals as on a local Runtime; what cannot travel to a worker
is refused before the run starts."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ptcflow import MissionLimits, Step, SubAgent
from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.temporal import TemporalOptions, TemporalRuntime
from ptcflow.testing import ScriptedLLM
from temporal.agents import model, totaller
from temporal.test_same_step import _shape

pytestmark = pytest.mark.anyio


def _timeless(value: Any) -> Any:
    """``value`` as plain data without its times (durations, timestamps)."""
    if isinstance(value, dict):
        return {
            k: _timeless(v)
            for k, v in value.items()
            if not k.endswith("duration_ms") and k != "timestamp"
        }
    if isinstance(value, list | tuple):
        return [_timeless(v) for v in value]
    return value


def _comparable(step: Step) -> Any:
    return _timeless(msgspec.to_builtins(msgspec.structs.replace(step, signals=())))


def _signals(step: Step) -> Any:
    """Each call's signals, in order (see ``_shape``), times aside (a program's too)."""
    return {k: _timeless(msgspec.to_builtins(v)) for k, v in _shape(step.signals).items()}


async def test_a_multi_turn_subagent_gives_the_same_step_locally_and_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    agent = totaller()
    run_id = f"totaller-{options.task_queue}"
    async with Runtime(llm=model(), telemetry=None) as rt:
        local = await rt.run(agent, context={"user": "alice"}, run_id=run_id, record=True)
    async with TemporalRuntime(client=client, options=options) as trt:
        remote = await trt.run(agent, context={"user": "alice"}, run_id=run_id, record=True)
    assert local.ok, local.error
    assert remote.ok, remote.error
    assert remote.value == local.value == {"total": 8}
    assert (remote.turns, remote.reason) == (local.turns, local.reason) == (3, "returned")
    assert remote.trace is not None and remote.trace.turns[1].execution.error is not None
    assert _comparable(remote) == _comparable(local)  # the trace too, times aside
    assert _signals(remote) == _signals(local)
    types = [s.type for s in remote.signals]
    assert types.count("ai.program.result") == 3 and types.count("ai.tool.result") == 2


async def test_start_takes_an_agent_and_its_options(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(totaller(), {"user": "bob"})
        step = await handle.wait()
    assert step.ok and step.value == {"total": 6}, step.error


def test_what_cannot_travel_to_a_worker_is_refused_before_the_run(options: TemporalOptions) -> None:
    trt = TemporalRuntime(options=options)
    scripted = SubAgent(prompt="Hi", llm=ScriptedLLM(["x"]), name="own-model")
    with pytest.raises(UsageError, match=r"own-model.*model object.*ptcflow worker --llm"):
        trt.spec(scripted, context={})
    owned = SubAgent(prompt="Hi", llm=ScriptedLLM(["x"]), name="owned", description="x")
    orchestrator = SubAgent(prompt="Plan", tools=[owned.as_tool()], name="orchestrator")
    with pytest.raises(UsageError, match=r"agent 'owned' \(tool 'owned'\).*own model object"):
        trt.spec(orchestrator, context={})
    with pytest.raises(UsageError, match="unknown options"):
        trt.spec(model_free_strategy(), None, context={})


def model_free_strategy() -> Any:
    from temporal.agents import analyst

    return analyst()


def test_an_agents_strategy_and_tools_travel_as_data(options: TemporalOptions) -> None:
    """A tuple in an untyped field (``llm_opts``) comes back a list, which is the same
    JSON; a tool's signature travels with it (it validates the programs' calls)."""
    trt = TemporalRuntime(options=options)
    spec = trt.spec(totaller(), context={"user": "a"}, llm_opts={"stop": ("x",)})
    strategy = spec.agent.build()
    assert strategy.llm_options == {"stop": ["x"]} and strategy.name == "totaller"
    (add,) = spec.tools
    assert add.signature == "add(x :int, y :int) -> :int"
    assert add.build().signature == totaller().tools["add"].signature
    assert spec.input == {"user": "a"} and spec.name == "totaller"


def test_a_mission_travels_as_its_agents_plans(options: TemporalOptions) -> None:
    """An agent used as a tool is planned on the client (its strategy, tools, name, the
    model it inherits); its calls are child workflows. A call past ``max_depth`` is
    planned as its error."""
    trt = TemporalRuntime(options=options)
    inner = SubAgent(prompt="Inner", tools=[totaller().as_tool(llm="haiku")], name="inner")
    outer = SubAgent(prompt="Plan", tools=[inner.as_tool()], name="outer", llm="opus")
    spec = trt.spec(outer, context={}, mission_limits=MissionLimits(turn_budget=7, max_depth=1))
    assert spec.mission is not None and spec.mission.turn_budget == 7
    assert spec.tools == () and [t.name for t in spec.agent_tools] == ["inner"]
    (plan,) = spec.agent_tools
    assert plan.strategy is not None and plan.strategy.build().model == "opus"  # the caller's
    assert plan.run_name == "inner" and plan.error is None
    (deep,) = plan.agent_tools  # depth 2, past max_depth 1
    assert deep.error is not None and deep.error.type == "max_depth_exceeded"
    # without the limit, the bound model wins over the caller's
    spec = trt.spec(outer, context={})
    (deep,) = spec.agent_tools[0].agent_tools
    assert deep.strategy is not None and deep.strategy.build().model == "haiku"
    assert [t.name for t in deep.tools] == ["add"]


async def test_a_streaming_subagent_streams_the_same_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    """Its program text as deltas and its programs' prints as ``ai.program.print``: on a
    worker they are published when the activity completes, the same as locally."""
    agent = totaller()
    run_id = f"streamed-{options.task_queue}"
    async with Runtime(llm=model(), telemetry=None) as rt:
        local = await rt.run(agent, {"user": "alice"}, run_id=run_id, record=True, stream=True)
    async with TemporalRuntime(client=client, options=options) as trt:
        remote = await trt.run(agent, {"user": "alice"}, run_id=run_id, record=True, stream=True)
    assert remote.ok, remote.error
    assert _comparable(remote) == _comparable(local)
    assert _signals(remote) == _signals(local)
    types = [s.type for s in remote.signals]
    assert "ai.llm.delta" in types and "ai.program.print" in types
    texts = [s.data.text for s in remote.signals if s.type == "ai.program.print"]
    assert texts == [s.data.text for s in local.signals if s.type == "ai.program.print"]
