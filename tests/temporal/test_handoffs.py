"""Handoffs on Temporal: the next agent runs as a child workflow given the conversation,
its answer ends the caller's run, as on a local Runtime."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ptcflow import ConfigError, Session, SubAgent, UsageError, handoff
from ptcflow.agent import MAX_HANDOFFS_EXCEEDED, UNKNOWN_AGENT
from ptcflow.runtime import Runtime
from ptcflow.sessions import remove_all_tools
from ptcflow.signals import HANDOFF, HandoffData, Message
from ptcflow.strategies import ReAct
from ptcflow.temporal import TemporalOptions, TemporalRuntime, check_determinism
from temporal.agents import (
    BILLING,
    PAY_BACK,
    PING,
    ROUTE,
    TO_REFUNDS,
    TRIAGE,
    add,
    last_two,
    model,
    say_no,
)

pytestmark = pytest.mark.anyio

triage = ReAct(name="triage", system_prompt=TRIAGE)
billing = ReAct(name="billing", system_prompt=BILLING)


async def test_a_react_hands_the_conversation_on_as_it_does_locally(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    tools = [add, handoff(billing)]
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(triage, "Refund order 7", tools=tools, record=True)
    async with Runtime(llm=model()) as rt:
        local = await rt.run(triage, "Refund order 7", tools=tools)
    assert step.ok, step.error
    assert (step.value, step.agent, step.reason) == (
        "billing saw user,assistant,tool,assistant,tool",
        "billing",
        "handoff",
    )
    assert (step.value, step.agent, step.messages) == (local.value, local.agent, local.messages)
    handed = [s.data for s in step.signals if s.type == HANDOFF]
    assert handed == [
        HandoffData(
            from_agent="triage",
            to_agent="billing",
            tool_name="transfer_to_billing",
            messages=5,
            chain=("triage",),
        )
    ]
    # the next agent ran as the call's child workflow; both histories replay
    ids = [step.run_id, f"{step.run_id}/call_handoff"]
    child = await client.get_workflow_handle(ids[1]).describe()
    assert child.status.name == "COMPLETED"
    histories = [await client.get_workflow_handle(i).fetch_history() for i in ids]
    assert await check_determinism(histories) == 2


async def test_a_named_agent_with_the_built_in_filter(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    tools = [add, handoff("billing", input_filter=remove_all_tools)]
    async with TemporalRuntime(client=client, options=options, agents={"billing": billing}) as trt:
        step = await trt.run(triage, "Refund order 7", tools=tools)
        unknown = await trt.run(triage, "Refund order 7", tools=[add, handoff("refunds")])
    assert step.ok, step.error
    assert (step.value, step.agent) == ("billing saw user", "billing")  # no tool messages
    assert len(step.messages) == 6  # what is kept is whole: only what was sent is filtered
    assert not unknown.ok and unknown.error is not None
    assert unknown.error.type == UNKNOWN_AGENT
    assert "'refunds'" in unknown.error.message and "agents=" in unknown.error.message


async def test_a_react_hands_over_to_a_subagent_with_the_arguments_as_its_task(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    refunds = SubAgent(
        name="refunds", prompt=PAY_BACK + " {{order}}", signature="(order :int) -> :string"
    )
    desk = ReAct(name="desk", system_prompt=TO_REFUNDS)
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(desk, "I want my money back for 7", tools=[handoff(refunds)])
    async with Runtime(llm=model()) as rt:
        local = await rt.run(desk, "I want my money back for 7", tools=[handoff(refunds)])
    assert step.ok, step.error
    assert (step.value, step.agent) == ("refunded", "refunds")
    assert [(m.role, m.content) for m in step.messages[-2:]] == [
        ("user", PAY_BACK + " 7"),
        ("assistant", '"refunded"'),
    ]
    assert (step.value, step.agent, step.messages) == (local.value, local.agent, local.messages)


async def test_a_program_calling_a_handoff_tool_gets_the_next_agents_answer(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    router = SubAgent(
        name="router",
        prompt=ROUTE + " {{q}}",
        signature="(q :string) -> :string",
        tools=[handoff(billing, tools=[])],
    )
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(router, context={"q": "refund"}, record=True)
    async with Runtime(llm=model()) as rt:
        local = await rt.run(router, context={"q": "refund"})
    assert step.ok, step.error
    # billing was given the SubAgent's conversation: its task (the program is no message)
    assert step.value == local.value == "billing saw user"
    assert step.agent == "router"  # a program gets the answer; its SubAgent returns it
    handed = [s.data for s in step.signals if s.type == HANDOFF]
    assert [(h.from_agent, h.to_agent) for h in handed] == [("router", "billing")]


async def test_a_cycle_of_handoffs_ends_at_max_handoffs(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    agents = {
        "ping": ReAct(name="ping", system_prompt=PING),
        "pong": ReAct(name="pong", system_prompt=PING + " back"),
    }
    tools = [handoff("ping"), handoff("pong")]
    limited = msgspec.structs.replace(options, max_handoffs=2)
    async with TemporalRuntime(client=client, options=limited, agents=agents) as trt:
        step = await trt.run(agents["ping"], "go", tools=tools, record=True)
    assert not step.ok and step.error is not None
    assert step.error.type == MAX_HANDOFFS_EXCEEDED, step.error
    assert "ping → pong → ping → pong" in step.error.message
    assert "TemporalOptions(max_handoffs=...)" in step.error.message
    assert step.reason == "handoff_failed"


def test_max_handoffs_is_checked() -> None:
    with pytest.raises(ConfigError, match="max_handoffs must be an int >= 0"):
        TemporalOptions(max_handoffs=-1)


async def test_a_session_goes_on_with_the_agent_that_answered_last(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    session = Session("desk")
    tools = [add, handoff(billing)]
    async with TemporalRuntime(client=client, options=options) as trt:
        first = await trt.run(triage, "Refund order 7", tools=tools, session=session)
        second = await trt.run(triage, "And order 8?", tools=tools, session=session)
    assert (first.agent, second.agent) == ("billing", "billing")
    assert second.run_id == "desk/turn-1"
    # billing took the turn at once: its model saw the whole stored conversation
    assert second.value == "billing saw " + ",".join(m.role for m in [*first.messages, _user()])
    assert await session.messages() == second.messages


def _user() -> Message:
    return Message(role="user", content="")


async def test_a_filter_of_your_own_runs_on_a_worker(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(
            triage, "Refund order 7", tools=[add, handoff(billing, input_filter=last_two)]
        )
        failed = await trt.run(
            triage, "Refund order 7", tools=[add, handoff(billing, input_filter=say_no)]
        )
    async with Runtime(llm=model()) as rt:
        local = await rt.run(
            triage, "Refund order 7", tools=[add, handoff(billing, input_filter=last_two)]
        )
    assert step.ok, step.error
    assert step.value == local.value == "billing saw assistant,tool"  # the handoff call, answered
    assert not failed.ok and failed.error is not None
    assert "'say_no'" in failed.error.message and "no conversation today" in failed.error.message


def test_a_filter_a_worker_cannot_import_is_refused_on_temporal() -> None:
    rt = TemporalRuntime(address="127.0.0.1:1")
    tools = [handoff(billing, input_filter=lambda messages: messages[-2:])]
    with pytest.raises(UsageError, match="input filter of handoff 'transfer_to_billing'") as caught:
        rt.run(triage, "x", tools=tools).close()  # never reached: run() raises
    assert "define it at module level" in str(caught.value)


def test_a_conversation_too_large_to_hand_over_is_a_clear_error() -> None:
    from ptcflow.temporal._family import _too_large
    from ptcflow.temporal._refs import agent_ref
    from ptcflow.temporal._spec import RunSpec

    history = tuple(Message(role="user", content=f"message {i} " * 50) for i in range(200))
    spec = RunSpec(agent=agent_ref(billing), run_id="r", history=history)
    small = msgspec.structs.replace(spec, options=TemporalOptions(max_payload_bytes=1_000))
    refused = _too_large(spec, small, "handoff 'transfer_to_billing' to 'billing'")
    assert refused is not None and refused.error.type == "payload_too_large"
    assert "handoff 'transfer_to_billing'" in refused.error.message
    assert "remove_all_tools" in refused.error.message
    assert _too_large(spec, spec, "handoff") is None  # within the default 2 MB
