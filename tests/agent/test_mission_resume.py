"""A mission's turn budget across a pause: the model calls made before an approval
paused the run count after it is resumed (``rt.resume``, ``agent.resume``), as the
run's ``UsageLimits`` do."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import ptcflow
from ptcflow import MissionLimits, SubAgent
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import Tool

pytestmark = pytest.mark.anyio


def _refund(made: list[int]) -> Tool:
    def refund(amount: int) -> str:
        """Refund an amount."""
        made.append(amount)
        return f"refunded {amount}"

    return ptcflow.tool(refund, requires_approval=True)


def _turn(request: LLMRequest) -> int:
    """The agent's turn of a request: 1 + its earlier answers."""
    return 1 + sum(1 for m in request.messages if m.role == "assistant")


def _answers(refund_on: tuple[int, ...]) -> Any:
    """A model that refunds on the turns ``refund_on`` and never returns otherwise."""

    def answer(request: LLMRequest) -> str:
        turn = _turn(request)
        if turn in refund_on:
            return f'(call "refund" {{:amount {turn}}})'
        return f"(+ {turn} 1)"  # no (return ...): the run takes another turn

    return answer


def _agent(made: list[int], **options: Any) -> SubAgent:
    return SubAgent(
        prompt="Refund",
        signature=":int",
        name="refunder",
        tools={"refund": _refund(made)},
        **options,
    )


def _roundtrip(step: Step) -> Step:
    return msgspec.json.decode(msgspec.json.encode(step), type=Step)


def _approve(step: Step) -> dict[str, ptcflow.Approve]:
    assert step.paused, step.error
    return {p.call_id: ptcflow.Approve() for p in step.pending}


async def test_turns_before_the_pause_count_after_it() -> None:
    made: list[int] = []
    agent = _agent(made, max_turns=50)
    llm = ScriptedLLM(_answers(refund_on=(3,)))
    limits = MissionLimits(turn_budget=5)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(agent, mission_limits=limits)
        assert paused.paused and paused.turns == 3 and len(llm.requests) == 3
    async with Runtime(llm=llm) as rt:  # another Runtime, the paused Step as JSON
        step = await rt.resume(
            _roundtrip(paused), _approve(paused), agent=agent, mission_limits=limits
        )
    assert made == [3]
    assert len(llm.requests) == 5  # 5 - 3 = 2 more model calls, not 5
    assert not step.ok and step.fail is not None
    assert step.fail.reason == "turn_budget_exceeded"
    assert step.error is not None and "turn budget of 5 model calls is spent" in step.error.message
    assert step.turns == 6  # 5 answered + the refused one


async def test_a_run_resumed_twice_counts_both_pauses() -> None:
    made: list[int] = []
    agent = _agent(made, max_turns=50)
    llm = ScriptedLLM(_answers(refund_on=(2, 4)))
    async with Runtime(llm=llm) as rt:
        first = await rt.run(agent, mission_limits={"turn_budget": 6})
        assert first.turns == 2
        second = await rt.resume(
            first, _approve(first), agent=agent, mission_limits={"turn_budget": 6}
        )
        assert second.paused and second.turns == 4 and len(llm.requests) == 4
        step = await rt.resume(
            second, _approve(second), agent=agent, mission_limits={"turn_budget": 6}
        )
    assert made == [2, 4]
    assert len(llm.requests) == 6
    assert step.fail is not None and step.fail.reason == "turn_budget_exceeded"


async def test_agent_resume_counts_the_turns_too() -> None:
    made: list[int] = []
    agent = _agent(made, max_turns=50)
    llm = ScriptedLLM(_answers(refund_on=(2,)))
    paused = await agent.run(llm=llm, mission_limits={"turn_budget": 3})
    assert paused.turns == 2
    step = await agent.resume(
        _roundtrip(paused), _approve(paused), llm=llm, mission_limits={"turn_budget": 3}
    )
    assert len(llm.requests) == 3
    assert step.fail is not None and step.fail.reason == "turn_budget_exceeded"


async def test_max_turns_counts_on_across_the_pause() -> None:
    made: list[int] = []
    agent = _agent(made, max_turns=5)
    llm = ScriptedLLM(_answers(refund_on=(3,)))
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(agent)
        step = await rt.resume(paused, _approve(paused), agent=agent)
    assert len(llm.requests) == 5
    assert step.fail is not None and step.fail.reason == "max_turns_exceeded"


async def test_an_agent_called_by_react_counts_on_from_its_pause() -> None:
    """An agent called by a plain strategy starts a mission of its own (the default
    budget of 20 turns); paused and resumed in place, it counts on from its journal."""
    made: list[int] = []
    clerk = _agent(made, max_turns=50)
    answer = _answers(refund_on=(3,))

    def answers(request: LLMRequest) -> Any:
        if request.tools:  # the ReAct run: call the agent, then say what it said
            if _turn(request) == 1:
                return ScriptedLLM.tool_call("refunder")
            return "done"
        return answer(request)

    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm, tools=[clerk.as_tool()]) as rt:
        paused = await rt.run(ReAct(), "Refund")
        assert len(llm.requests) == 4  # the ReAct turn, three of the clerk
        step = await rt.resume(paused, _approve(paused), agent=ReAct())
    assert step.ok and made == [3]
    clerk_calls = [r for r in llm.requests if not r.tools]
    assert len(clerk_calls) == 20  # the mission's 20 turns, three of them before the pause
    (message,) = [m.content for m in llm.requests[-1].messages if m.role == "tool"]
    assert "turn_budget_exceeded" in message
