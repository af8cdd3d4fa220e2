"""Mission-wide limits and misbehaving children: each ends at the right level, typed and
explained, with nothing left running."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ptcflow import MissionLimits, SubAgent
from ptcflow.errors import ConfigError, UsageError
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.strategies import ToolCallTrace
from ptcflow.testing import ScriptedLLM

from .composition_support import first_user, router

pytestmark = pytest.mark.anyio


def _turns(requests: list[LLMRequest], task: str) -> list[LLMRequest]:
    return [r for r in requests if first_user(r) == task]


def _second(first: str, then: str) -> Any:
    """A model that answers ``first`` on an agent's first turn and ``then`` after."""
    return lambda r: first if len(r.messages) < 3 else then


def _call(step: Step, turn: int = 0, index: int = 0) -> ToolCallTrace:
    assert step.trace is not None, step.fail
    return step.trace.turns[turn].execution.tool_calls[index]


async def _run(root: SubAgent, llm: ScriptedLLM, **options: Any) -> tuple[Step, int]:
    async with Runtime(llm=llm) as rt:
        with anyio.fail_after(20):
            step = await rt.run(root, **options)
        active = rt.statistics().runs_active
    return step, active


def _chain() -> SubAgent:
    """top > middle > bottom, each calling the next as a tool."""
    bottom = SubAgent(prompt="Bottom {{x}}", signature="(x :int) -> {x :int}", name="bottom")
    middle = SubAgent(
        prompt="Middle {{x}}",
        signature="(x :int) -> {x :int}",
        name="middle",
        tools=[bottom.as_tool()],
    )
    return SubAgent(prompt="Top", signature="{x :int}", name="top", tools=[middle.as_tool()])


CHAIN_ANSWERS: dict[str, Any] = {
    "Top": '(return (call "middle" {:x 1}))',
    "Middle": _second('(return (call "bottom" {:x ctx/x}))', "(return {:x -1})"),
    "Bottom": "(return {:x (+ ctx/x 1)})",
}


async def test_within_the_depth_limit_the_chain_runs() -> None:
    step, active = await _run(_chain(), ScriptedLLM(router(CHAIN_ANSWERS)))
    assert step.ok and step.value == {"x": 2} and active == 0


async def test_past_the_depth_limit_the_call_is_a_tool_error() -> None:
    llm = ScriptedLLM(router(CHAIN_ANSWERS))
    step, active = await _run(_chain(), llm, mission_limits={"max_depth": 1})
    assert step.ok and step.value == {"x": -1} and active == 0  # middle fell back
    middle = _call(step).child
    assert isinstance(middle, Step)
    refused = _call(middle)
    assert refused.error is not None and refused.error.category == "max_depth_exceeded"
    assert (
        "would run at nesting depth 2, past the mission's max_depth of 1" in refused.error.message
    )
    assert refused.child is None and not _turns(llm.requests, "Bottom 1")  # never started


async def test_the_turn_budget_is_shared_by_the_whole_tree() -> None:
    """A child that never returns spends the mission's budget: it ends with
    ``turn_budget_exceeded``, its caller gets the tool error and its own next turn fails
    the same way."""
    looper = SubAgent(
        prompt="Loop {{x}}", signature="(x :int) -> :int", name="looper", max_turns=50
    )
    root = SubAgent(prompt="Go", signature=":int", tools=[looper.as_tool()], max_turns=50)
    llm = ScriptedLLM(router({"Loop": "(+ 1 ctx/x)", "Go": '(call "looper" {:x 1})'}))
    step, active = await _run(root, llm, mission_limits=MissionLimits(turn_budget=4))
    assert active == 0
    assert len(llm.requests) == 4  # one turn of the root, three of the child
    assert not step.ok and step.fail is not None
    assert step.fail.reason == "turn_budget_exceeded"
    call = _call(step)
    assert call.error is not None and call.error.category == "turn_budget_exceeded"
    assert "turn budget of 4 model calls is spent" in call.error.message
    assert isinstance(call.child, Step) and call.child.turns == 4  # 3 answered + the refused one


async def test_concurrent_children_share_the_budget() -> None:
    leaf = SubAgent(prompt="Leaf {{i}}", signature="(i :int) -> :int", name="leaf")
    root = SubAgent(prompt="Fan out", tools=[leaf.as_tool()])
    llm = ScriptedLLM(
        router(
            {
                "Leaf": "(return ctx/i)",
                "Fan out": _second('(pmap #(call "leaf" {:i %}) [1 2 3])', "(return :done)"),
            }
        )
    )
    step, _ = await _run(root, llm, mission_limits={"turn_budget": 5})
    assert step.ok  # 1 + 3 children + 1
    step, _ = await _run(root, llm, mission_limits={"turn_budget": 3})
    assert not step.ok and step.fail is not None and step.fail.reason == "turn_budget_exceeded"
    errors = [c.error.category for c in step.trace.turns[0].execution.tool_calls if c.error]  # type: ignore[union-attr]
    assert errors == ["turn_budget_exceeded"]  # two leaves got turns, the third did not


async def test_a_child_that_loops_ends_with_max_turns_exceeded() -> None:
    looper = SubAgent(prompt="Loop {{x}}", signature="(x :int) -> :int", name="looper", max_turns=2)
    root = SubAgent(prompt="Go", signature=":int", tools=[looper.as_tool()])
    llm = ScriptedLLM(
        router({"Loop": "(+ 1 ctx/x)", "Go": _second('(call "looper" {:x 1})', "(return 0)")})
    )
    step, active = await _run(root, llm)
    assert step.ok and step.value == 0 and active == 0
    call = _call(step)
    assert call.error is not None and call.error.category == "max_turns_exceeded"


async def test_a_child_that_times_out_is_a_tool_error_and_the_caller_goes_on() -> None:
    slow = SubAgent(
        prompt="Slow {{x}}", signature="(x :int) -> :int", name="slow", mission_timeout=50
    )
    root = SubAgent(prompt="Go", signature=":int", tools=[slow.as_tool()])
    llm = ScriptedLLM(
        router(
            {
                "Slow": ScriptedLLM.timeout(hang=True),
                "Go": _second('(call "slow" {:x 1})', "(return 0)"),
            }
        )
    )
    step, active = await _run(root, llm)
    assert step.ok and step.value == 0 and active == 0
    call = _call(step)
    assert call.error is not None and call.error.category == "timeout"


async def test_the_callers_mission_timeout_bounds_its_children() -> None:
    """The child has no timeout of its own: it gets the caller's remaining time, and the
    whole mission ends on time (nothing hangs, nothing is left running)."""
    slow = SubAgent(prompt="Slow {{x}}", signature="(x :int) -> :int", name="slow")
    root = SubAgent(prompt="Go", signature=":int", tools=[slow.as_tool()], mission_timeout=100)
    llm = ScriptedLLM(
        router({"Slow": ScriptedLLM.timeout(hang=True), "Go": '(call "slow" {:x 1})'})
    )
    step, active = await _run(root, llm)
    assert not step.ok and step.reason == "timeout" and active == 0


async def test_memory_is_limited_per_agent() -> None:
    hoarder = SubAgent(
        prompt="Hoard {{n}}", signature="(n :int) -> :int", name="hoarder", memory_limit=200
    )
    root = SubAgent(prompt="Go", signature=":int", tools=[hoarder.as_tool()])
    llm = ScriptedLLM(
        router(
            {
                "Hoard": "(def big (vec (range ctx/n)))\n(count big)",
                "Go": _second('(call "hoarder" {:n 1000})', "(return 0)"),
            }
        )
    )
    step, active = await _run(root, llm)
    assert step.ok and active == 0
    call = _call(step)
    assert call.error is not None and call.error.category == "memory_limit"


async def test_a_child_returning_bad_data_is_a_tool_error() -> None:
    sloppy = SubAgent(
        prompt="Score {{x}}", signature="(x :int) -> {score :int}", name="sloppy", max_turns=1
    )
    root = SubAgent(prompt="Go", signature=":int", tools=[sloppy.as_tool()])
    llm = ScriptedLLM(
        router(
            {
                "Score": '(return {:score "high"})',
                "Go": _second('(call "sloppy" {:x 1})', "(return 0)"),
            }
        )
    )
    step, active = await _run(root, llm)
    assert step.ok and active == 0
    call = _call(step)
    assert call.error is not None
    assert isinstance(call.child, Step) and call.child.fail is not None
    assert call.error.category == call.child.fail.reason
    assert "score" in call.error.message


def test_mission_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="turn_budget must be an int >= 1"):
        MissionLimits(turn_budget=0)
    with pytest.raises(ConfigError, match="unknown keys"):
        MissionLimits.of({"depth": 2})
    agent = SubAgent(prompt="x")
    with pytest.raises(UsageError, match="mission_limits"):
        agent.run_sync(llm=ScriptedLLM(["1"]), mission_limits=3)
