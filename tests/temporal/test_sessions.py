"""Conversations on Temporal: ``history=``, ``memory=`` and ``session=`` with
``TemporalRuntime``; a session's runs are workflows named by the session id and turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from ptcflow import Session, SubAgent, UsageError
from ptcflow.runtime import Step, replay_session
from ptcflow.sessions import Compaction, SessionConflictError, SQLiteStore
from ptcflow.signals import ProgramMemory
from ptcflow.strategies import ReAct
from ptcflow.temporal import TemporalOptions, TemporalRuntime
from temporal.agents import CHAT, REMEMBER, wait_for_ever

pytestmark = pytest.mark.anyio

MEMO = SubAgent(prompt=REMEMBER + " {{question}}", signature="(question :string) -> :int")


def recorded(step: Step) -> Step:
    """A Step as a replay rebuilds it."""
    return msgspec.structs.replace(step, duration_ms=0.0, signals=(), cost_usd=None)


async def test_a_session_on_temporal_is_one_workflow_per_turn_named_by_the_session(
    client: Any, worker: Any, options: TemporalOptions, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "chats.db")
    chat = ReAct(system_prompt=CHAT)
    async with TemporalRuntime(client=client, options=options) as trt:
        first = await trt.run(chat, "Hello", session=Session("chat-1", store=store))
        second = await trt.run(chat, "Who am I?", session=Session("chat-1", store=store))
    assert first.value == "#1: Hello"
    assert second.value == "#2: Hello / Who am I?"  # the workflow got the history
    assert [first.run_id, second.run_id] == ["chat-1/turn-0", "chat-1/turn-1"]
    for run_id in (first.run_id, second.run_id):
        described = await client.get_workflow_handle(run_id).describe()
        assert described.status.name == "COMPLETED"
    session = Session("chat-1", store=store)
    turns = await session.turns()
    assert [t.run_id for t in turns] == [first.run_id, second.run_id]
    assert await session.messages() == second.messages
    assert first.signals == ()  # recorded for the session's journal, not handed back
    # the session replays locally, with no model, no tool and no server
    assert list(await replay_session(session, chat)) == [recorded(first), recorded(second)]
    store.close()


async def test_a_subagents_memory_carries_across_turns_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    session = Session("memo")
    async with TemporalRuntime(client=client, options=options) as trt:
        first = await trt.run(MEMO, context={"question": "the total"}, session=session)
        second = await trt.run(MEMO, context={"question": "it doubled"}, session=session)
    assert first.value == 42 and first.memory == ProgramMemory(values={"total": "42"})
    assert second.ok, second.error
    assert second.value == 84
    assert (await session.turns())[1].memory == second.memory
    assert list(await replay_session(session, MEMO)) == [recorded(first), recorded(second)]


async def test_history_and_memory_by_hand_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    chat = ReAct(system_prompt=CHAT)
    async with TemporalRuntime(client=client, options=options) as trt:
        first = await trt.run(chat, "one")
        second = await trt.run(chat, "two", history=first.messages)
        kept = await trt.run(MEMO, context={"question": "a"}, memory=ProgramMemory())
        doubled = await trt.run(
            MEMO, context={"question": "b"}, history=kept.messages, memory=kept.memory
        )
    assert second.value == "#2: one / two"
    assert [m.content for m in second.messages] == ["one", "#1: one", "two", "#2: one / two"]
    assert doubled.value == 84


async def test_a_session_compacts_on_temporal_and_stores_the_summary(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    compaction = Compaction(max_messages=3, keep_last=2, summarize=True)
    session = Session("compacted", compaction=compaction)
    chat = ReAct(system_prompt=CHAT)
    async with TemporalRuntime(client=client, options=options) as trt:
        steps = [
            await trt.run(chat, question, session=session, record=True)
            for question in ("Hello", "Second", "Third")
        ]
    third = steps[2]
    assert third.ok, third.error
    # the workflow summarized the first turn (a directive the workers performed) and sent
    # the summary, the last two messages and the question: "Hello" was not sent
    assert third.summary is not None and third.summary.covers == 2
    assert third.summary.text == "SUMMARY: they said hello"
    assert "Hello" not in third.value and third.value.endswith(" / Second / Third")
    compact = [s for s in third.signals if s.call_id == "compacted/turn-2/compact"]
    assert compact, "the summarizing call is journaled"
    assert steps[0].summary is None and steps[1].summary is None
    turns = await session.turns()
    assert [t.summary for t in turns] == [None, None, third.summary]
    assert await session.summary() == third.summary
    assert await session.messages() == third.messages  # what is stored stays whole
    assert len(third.messages) == 6
    # the session replays locally, the summarizing call's answer read from its journal
    assert list(await replay_session(session, chat)) == [recorded(s) for s in steps]


async def test_a_turn_another_client_runs_is_a_session_conflict(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[wait_for_ever]) as trt:
        busy = await trt.start(ReAct(), "x", run_id="busy/turn-0")  # turn 0, running
        try:
            with pytest.raises(SessionConflictError) as info:
                await trt.run(ReAct(system_prompt=CHAT), "hi", session=Session("busy"))
        finally:
            await busy.cancel()
        assert info.value.turn == 0 and "busy/turn-0" in str(info.value)
        assert not (await busy.wait()).ok
        # once it ended, the turn can be run: nothing was stored for it
        again = await trt.run(ReAct(system_prompt=CHAT), "hi", session=Session("busy"))
    assert again.ok and again.run_id == "busy/turn-0"


async def test_what_a_session_run_on_temporal_refuses(
    client: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        with pytest.raises(UsageError, match="leave run_id out"):
            await trt.run(ReAct(), "x", session=Session("s"), run_id="mine")
        with pytest.raises(UsageError, match="do not take a session"):
            await trt.start(ReAct(), "x", session=Session("s"))
        with pytest.raises(UsageError, match="keeps no program memory"):
            await trt.run(ReAct(), "x", memory=ProgramMemory())
