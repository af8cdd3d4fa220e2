"""Approvals in SubAgents: the JSON mode's native calls, a run with a context resumed
without passing it again, ``agent.resume`` / ``resume_sync``, and denials the model reads."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import ptcflow
from ptcflow import SubAgent
from ptcflow.core import PauseMismatchError
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import Tool

pytestmark = pytest.mark.anyio


class Refunds:
    """A refund tool that asks first, and the refunds it made."""

    def __init__(self) -> None:
        self.made: list[int] = []

        def refund(amount: int) -> str:
            """Refund an amount."""
            self.made.append(amount)
            return f"refunded {amount}"

        self.tool: Tool = ptcflow.tool(refund, requires_approval=True)


def task_of(request: LLMRequest) -> str:
    return next(m.content for m in request.messages if m.role == "user")


def roundtrip(step: Step) -> Step:
    return msgspec.json.decode(msgspec.json.encode(step), type=Step)


# -- the JSON mode -----------------------------------------------------------------------------


def json_agent(refunds: Refunds) -> SubAgent:
    return SubAgent(
        prompt="Refund order {{order}}",
        signature="(order :int) -> {status :string}",
        name="clerk",
        output="json",
        tools={"refund": refunds.tool},
    )


def json_answers(request: LLMRequest) -> Any:
    if len(request.messages) < 3:
        return ScriptedLLM.tool_call("refund", amount=40)
    return msgspec.json.encode({"status": request.messages[-1].content}).decode()


async def test_a_json_mode_call_pauses_and_runs_once_approved() -> None:
    refunds = Refunds()
    agent = json_agent(refunds)
    llm = ScriptedLLM(json_answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(agent, context={"order": 7})
    assert paused.paused and refunds.made == []
    (pending,) = paused.pending
    assert pending.tool == "refund" and pending.arguments == {"amount": 40}
    assert pending.agent == ("clerk",) and pending.kind == "approval"
    async with Runtime(llm=llm) as rt:
        step = await rt.resume(roundtrip(paused), {pending.call_id: ptcflow.Approve()}, agent=agent)
    assert step.ok, step.error
    assert refunds.made == [40]
    assert len(llm.requests) == 2
    assert "refunded 40" in step.value["status"]
    assert task_of(llm.requests[1]) == "Refund order 7"  # the context, from the journal


async def test_a_json_mode_denial_is_a_tool_error_with_the_reason() -> None:
    refunds = Refunds()
    agent = json_agent(refunds)
    llm = ScriptedLLM(json_answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(agent, context={"order": 7})
        (pending,) = paused.pending
        step = await rt.resume(
            paused, {pending.call_id: ptcflow.Deny("needs a manager")}, agent=agent
        )
    assert step.ok and refunds.made == []
    said = llm.requests[1].messages[-1].content
    assert "approval_denied" in said and "needs a manager" in said
    assert "needs a manager" in step.value["status"]


# -- a run with a context ----------------------------------------------------------------------


def ptc_agent(refunds: Refunds) -> SubAgent:
    return SubAgent(
        prompt="Refund {{amount}} on order {{order}}",
        signature="(amount :int, order :int) -> {done :string}",
        name="refunder",
        tools={"refund": refunds.tool},
    )


def ptc_answers(request: LLMRequest) -> Any:
    if len(request.messages) < 4:
        return '(return {:done (call "refund" {:amount ctx/amount})})'
    return '(return {:done (str "refused: " (:message ctx/fail))})'


async def test_a_run_with_a_context_resumes_without_it() -> None:
    refunds = Refunds()
    agent = ptc_agent(refunds)
    llm = ScriptedLLM(ptc_answers)
    async with Runtime(llm=llm) as rt:
        # "12" is coerced to 12 by the signature: the journal keeps what the run used
        paused = await rt.run(agent, context={"amount": "12", "order": 3})
        (pending,) = paused.pending
        assert pending.arguments == {"amount": 12}
    async with Runtime(llm=llm) as rt:
        step = await rt.resume(roundtrip(paused), {pending.call_id: ptcflow.Approve()}, agent=agent)
    assert step.ok and step.value == {"done": "refunded 12"}
    assert refunds.made == [12]
    assert len(llm.requests) == 1  # the program re-ran from its record


async def test_the_same_context_may_be_given_again_another_is_refused() -> None:
    refunds = Refunds()
    agent = ptc_agent(refunds)
    llm = ScriptedLLM(ptc_answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(agent, context={"amount": "12", "order": 3})
        (pending,) = paused.pending
        decisions = {pending.call_id: ptcflow.Approve()}
        with pytest.raises(PauseMismatchError, match="another context"):
            await rt.resume(paused, decisions, agent=agent, context={"amount": 13, "order": 3})
        assert refunds.made == []
        step = await rt.resume(paused, decisions, agent=agent, context={"order": 3, "amount": "12"})
    assert step.ok and refunds.made == [12]


async def test_a_ptc_denial_is_the_programs_tool_error_the_model_reads() -> None:
    refunds = Refunds()
    agent = ptc_agent(refunds)
    llm = ScriptedLLM(ptc_answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(agent, context={"amount": 12, "order": 3})
        (pending,) = paused.pending
        step = await rt.resume(
            paused, {pending.call_id: ptcflow.Deny("order is closed")}, agent=agent
        )
    assert step.ok and refunds.made == []
    assert step.value["done"].startswith("refused: ") and "order is closed" in step.value["done"]
    assert step.trace is not None
    (call,) = step.trace.turns[0].execution.tool_calls
    assert call.error is not None and call.error.category == "approval_denied"
    assert "order is closed" in call.error.message
    said = llm.requests[1].messages[-1].content
    assert "approval_denied" in said and "order is closed" in said


# -- agent.resume ------------------------------------------------------------------------------


async def test_agent_resume_mirrors_agent_run() -> None:
    refunds = Refunds()
    agent = ptc_agent(refunds)
    llm = ScriptedLLM(ptc_answers)
    paused = await agent.run(llm=llm, context={"amount": 5, "order": 1})
    assert paused.paused
    (pending,) = paused.pending
    step = await agent.resume(roundtrip(paused), {pending.call_id: ptcflow.Approve()}, llm=llm)
    assert step.ok and step.value == {"done": "refunded 5"} and refunds.made == [5]
    async with Runtime(llm=llm) as rt:  # on a Runtime of the caller's
        paused = await agent.run(runtime=rt, context={"amount": 6, "order": 1})
        (pending,) = paused.pending
        step = await agent.resume(paused, {pending.call_id: ptcflow.Approve()}, runtime=rt)
    assert step.ok and refunds.made == [5, 6]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_resume_sync_from_synchronous_code(backend: str) -> None:
    refunds = Refunds()
    agent = ptc_agent(refunds)
    llm = ScriptedLLM(ptc_answers)
    paused = agent.run_sync(backend=backend, llm=llm, context={"amount": 8, "order": 2})
    (pending,) = paused.pending
    step = agent.resume_sync(
        paused, {pending.call_id: ptcflow.Deny("no")}, backend=backend, llm=llm
    )
    assert step.ok and step.value == {
        "done": "refused: tool \"refund\" failed: approval_denied: the call of tool 'refund' "
        "was denied: no"
    }
    assert refunds.made == []


async def test_resume_sync_inside_an_event_loop_is_refused() -> None:
    agent = ptc_agent(Refunds())
    with pytest.raises(ptcflow.UsageError, match=r"await agent\.resume"):
        agent.resume_sync(Step(run_id="r", ok=False), {})


# -- a JSON-mode agent used as a tool by a program ------------------------------------------------


async def test_a_json_mode_child_called_from_a_program_pauses_and_resumes() -> None:
    refunds = Refunds()
    clerk = json_agent(refunds)
    root = SubAgent(
        prompt="Settle order 7",
        signature="{status :string}",
        name="root",
        tools={"clerk": clerk.as_tool()},
    )

    def answers(request: LLMRequest) -> Any:
        if task_of(request) == "Settle order 7":
            return '(return (call "clerk" {:order 7}))'
        return json_answers(request)

    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm) as rt:
        paused = await root.run(runtime=rt)
        (pending,) = paused.pending
        assert pending.agent == ("root", "clerk")
        assert pending.call_id.startswith(f"{paused.run_id}/program/1/tool/0/")
        step = await root.resume(paused, {pending.call_id: ptcflow.Approve()}, runtime=rt)
    assert step.ok, step.error
    assert refunds.made == [40] and "refunded 40" in step.value["status"]
    assert len(llm.requests) == 3  # root once, the clerk twice: nobody was asked again
