"""A SubAgent's run options: packed once, checked once by the agent, with the fix named."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow import SubAgent
from ptcflow.agent._plan import AgentOptions
from ptcflow.errors import UsageError
from ptcflow.runtime import RunOptions, Runtime
from ptcflow.testing import ScriptedLLM

from .ptc_support import block

pytestmark = pytest.mark.anyio

AGENT = SubAgent(prompt="Double {{x}}", signature="(x :int) -> {y :int}", name="doubler")


def model(request: Any) -> str:
    return block("(return {:y (* 2 ctx/x)})")


async def test_an_unknown_agent_option_names_it_and_lists_both_kinds_of_valid_ones() -> None:
    async with Runtime(llm=ScriptedLLM(model)) as rt:
        with pytest.raises(UsageError) as info:
            await rt.run(AGENT, contxt={"x": 1})
    message = str(info.value)
    assert "SubAgent('doubler') got unknown run options ['contxt']" in message
    assert all(f in message for f in AgentOptions.__struct_fields__)
    assert all(k in message for k in RunOptions.KEYWORDS)


async def test_an_agent_runs_from_one_run_options_value() -> None:
    options = RunOptions(run_id="d1", record=True, agent_options={"context": {"x": 4}})
    async with Runtime(llm=ScriptedLLM(model)) as rt:
        step = await rt.run(AGENT, options=options)
        with pytest.raises(UsageError, match="given twice"):
            await rt.run(AGENT, options=options, run_id="d2")
    assert (step.ok, step.value, step.run_id) == (True, {"y": 8}, "d1") and step.signals


async def test_agent_run_and_rt_run_plan_the_same_run() -> None:
    llm = ScriptedLLM(model)
    own = await AGENT.run(llm=llm, context={"x": 3}, trace=False, run_id="a")
    async with Runtime(llm=llm) as rt:
        shared = await rt.run(AGENT, context={"x": 3}, trace=False, run_id="b")
    assert own.value == shared.value == {"y": 6} and own.trace is shared.trace is None
    assert AgentOptions.of("doubler", {"trace": False}).inherited() == {
        "trace": False,
        "debug": False,
    }
