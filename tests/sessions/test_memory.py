"""A SubAgent's program memory across a conversation: ``def``s persist from run to run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from ptcflow import Session, SubAgent, UsageError
from ptcflow.runtime import Runtime
from ptcflow.sessions import CorruptTurnError, SQLiteStore
from ptcflow.signals import ProgramMemory
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio

AGENT = SubAgent(prompt="{{question}}", signature="(question :string) -> :int")


async def test_a_def_of_turn_one_is_read_by_turn_two_in_a_new_runtime(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = SQLiteStore(path)
    first_llm = ScriptedLLM(["(def total 42)\n(defn twice [x] (* 2 x))\n(return total)"])
    async with Runtime(llm=first_llm) as rt:
        first = await rt.run(
            AGENT, context={"question": "Sum it."}, session=Session("c", store=store)
        )
    store.close()
    assert first.ok and first.value == 42
    assert first.memory is not None and first.memory.values == {"total": "42"}
    assert "twice" in first.memory.functions

    again = SQLiteStore(path)  # another process would open the file the same way
    second_llm = ScriptedLLM(["(return (twice total))"])
    async with Runtime(llm=second_llm) as rt:
        second = await rt.run(
            AGENT, context={"question": "Double it."}, session=Session("c", store=again)
        )
    assert second.ok, second.error
    assert second.value == 84
    # the model is told what is kept, and reads it by name
    task = second_llm.requests[0].messages[1].content
    assert "total" in task and "functions: twice" in task
    turns = await Session("c", store=again).turns()
    assert [t.memory for t in turns] == [first.memory, second.memory]
    assert await Session("c", store=again).memory() == second.memory
    again.close()


async def test_memory_is_stored_as_data_in_the_turns_row(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = SQLiteStore(path)
    async with Runtime(llm=ScriptedLLM(['(def seen #{:a :b})\n(def note "hi")\n(return 1)'])) as rt:
        await rt.run(AGENT, context={"question": "q"}, session=Session("c", store=store))
    store.close()
    with sqlite3.connect(path) as conn:
        (body,) = conn.execute("SELECT body FROM ptcflow_session_turns").fetchone()
    stored = msgspec.json.decode(body)
    assert stored["memory"]["values"] == {"seen": "#{:a :b}", "note": '"hi"'}


async def test_a_react_turn_between_keeps_the_subagents_memory() -> None:
    session = Session("mixed")
    llm = ScriptedLLM(["(def total 42)\n(return total)", "Fine.", "(return (+ total 1))"])
    async with Runtime(llm=llm) as rt:
        await rt.run(AGENT, context={"question": "a"}, session=session)
        chat = await rt.run(ReAct(), "How are you?", session=session)
        last = await rt.run(AGENT, context={"question": "b"}, session=session)
    assert chat.memory is None
    assert last.value == 43
    assert [t.memory is None for t in await session.turns()] == [False, True, False]


async def test_a_failed_turn_keeps_the_memory_of_the_last_good_one() -> None:
    session = Session("f")
    agent = SubAgent(prompt="{{question}}", signature="(question :string) -> :int", max_turns=1)
    llm = ScriptedLLM(["(def total 42)\n(return total)", "(def total 0)\n(fail)", "(return total)"])
    async with Runtime(llm=llm) as rt:
        await rt.run(agent, context={"question": "a"}, session=session)
        bad = await rt.run(agent, context={"question": "b"}, session=session)
        good = await rt.run(agent, context={"question": "c"}, session=session)
    assert not bad.ok
    assert good.value == 42
    assert len(await session.turns()) == 2


async def test_memory_passed_by_hand_continues_like_history() -> None:
    llm = ScriptedLLM(["(def total 5)\n(return total)", "(return (* total 10))"])
    async with Runtime(llm=llm) as rt:
        first = await rt.run(AGENT, context={"question": "a"}, memory=ProgramMemory())
        assert first.memory == ProgramMemory(values={"total": "5"})
        second = await rt.run(
            AGENT, context={"question": "b"}, history=first.messages, memory=first.memory
        )
    assert second.value == 50


async def test_a_run_without_memory_keeps_none_and_skips_writing_it() -> None:
    async with Runtime(llm=ScriptedLLM(["(def total 5)\n(return total)"])) as rt:
        step = await rt.run(AGENT, context={"question": "a"})
    assert step.memory is None


async def test_memory_for_a_strategy_without_programs_or_with_a_session_is_refused() -> None:
    async with Runtime(llm=ScriptedLLM(["x"])) as rt:
        with pytest.raises(UsageError, match="keeps no program memory"):
            await rt.run(ReAct(), "hi", memory=ProgramMemory())
        with pytest.raises(UsageError, match="memory= or session="):
            await rt.run(AGENT, context={}, memory=ProgramMemory(), session=Session("s"))
        with pytest.raises(UsageError, match="must be a ProgramMemory"):
            await rt.run(AGENT, context={}, memory={"total": "1"})  # type: ignore[arg-type]


async def test_a_corrupt_stored_memory_is_a_corrupt_turn(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = SQLiteStore(path)
    async with Runtime(llm=ScriptedLLM(["(def total 42)\n(return total)"])) as rt:
        await rt.run(AGENT, context={"question": "a"}, session=Session("c", store=store))
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE ptcflow_session_turns SET body = ?",
            (b'{"messages": [], "memory": {"values": {"total": 42}}}',),
        )
    broken = SQLiteStore(path)
    with pytest.raises(CorruptTurnError) as info:
        await Session("c", store=broken).turns()
    assert info.value.turn == 0
    broken.close()


async def test_rows_stored_before_memory_and_journals_still_load(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the table as first released
        conn.execute(
            "CREATE TABLE ptcflow_session_turns (session_id TEXT NOT NULL, turn INTEGER NOT "
            "NULL, run_id TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (session_id, turn)) "
            "WITHOUT ROWID"
        )
        conn.execute(
            "INSERT INTO ptcflow_session_turns VALUES ('c', 0, 'r0', ?)",
            (b'[{"role": "user", "content": "a"}, {"role": "assistant", "content": "1"}]',),
        )
    store = SQLiteStore(path)
    async with Runtime(llm=ScriptedLLM(["(def total 2)\n(return total)"])) as rt:
        step = await rt.run(AGENT, context={"question": "b"}, session=Session("c", store=store))
    assert step.ok
    turns = await Session("c", store=store).turns()
    assert [len(t.messages) for t in turns] == [2, 2]
    assert turns[0].memory is None and turns[1].memory == ProgramMemory(values={"total": "2"})
    store.close()


async def test_agent_run_takes_memory_and_sessions_carry_it() -> None:
    session = Session("agent-run")
    llm = ScriptedLLM(["(def total 3)\n(return total)", "(return (inc total))", "(return total)"])
    first = await AGENT.run(llm=llm, context={"question": "a"}, session=session)
    second = await AGENT.run(llm=llm, context={"question": "b"}, session=session)
    by_hand = await AGENT.run(llm=llm, context={"question": "c"}, memory=first.memory)
    assert (first.value, second.value, by_hand.value) == (3, 4, 3)
