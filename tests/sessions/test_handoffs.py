"""Handoffs: an agent hands the conversation to another (``ptcflow.handoff``), which
answers; what the next agent sees, who answered, the journal and the trace, sessions,
and the bad input (an unknown agent, a cycle, a target that is no agent)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow import Limits, ReAct, Session, SubAgent, handoff
from ptcflow.agent import MAX_HANDOFFS_EXCEEDED, UNKNOWN_AGENT
from ptcflow.errors import RunError, UsageError
from ptcflow.runtime import Runtime, Telemetry
from ptcflow.sessions import check_history, remove_all_tools
from ptcflow.signals import HANDOFF, TOOL_RESULT, HandoffData, Message, ToolCall
from ptcflow.strategies import replay
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


def lookup(order: int) -> str:
    "Look up an order."
    return f"order {order}: paid"


def triage() -> ReAct:
    return ReAct(name="triage", system_prompt="Route the customer.")


def billing() -> ReAct:
    return ReAct(name="billing", system_prompt="You handle billing.")


def roles(messages: Any) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


async def test_the_next_agent_answers_on_the_whole_conversation() -> None:
    llm = ScriptedLLM(
        [
            ScriptedLLM.tool_call("lookup", order=7),
            ScriptedLLM.tool_call("transfer_to_billing"),
            "Refunded order 7.",
        ]
    )
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            triage(),
            "Refund order 7",
            tools=[lookup, handoff(billing(), tools=[])],
            record=True,
        )
    assert step.ok, step.error
    assert (step.value, step.agent, step.reason) == ("Refunded order 7.", "billing", "handoff")
    # the whole conversation: triage's messages, the handoff answered, billing's answer
    assert roles(step.messages) == [
        ("user", "Refund order 7"),
        ("assistant", ""),
        ("tool", '{"ok":true,"result":"order 7: paid"}'),
        ("assistant", ""),
        ("tool", '{"assistant": "billing"}'),
        ("assistant", "Refunded order 7."),
    ]
    assert step.messages[3].tool_calls[0].name == "transfer_to_billing"
    # billing saw its own system prompt, then all of it (the transfer note last), and its
    # own tools (none here), not triage's
    seen = llm.requests[-1]
    assert seen.messages[0] == Message(role="system", content="You handle billing.")
    assert seen.messages[1:] == step.messages[:5]
    assert seen.tools == ()
    assert [t.name for t in llm.requests[0].tools] == ["lookup", "transfer_to_billing"]
    # the journal: ai.handoff, then billing's run, then the handoff call's result
    (signal,) = [s for s in step.signals if s.type == HANDOFF]
    assert signal.data == HandoffData(
        from_agent="triage",
        to_agent="billing",
        tool_name="transfer_to_billing",
        messages=5,
        chain=("triage",),
    )
    assert signal.call_id == step.messages[3].tool_calls[0].id
    types = [s.type for s in step.signals]
    assert types.index(HANDOFF) < types.index(TOOL_RESULT, types.index(HANDOFF))
    # history= continues it, as any conversation (every call has its result)
    llm2 = ScriptedLLM(["You are welcome."])
    async with Runtime(llm=llm2) as rt:
        after = await rt.run(billing(), "Thanks!", history=step.messages)
    assert after.messages[: len(step.messages)] == step.messages
    assert (after.value, after.agent) == ("You are welcome.", "billing")


async def test_a_handed_over_run_replays_from_its_journal() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing"), "Done."])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(triage(), "Refund", tools=[handoff(billing())], record=True)
    state = replay(triage(), step.signals)
    assert triage().conversation(state) == step.messages
    assert triage().answered_by(state) == "billing"


async def test_remove_all_tools_hides_tool_calls_from_the_next_agent() -> None:
    llm = ScriptedLLM(
        [
            ScriptedLLM.tool_call("lookup", order=7),
            ScriptedLLM.tool_call("transfer_to_billing"),
            "Refunded.",
        ]
    )
    async with Runtime(llm=llm, tools=[lookup]) as rt:
        step = await rt.run(
            triage(),
            "Refund order 7",
            tools=[lookup, handoff(billing(), input_filter=remove_all_tools)],
        )
    assert step.ok and step.agent == "billing"
    assert roles(llm.requests[-1].messages) == [
        ("system", "You handle billing."),
        ("user", "Refund order 7"),
    ]
    assert len(step.messages) == 6  # what is kept is the whole conversation


async def test_a_filter_that_breaks_tool_pairs_fails_the_run_naming_it() -> None:
    def keep_calls_only(messages: tuple[Message, ...]) -> list[Message]:
        return [m for m in messages if m.role != "tool"]

    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing")])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            triage(), "Refund", tools=[handoff(billing(), input_filter=keep_calls_only)]
        )
    assert not step.ok and step.reason == "handoff_failed"
    assert step.error is not None and step.error.type == "validation"
    assert "'transfer_to_billing'" in step.error.message
    assert "keep_calls_only" in step.error.message
    assert "no tool message answers it" in step.error.message


async def test_a_react_hands_over_to_a_ptc_subagent_with_the_arguments_as_its_task() -> None:
    refunds = SubAgent(
        name="refunds", prompt="Refund order {{order}}", signature="(order :int) -> :string"
    )
    llm = ScriptedLLM(
        [ScriptedLLM.tool_call("transfer_to_refunds", order=7), '(return "refunded 7")']
    )
    async with Runtime(llm=llm) as rt:
        step = await rt.run(triage(), "I want my money back for 7", tools=[handoff(refunds)])
    assert (step.value, step.agent) == ("refunded 7", "refunds")
    assert roles(step.messages)[-2:] == [("user", "Refund order 7"), ("assistant", '"refunded 7"')]
    task = llm.requests[-1].messages[-1].content
    assert "user: I want my money back for 7" in task  # the conversation so far
    schema = llm.requests[0].tools[0].input_schema
    assert schema["required"] == ["order"]


async def test_a_json_subagent_hands_over_to_a_react() -> None:
    desk = SubAgent(
        name="desk",
        prompt="{{question}}",
        signature="(question :string) -> :string",
        output="json",
        tools=[handoff(billing(), tools=[])],
    )
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing"), "Refunded."])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(desk, context={"question": "Refund order 7"})
    assert step.ok, step.error
    assert (step.value, step.agent, step.reason) == ("Refunded.", "billing", "handoff")
    assert roles(step.messages)[-2:] == [
        ("tool", '{"assistant": "billing"}'),
        ("assistant", "Refunded."),
    ]


async def test_siblings_of_a_handoff_run_and_a_second_handoff_is_refused() -> None:
    calls = [
        ToolCall(id="a", name="lookup", input={"order": 7}),
        ToolCall(id="b", name="transfer_to_billing", input={}),
        ToolCall(id="c", name="transfer_to_triage", input={}),
    ]
    llm = ScriptedLLM([calls, "Billing here."])
    tools = [lookup, handoff(billing(), tools=[]), handoff(triage(), tools=[])]
    async with Runtime(llm=llm) as rt:
        step = await rt.run(triage(), "Refund order 7", tools=tools)
    assert (step.value, step.agent) == ("Billing here.", "billing")
    answers = {m.tool_call_id: m.content for m in step.messages if m.role == "tool"}
    assert answers["a"] == '{"ok":true,"result":"order 7: paid"}'
    assert answers["b"] == '{"assistant": "billing"}'
    assert "only one handoff per answer" in answers["c"]
    # billing saw the handoff call alone: the others had no result yet
    (call,) = [m for m in llm.requests[-1].messages if m.tool_calls]
    assert [c.id for c in call.tool_calls] == ["b"]


async def test_a_cycle_of_handoffs_ends_at_max_handoffs_with_a_typed_error() -> None:
    # triage and billing hand the conversation back and forth, by name
    tools = [handoff("triage"), handoff("billing")]
    agents = {"triage": triage(), "billing": billing()}
    script = [ScriptedLLM.tool_call(f"transfer_to_{n}") for n in ["billing", "triage"] * 3]
    llm = ScriptedLLM(script)
    async with Runtime(llm=llm, agents=agents, limits=Limits(max_handoffs=3)) as rt:
        step = await rt.run(triage(), "Refund", tools=tools, record=True)
    assert not step.ok
    assert step.error is not None and step.error.type == MAX_HANDOFFS_EXCEEDED
    message = step.error.message
    assert "triage → billing → triage → billing" in message
    assert "max_handoffs=3" in message and "Limits(max_handoffs=" in message
    assert step.error.details["chain"] == ["triage", "billing", "triage", "billing"]
    assert "a 4th time" in message
    assert len(llm.requests) == 4  # three handoffs made, the fourth refused
    with pytest.raises(RunError, match=MAX_HANDOFFS_EXCEEDED):
        step.unwrap()


async def test_max_handoffs_zero_refuses_every_handoff() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing")])
    async with Runtime(llm=llm, limits=Limits(max_handoffs=0)) as rt:
        step = await rt.run(triage(), "Refund", tools=[handoff(billing())])
    assert step.error is not None and step.error.type == MAX_HANDOFFS_EXCEEDED
    assert "on a 1st time, past Limits.max_handoffs=0: triage → billing" in step.error.message


async def test_a_filter_that_raises_fails_the_handoff_naming_it() -> None:
    def broken(messages: tuple[Message, ...]) -> list[Message]:
        raise KeyError("oops")

    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing")])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(triage(), "Refund", tools=[handoff(billing(), input_filter=broken)])
    assert step.error is not None and step.error.type == "validation"
    assert "the input filter 'test_a_filter_that_raises" in step.error.message
    assert "raised KeyError" in step.error.message
    assert len(llm.requests) == 1  # billing never ran


async def test_a_handoff_to_an_unknown_agent_names_it_and_the_fix() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_refunds")])
    async with Runtime(llm=llm, agents={"billing": billing()}) as rt:
        step = await rt.run(triage(), "Refund", tools=[handoff("refunds")])
    assert not step.ok and step.reason == "handoff_failed"
    assert step.error is not None and step.error.type == UNKNOWN_AGENT
    assert "'refunds'" in step.error.message and "agents: billing" in step.error.message
    assert "agents={'refunds': ...}" in step.error.message


async def test_a_name_that_is_no_agent_fails_the_handoff() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing")])
    async with Runtime(llm=llm, agents={"billing": lookup}) as rt:
        step = await rt.run(triage(), "Refund", tools=[handoff("billing")])
    assert step.error is not None and step.error.type == "validation"
    assert "agents['billing'] is function 'lookup', not an agent" in step.error.message


async def test_the_next_agent_failing_fails_the_run() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing"), ScriptedLLM.auth_error()])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(triage(), "Refund", tools=[handoff(billing())])
    assert not step.ok and step.reason == "handoff_failed"
    assert step.error is not None and step.error.type == "auth"


def test_a_target_that_is_no_agent_is_refused_at_once() -> None:
    with pytest.raises(UsageError, match="function 'lookup', not an agent"):
        handoff(lookup)
    with pytest.raises(UsageError, match="the class ReAct; pass an instance"):
        handoff(ReAct)
    with pytest.raises(UsageError, match=r"3 \(type int\), not an agent"):
        handoff(3)

    class Silent:
        name = "silent"

        def init(self, run: Any) -> Any: ...
        def handle(self, state: Any, signal: Any) -> Any: ...

    with pytest.raises(UsageError, match="Silent, which keeps no conversation"):
        handoff(Silent())
    with pytest.raises(UsageError, match="input_filter must be a function"):
        handoff(billing(), input_filter="all")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="a SubAgent brings its own tools"):
        handoff(SubAgent(prompt="hi"), tools=[lookup])
    with pytest.raises(UsageError, match="empty agent name"):
        handoff("")


async def test_the_handoff_tool_called_outside_a_run_refuses() -> None:
    tool = handoff(billing())
    with pytest.raises(UsageError, match="called outside a run"):
        await tool.fn()


async def test_a_session_goes_on_with_the_agent_that_answered_last() -> None:
    session = Session("customer-1")
    tools = [handoff(billing(), tools=[lookup])]
    llm = ScriptedLLM(
        [ScriptedLLM.tool_call("transfer_to_billing"), "Which order?", "Refunded order 7."]
    )
    async with Runtime(llm=llm) as rt:
        first = await rt.run(triage(), "I want a refund", tools=tools, session=session)
        second = await rt.run(triage(), "Order 7", tools=tools, session=session)
    assert (first.agent, second.agent) == ("billing", "billing")
    # turn 2 went to billing directly: its prompt and tools, no second handoff
    seen = llm.requests[-1]
    assert seen.messages[0].content == "You handle billing."
    assert [t.name for t in seen.tools] == ["lookup"]
    turns = await session.turns()
    assert [len(t.messages) for t in turns] == [4, 2]
    assert await session.messages() == second.messages


async def test_a_session_whose_handoff_was_refused_stays_with_the_first_agent() -> None:
    session = Session("customer-2")
    llm = ScriptedLLM(
        [
            [ToolCall(id="x", name="transfer_to_billing", input={})],
            "Billing: which order?",
            "Triage again? no: billing.",
        ]
    )
    tools = [handoff(billing(), tools=[])]
    async with Runtime(llm=llm) as rt:
        await rt.run(triage(), "Refund", tools=tools, session=session)
        # a stored conversation without the handoff answered by its note: triage goes on
        await session.delete()
        await session.append(0, "r", (Message(role="user", content="hi"),
                                      Message(role="assistant", content="hello")))  # fmt: skip
        step = await rt.run(triage(), "Refund", tools=tools, session=session)
    assert step.agent == "triage"
    assert llm.requests[-1].messages[0].content == "Route the customer."


async def test_the_handoff_shows_on_the_trace() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    llm = ScriptedLLM([ScriptedLLM.tool_call("transfer_to_billing"), "Done."])
    async with Runtime(llm=llm, telemetry=Telemetry(tracer_provider=provider)) as rt:
        await rt.run(triage(), "Refund", tools=[handoff(billing())])
    spans = {s.name: s for s in exporter.get_finished_spans()}
    call = spans["execute_tool transfer_to_billing"]
    assert call.attributes is not None
    assert call.attributes["ptcflow.handoff.from"] == "triage"
    assert call.attributes["ptcflow.handoff.to"] == "billing"
    assert [e.name for e in call.events] == [HANDOFF]
    nested = spans["invoke_agent billing"]
    assert nested.parent is not None and call.context is not None
    assert nested.parent.span_id == call.context.span_id


def test_remove_all_tools_keeps_what_was_said() -> None:
    messages = (
        Message(role="user", content="Refund 7"),
        Message(
            role="assistant", content="Let me look.", tool_calls=(ToolCall(id="1", name="lookup"),)
        ),
        Message(role="tool", content="paid", tool_call_id="1", name="lookup"),
        Message(role="assistant", content="", tool_calls=(ToolCall(id="2", name="transfer_to_b"),)),
        Message(role="tool", content="{}", tool_call_id="2", name="transfer_to_b"),
    )
    assert remove_all_tools(messages) == (
        Message(role="user", content="Refund 7"),
        Message(role="assistant", content="Let me look."),
    )


async def test_a_chain_of_handoffs_reports_the_last_agent() -> None:
    refunds = ReAct(name="refunds", system_prompt="You refund.")
    tools = [handoff(billing(), tools=[handoff(refunds, tools=[])])]
    llm = ScriptedLLM(
        [
            ScriptedLLM.tool_call("transfer_to_billing"),
            ScriptedLLM.tool_call("transfer_to_refunds"),
            "Refunded.",
        ]
    )
    seen: list[Any] = []

    class Bus:
        def publish(self, signal: Any) -> None:
            if signal.type == HANDOFF:
                seen.append(signal.data)

    async with Runtime(llm=llm, bus=Bus()) as rt:
        step = await rt.run(triage(), "Refund", tools=tools)
    assert (step.value, step.agent) == ("Refunded.", "refunds")
    assert [(d.from_agent, d.to_agent, d.chain) for d in seen] == [
        ("triage", "billing", ("triage",)),
        ("billing", "refunds", ("triage", "billing")),
    ]
    assert [m.content for m in step.messages if m.role == "tool"] == [
        '{"assistant": "billing"}',
        '{"assistant": "refunds"}',
    ]
    assert step.messages[-1] == Message(role="assistant", content="Refunded.")


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Valid conversations: user and assistant messages, tool calls each answered."""
    out: list[Message] = []
    for turn in range(draw(st.integers(0, 6))):
        out.append(Message(role="user", content=draw(st.text(max_size=5))))
        for step in range(draw(st.integers(0, 2))):
            n = draw(st.integers(1, 2))
            calls = tuple(ToolCall(id=f"c{turn}.{step}.{i}", name="t") for i in range(n))
            text = draw(st.sampled_from(["", "thinking"]))
            out.append(Message(role="assistant", content=text, tool_calls=calls))
            out += [Message(role="tool", content="r", tool_call_id=c.id, name="t") for c in calls]
        out.append(Message(role="assistant", content=draw(st.text(max_size=5))))
    return out


@given(conversations())
def test_remove_all_tools_leaves_a_history_without_tools(messages: list[Message]) -> None:
    kept = remove_all_tools(messages)
    assert check_history(kept) == kept
    assert all(m.role != "tool" and not m.tool_calls for m in kept)
    assert [m for m in kept if m.role == "user"] == [m for m in messages if m.role == "user"]
    assert [m.content for m in kept if m.role == "assistant"] == [
        m.content for m in messages if m.role == "assistant" and (m.content or not m.tool_calls)
    ]


async def test_continue_without_a_history_is_invalid_input() -> None:
    async with Runtime(llm=ScriptedLLM([])) as rt:
        step = await rt.run(billing(), {"continue": True})
    assert step.reason == "invalid_input"
    assert step.error is not None and "has no history: pass history=" in step.error.message
    async with Runtime(llm=ScriptedLLM(["Yes?"])) as rt:
        history = [Message(role="user", content="Hello")]
        step = await rt.run(billing(), {"continue": True}, history=history)
    assert step.value == "Yes?" and [m.role for m in step.messages] == ["user", "assistant"]


async def test_a_next_agent_that_asks_first_pauses_the_run_and_resumes_it() -> None:
    from ptcflow import Approve, tool

    def refund(order: int) -> str:
        "Refund an order."
        return f"refunded {order}"

    guarded = tool(refund, requires_approval=True)
    llm = ScriptedLLM(
        [
            ScriptedLLM.tool_call("transfer_to_billing"),
            ScriptedLLM.tool_call("refund", order=7),
            "Refunded order 7.",
        ]
    )
    tools = [handoff(billing(), tools=[guarded])]
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(triage(), "Refund order 7", tools=tools, record=True)
        assert paused.paused, paused.error
        (pending,) = paused.pending
        assert pending.tool == "refund"
        done = await rt.resume(
            paused, {pending.call_id: Approve()}, agent=triage(), tools=tools, record=True
        )
    assert done.ok, done.error
    assert (done.value, done.agent) == ("Refunded order 7.", "billing")
    journal = [*paused.signals, *done.signals]
    assert len({s.id for s in journal if s.type == HANDOFF}) == 1  # not again on resume
