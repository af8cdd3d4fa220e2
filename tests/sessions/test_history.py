"""History in and out: ``rt.run(..., history=step.messages)`` continues a conversation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from ptcflow import SubAgent, UsageError
from ptcflow.runtime import RunOptions, Runtime
from ptcflow.sessions import check_history
from ptcflow.signals import Message, Ok, ToolCall
from ptcflow.strategies import Outcome, ReAct, RunInfo
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def _roles(messages: Any) -> list[str]:
    return [m.role for m in messages]


async def test_react_continues_a_conversation_from_step_messages() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5", "10"])
    async with Runtime(llm=llm, tools=[add]) as rt:
        react = ReAct(system_prompt="Be brief.")
        first = await rt.run(react, "What is 2 + 3?")
        assert first.value == "5"
        # the whole conversation, without the system prompt (the strategy's, not the chat's)
        assert _roles(first.messages) == ["user", "assistant", "tool", "assistant"]
        second = await rt.run(react, "Double it.", history=first.messages)
    assert second.value == "10"
    assert second.messages[: len(first.messages)] == first.messages
    assert _roles(second.messages[len(first.messages) :]) == ["user", "assistant"]
    sent = llm.requests[-1].messages
    assert _roles(sent) == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[1].content == "What is 2 + 3?" and sent[-1].content == "Double it."


async def test_a_history_read_back_from_json_is_accepted() -> None:
    llm = ScriptedLLM(["Paris, still."])
    history = [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
    ]
    async with Runtime(llm=llm) as rt:
        step = await rt.run(ReAct(), "And now?", history=history)
    assert [m.content for m in llm.requests[0].messages] == [
        "Capital of France?",
        "Paris.",
        "And now?",
    ]
    assert step.messages[0] == Message(role="user", content="Capital of France?")


async def test_a_tool_call_without_its_result_is_refused_before_any_model_call() -> None:
    llm = ScriptedLLM(["never"])
    call = ToolCall(id="c1", name="add", input={"x": 1, "y": 2})
    history = [Message(role="user", content="1+2?"), Message(role="assistant", tool_calls=(call,))]
    async with Runtime(llm=llm, tools=[add]) as rt:
        with pytest.raises(UsageError, match=r"history\[1\] calls tool 'add' \(call 'c1'\)"):
            await rt.run(ReAct(), "go on", history=history)
        orphan = [Message(role="tool", content="3", tool_call_id="c9")]
        with pytest.raises(UsageError, match=r"history\[0\] is a tool result for 'c9'"):
            await rt.run(ReAct(), "go on", history=orphan)
        with pytest.raises(UsageError, match=r"history\[0\] is not a message"):
            await rt.run(ReAct(), "go on", history=[{"role": "robot"}])
    assert llm.calls == 0


class _NoConversation:
    """A strategy without a ``conversation`` method."""

    name = "plain"

    def init(self, run: RunInfo) -> tuple[None, tuple[()]]:
        return None, ()

    def handle(self, state: None, signal: object) -> tuple[None, tuple[()]]:
        return None, ()

    def outcome(self, state: None) -> Outcome:
        return Outcome(result=Ok(payload=1))

    def snapshot(self, state: None) -> None:
        return None


async def test_a_strategy_that_keeps_no_conversation_refuses_a_history() -> None:
    async with Runtime(llm=ScriptedLLM([])) as rt:
        with pytest.raises(UsageError, match="_NoConversation keeps no conversation"):
            await rt.run(_NoConversation(), "x", history=[Message(role="user", content="hi")])


async def test_a_ptc_subagent_follow_up_sees_earlier_answers_in_its_task() -> None:
    agent = SubAgent(prompt="{{question}}", signature="(question :string) -> :int")
    llm = ScriptedLLM(["(return 5)", "(return 10)"])
    async with Runtime(llm=llm) as rt:
        first = await rt.run(agent, context={"question": "What is 2 + 3?"})
        assert first.value == 5
        assert [(m.role, m.content) for m in first.messages] == [
            ("user", "What is 2 + 3?"),
            ("assistant", "5"),
        ]
        second = await rt.run(agent, context={"question": "Double it."}, history=first.messages)
    assert second.value == 10
    task = llm.requests[-1].messages[1].content
    assert task == (
        "## Earlier in this conversation\nuser: What is 2 + 3?\nassistant: 5\n\n## Now\nDouble it."
    )
    assert [m.content for m in second.messages] == ["What is 2 + 3?", "5", "Double it.", "10"]


async def test_the_json_mode_continues_a_conversation() -> None:
    agent = SubAgent(
        prompt="Rate {{text}}", signature="(text :string) -> {score :int}", output="json"
    )
    llm = ScriptedLLM(['{"score": 3}', '{"score": 5}'])
    async with Runtime(llm=llm) as rt:
        first = await rt.run(agent, context={"text": "good"})
        assert first.value == {"score": 3}
        assert _roles(first.messages) == ["user", "assistant"]
        second = await agent.run(context={"text": "great"}, history=first.messages, runtime=rt)
    assert second.value == {"score": 5}
    assert second.messages[:2] == first.messages
    sent = llm.requests[-1].messages
    assert _roles(sent) == ["system", "user", "assistant", "user"]
    assert sent[2].content == '{"score": 3}'


def test_history_is_a_run_option_and_checked_when_the_options_are_built() -> None:
    assert "history" in RunOptions.KEYWORDS and "session" in RunOptions.KEYWORDS
    assert RunOptions(history=None).history == ()  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="sequence of messages"):
        RunOptions(history="hello")


_CALL_IDS = st.lists(st.sampled_from("abcdef"), unique=True, max_size=3)


def _exchange(ids: list[str]) -> list[Message]:
    """A user question, an assistant turn calling ``ids``, their results, an answer."""
    out = [Message(role="user", content="q")]
    if ids:
        calls = tuple(ToolCall(id=i, name="t") for i in ids)
        out.append(Message(role="assistant", tool_calls=calls))
        out += [Message(role="tool", content="r", tool_call_id=i) for i in reversed(ids)]
    out.append(Message(role="assistant", content="a"))
    return out


@given(st.lists(_CALL_IDS, max_size=4), st.data())
def test_check_history_accepts_whole_exchanges_and_refuses_any_dropped_result(
    exchanges: list[list[str]], data: st.DataObject
) -> None:
    history = [m for ids in exchanges for m in _exchange(ids)]
    assert check_history(history) == tuple(history)
    results = [i for i, m in enumerate(history) if m.role == "tool"]
    if results:
        dropped = data.draw(st.sampled_from(results))
        with pytest.raises(UsageError, match="no tool message answers it"):
            check_history(history[:dropped] + history[dropped + 1 :])


async def test_the_journal_carries_the_history_so_a_continued_run_replays() -> None:
    from ptcflow.strategies import replay

    llm = ScriptedLLM(["one", "two"])
    async with Runtime(llm=llm) as rt:
        first = await rt.run(ReAct(), "hi")
        second = await rt.run(ReAct(), "again", history=first.messages, record=True)
    state = replay(ReAct(), list(second.signals))  # no model, no tool
    assert ReAct().conversation(state) == second.messages
