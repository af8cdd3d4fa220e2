"""Usage limits: budgets in tokens, requests, tool calls and money, per run and shared by
the run's children; each passed budget ends the run with ``usage_limit_exceeded``."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from hypothesis import given, strategies as st

import ptcflow
from ptcflow import SubAgent, UsageLimits
from ptcflow.errors import ConfigError, UsageError
from ptcflow.runtime import RunOptions, Runtime, Step
from ptcflow.signals import USAGE, Usage
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, Turn

pytestmark = pytest.mark.anyio

ran: list[int] = []


def add(x: int, y: int) -> int:
    """Add two integers."""
    ran.append(x)
    return x + y


def _looping(n: int = 10) -> list[Any]:
    return [ScriptedLLM.tool_call("add", x=i, y=1) for i in range(n)] + ["done"]


async def _run(strategy: Any, input: Any, llm: ScriptedLLM, **options: Any) -> Step:
    async with Runtime(llm=llm, tools=[add]) as rt:
        with anyio.fail_after(20):
            step = await rt.run(strategy, input, **options)
        assert rt.statistics().runs_active == 0
    return step


def _details(step: Step) -> dict[str, Any]:
    assert not step.ok and step.error is not None, step
    assert step.error.type == "usage_limit_exceeded", step.error
    assert step.reason == "usage_limit_exceeded"
    details: dict[str, Any] = step.error.details
    return details


@pytest.mark.parametrize(
    "field", ["max_input_tokens", "max_output_tokens", "max_total_tokens", "max_requests"]
)
@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3"])
def test_a_count_limit_must_be_a_positive_int(field: str, bad: Any) -> None:
    with pytest.raises(ConfigError, match=f"UsageLimits.{field} must be an int >= 1"):
        UsageLimits(**{field: bad})


@pytest.mark.parametrize("bad", [0, -0.5, math.nan, math.inf, False, "1"])
def test_a_cost_limit_must_be_a_positive_number(bad: Any) -> None:
    with pytest.raises(ConfigError, match="max_cost_usd must be a number of US dollars > 0"):
        UsageLimits(max_cost_usd=bad)


@given(st.integers(min_value=1), st.floats(min_value=1e-9, max_value=1e9))
def test_positive_limits_are_kept(n: int, usd: float) -> None:
    limits = UsageLimits(max_tool_calls=n, max_cost_usd=usd)
    assert (limits.max_tool_calls, limits.max_cost_usd) == (n, usd)


def test_usage_limits_is_a_run_option() -> None:
    assert "usage_limits" in RunOptions.KEYWORDS
    assert ptcflow.UsageLimits is UsageLimits
    with pytest.raises(UsageError, match="usage_limits must be a UsageLimits, got dict"):
        RunOptions(usage_limits={"max_requests": 1})  # type: ignore[arg-type]


async def test_the_request_past_the_budget_is_not_made() -> None:
    llm = ScriptedLLM(_looping())
    step = await _run(ReAct(), "add", llm, usage_limits=UsageLimits(max_requests=2))
    assert _details(step) == {"budget": "max_requests", "used": 3, "allowed": 2}
    assert llm.calls == 2
    assert step.error is not None and "max_requests=2 was exceeded" in step.error.message


async def test_the_tool_call_past_the_budget_is_not_made() -> None:
    ran.clear()
    llm = ScriptedLLM(_looping())
    step = await _run(ReAct(), "add", llm, usage_limits=UsageLimits(max_tool_calls=1))
    assert _details(step) == {"budget": "max_tool_calls", "used": 2, "allowed": 1}
    assert ran == [0]


@pytest.mark.parametrize(
    ("limits", "budget", "used", "allowed"),
    [
        (UsageLimits(max_input_tokens=150), "max_input_tokens", 200, 150),
        (UsageLimits(max_output_tokens=15), "max_output_tokens", 20, 15),
        (UsageLimits(max_total_tokens=200), "max_total_tokens", 220, 200),
    ],
)
async def test_tokens_are_checked_after_each_response(
    limits: UsageLimits, budget: str, used: int, allowed: int
) -> None:
    turn = Turn(
        tool_calls=(ScriptedLLM.tool_call("add", x=1, y=1),),
        usage=Usage(input_tokens=100, output_tokens=10),
    )
    llm = ScriptedLLM([turn, turn, turn, "done"])
    step = await _run(ReAct(), "add", llm, usage_limits=limits, record=True)
    assert _details(step) == {"budget": budget, "used": used, "allowed": allowed}
    assert llm.calls == 2  # the second response passed it: no third call
    assert step.usage == Usage(input_tokens=200, output_tokens=20)  # its tokens still count
    assert sum(1 for s in step.signals if s.type == USAGE) == 2


async def test_a_final_answer_past_the_budget_fails_the_run() -> None:
    llm = ScriptedLLM([Turn(text="done", usage=Usage(input_tokens=10, output_tokens=50))])
    step = await _run(ReAct(), "add", llm, usage_limits=UsageLimits(max_output_tokens=20))
    assert _details(step)["budget"] == "max_output_tokens" and step.value is None


async def test_within_the_budget_nothing_changes() -> None:
    llm = ScriptedLLM(_looping(2))
    limits = UsageLimits(max_requests=3, max_tool_calls=2, max_total_tokens=10_000)
    step = await _run(ReAct(), "add", llm, usage_limits=limits)
    assert step.ok and step.value == "done"


async def test_the_runtime_default_gives_each_run_its_own_budget() -> None:
    llm = ScriptedLLM(lambda r: "done")
    async with Runtime(llm=llm, usage_limits=UsageLimits(max_requests=1)) as rt:
        first = await rt.run(ReAct(), "a")
        second = await rt.run(ReAct(), "b")
        looping = await rt.run(ReAct(), "c", llm=ScriptedLLM(_looping()), tools=[add])
    assert first.ok and second.ok
    assert _details(looping)["budget"] == "max_requests"


def _fan_out() -> SubAgent:
    leaf = SubAgent(prompt="Leaf {{i}}", signature="(i :int) -> :int", name="leaf")
    return SubAgent(prompt="Fan out", tools=[leaf.as_tool(), add])


def _router(request: Any) -> str:
    task = next(m.content for m in request.messages if m.role == "user")
    if task.startswith("Leaf"):
        return "(return ctx/i)"
    if len(request.messages) < 3:
        return '(pmap #(call "leaf" {:i %}) [1 2 3])'
    return "(return :done)"


async def test_concurrent_children_share_the_run_budget() -> None:
    llm = ScriptedLLM(_router)
    ok = await _run(_fan_out(), None, llm, usage_limits=UsageLimits(max_requests=5))
    assert ok.ok, ok.fail
    llm = ScriptedLLM(_router)
    step = await _run(_fan_out(), None, llm, usage_limits=UsageLimits(max_requests=3))
    assert not step.ok and step.error is not None
    assert step.error.type == "usage_limit_exceeded", step.error
    assert llm.calls == 3  # the root's turn and two leaves: the third leaf never asked


async def test_a_program_tool_call_past_the_budget_ends_the_run() -> None:
    ran.clear()
    agent = SubAgent(prompt="Add", signature=":int", tools=[add])
    llm = ScriptedLLM(['(+ (call "add" {:x 1 :y 2}) (call "add" {:x 3 :y 4}))'])
    step = await _run(agent, None, llm, usage_limits=UsageLimits(max_tool_calls=1))
    assert not step.ok and step.error is not None
    assert step.error.type == "usage_limit_exceeded", step.error
    assert step.error.details == {"budget": "max_tool_calls", "used": 2, "allowed": 1}
    assert ran == [1]


async def test_agent_run_takes_usage_limits() -> None:
    agent = SubAgent(prompt="Loop", signature=":int", max_turns=10)
    llm = ScriptedLLM(lambda r: "(+ 1 2)")
    step = await agent.run(llm=llm, usage_limits=UsageLimits(max_requests=2))
    assert not step.ok and step.error is not None
    assert step.error.type == "usage_limit_exceeded" and llm.calls == 2
