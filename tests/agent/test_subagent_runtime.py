"""SubAgents on an open Runtime: ``rt.run(agent, ...)``, ``rt.start``, many at once."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ptcflow import Step, SubAgent
from ptcflow.errors import UsageError
from ptcflow.runtime import LLMRequest, Plannable, Runtime
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .ptc_support import block

pytestmark = pytest.mark.anyio


def lookup(user: str) -> dict[str, Any]:
    """A user's record."""
    return {"user": user, "orders": len(user)}


AGENT = SubAgent(
    prompt="How many orders has {{user}}?",
    signature="(user :string) -> {orders :int}",
    tools=[lookup],
    name="orders",
)


def model(request: LLMRequest) -> str:
    """Every run asks one tool call, then returns (the turn is in the messages)."""
    if request.messages[-1].content.startswith("How many"):
        return block('(def r (call "lookup" {:user ctx/user}))\n(:orders r)')
    return block("(return {:orders (:orders r)})")


async def test_rt_run_takes_an_agent_and_its_options() -> None:
    assert isinstance(AGENT, Plannable)
    async with Runtime(llm=ScriptedLLM(model, record=False)) as rt:
        step = await rt.run(AGENT, context={"user": "alice"}, trace=False, record=True)
        positional = await rt.run(AGENT, {"user": "bo"}, run_id="mine")
    assert step.ok and step.value == {"orders": 5} and step.trace is None
    assert step.signals[0].data.agent == "orders"  # the agent's name
    assert (positional.value, positional.run_id) == ({"orders": 2}, "mine")
    assert positional.trace is not None and len(positional.trace.turns) == 2


async def test_rt_start_runs_an_agent_in_the_background() -> None:
    async with Runtime(llm=ScriptedLLM(model, record=False)) as rt:
        handle = rt.start(AGENT, context={"user": "carol"})
        step = await handle.wait()
    assert step.ok and step.value == {"orders": 5}


async def test_agent_options_are_checked_when_rt_run_is_called() -> None:
    async with Runtime(llm=ScriptedLLM(model)) as rt:
        with pytest.raises(UsageError, match="unknown run options"):
            await rt.run(AGENT, context={"user": "a"}, temperature=0)
        with pytest.raises(UsageError, match="tools belong to the agent"):
            await rt.run(AGENT, context={"user": "a"}, tools=[lookup])
        with pytest.raises(UsageError, match="given twice"):
            await rt.run(AGENT, {"user": "a"}, context={"user": "b"})
        with pytest.raises(UsageError, match="must be a mapping"):
            await rt.run(AGENT, context=[1])
        with pytest.raises(UsageError, match="unknown options"):
            await rt.run(ReAct(), "hi", context={"user": "a"})


async def test_an_agent_without_a_model_on_a_runtime_without_one() -> None:
    async with Runtime() as rt:
        with pytest.raises(UsageError, match="has no LLM"):
            await rt.run(AGENT, context={"user": "a"})
        assert rt.statistics().runs_started == 0  # refused before the run (and any request)


async def test_the_agents_model_or_the_runs_wins_over_the_runtimes() -> None:
    runtime_llm = ScriptedLLM(model)
    own = ScriptedLLM([block("(return {:orders 9})")])
    async with Runtime(llm=runtime_llm) as rt:
        step = await rt.run(AGENT, context={"user": "a"}, llm=own)
    assert step.value == {"orders": 9} and not runtime_llm.requests


# The thousand programs' sync `lookup` calls queue for worker threads while the loop is busy
# with the other runs; that wait counts against a program's time limit (5 s), and with two
# other processes on the machine's two cores some first turns ran out of it. This test is
# about concurrency, not that limit.
PATIENT = SubAgent(
    prompt=AGENT.prompt,
    signature=AGENT.signature,
    tools=[lookup],
    name="orders",
    program_limits={"timeout_ms": 60_000},
)


async def test_a_thousand_agents_run_concurrently_on_one_runtime() -> None:
    llm = ScriptedLLM(model, record=False, latency=0.01)
    steps: dict[str, Step] = {}
    async with Runtime(llm=llm) as rt:

        async def one(i: int) -> None:
            user = "u" * (i % 9 + 1)
            steps[f"{i}"] = await rt.run(PATIENT, context={"user": user}, trace=False)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(1000):
                    tg.start_soon(one, i)
        stats = rt.statistics()
    assert len(steps) == 1000
    wrong = [
        (i, s.fail or s.value) for i, s in steps.items() if s.value != {"orders": int(i) % 9 + 1}
    ]
    assert not wrong, f"{len(wrong)} runs went wrong, the first: {wrong[0]}"
    assert llm.calls == 2000 and stats.runs_started == 1000 and stats.in_flight == 0
    assert stats.max_in_flight > 100  # they really overlapped (each model call waits 10 ms)
