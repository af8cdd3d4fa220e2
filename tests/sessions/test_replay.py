"""Replaying a whole session from its turns' journals: no model, no tool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from ptcflow import Session, SubAgent
from ptcflow.runtime import Runtime, Step, replay_session
from ptcflow.sessions import (
    MemoryStore,
    PostgresStore,
    SessionReplayError,
    SessionStore,
    SQLiteStore,
)
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio

CALLS: list[tuple[int, int]] = []


def add(x: int, y: int) -> int:
    "Add two integers."
    CALLS.append((x, y))
    return x + y


def recorded(step: Step) -> Step:
    """A live Step as a replay rebuilds it (no time passes, no signals, not priced)."""
    return msgspec.structs.replace(step, duration_ms=0.0, signals=(), cost_usd=None)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "postgres":
        postgres = PostgresStore(request.getfixturevalue("pg_dsn"))
        yield postgres
        postgres.close()
    else:
        sqlite = SQLiteStore(tmp_path / "chats.db")
        yield sqlite
        sqlite.close()


async def test_a_react_session_replays_to_the_steps_it_returned(store: SessionStore) -> None:
    session = Session("chat", store=store)
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5", "Ten.", "Bye."])
    react = ReAct(system_prompt="Be brief.")
    async with Runtime(llm=llm, tools=[add]) as rt:
        live = [
            await rt.run(react, "What is 2 + 3?", session=session),
            await rt.run(react, "Double it.", session=session),
            await rt.run(react, "Thanks.", session=session),
        ]
    calls, requests = len(CALLS), len(llm.requests)
    replayed = await replay_session(Session("chat", store=store), react)
    assert len(CALLS) == calls and len(llm.requests) == requests  # nothing called
    assert list(replayed) == [recorded(s) for s in live]
    assert replayed[0].tool_calls == 1 and replayed[0].turns == 2


async def test_a_subagent_session_replays_with_its_memory_and_tools(store: SessionStore) -> None:
    agent = SubAgent(prompt="{{question}}", signature="(question :string) -> :int", tools=[add])
    session = Session("sub", store=store)
    llm = ScriptedLLM(
        [
            '(def total (call "add" {:x 40 :y 2}))\n(return total)',
            "(println total)",  # a turn that goes on: its memory is written
            "(return (* total 2))",
        ]
    )
    async with Runtime(llm=llm) as rt:
        live = [
            await rt.run(agent, context={"question": "Sum 40 and 2."}, session=session),
            await rt.run(agent, context={"question": "Double it."}, session=session),
        ]
    assert [s.value for s in live] == [42, 84]
    replayed = await replay_session(session, agent)
    assert list(replayed) == [recorded(s) for s in live]
    assert replayed[1].trace is not None and len(replayed[1].trace.turns) == 2


async def test_a_changed_agent_is_a_divergence_naming_the_turn() -> None:
    agent = SubAgent(prompt="{{question}}", signature="(question :string) -> :int")
    session = Session("d")
    llm = ScriptedLLM(["(return 1)", "(return 2)"])
    async with Runtime(llm=llm) as rt:
        await rt.run(agent, context={"question": "a"}, session=session)
        await rt.run(agent, context={"question": "b"}, session=session)
    changed = SubAgent(prompt="Answer: {{question}}", signature="(question :string) -> :int")
    with pytest.raises(SessionReplayError) as info:
        await replay_session(session, changed)
    error = info.value
    assert error.turn == 0 and error.session_id == "d"
    assert "turn 0" in str(error) and "Answer: a" in str(error)
    assert isinstance(error.step, Step) and error.step.value == 1


async def test_a_later_turn_that_diverges_is_named() -> None:
    session = Session("later")
    async with Runtime(llm=ScriptedLLM(["one", "two"])) as rt:
        await rt.run(ReAct(), "1", session=session)
        await rt.run(ReAct(), "2", session=session)
    turns = await session.turns(journals=True)
    # the store loses what turn 1's model said: its journal no longer matches its messages
    tampered = Session("later-tampered")
    await tampered.store.write("later-tampered", turns)
    store_turns = tampered.store._data["later-tampered"]  # type: ignore[attr-defined]
    store_turns[1] = msgspec.structs.replace(store_turns[1], messages=(store_turns[1].messages[0],))
    with pytest.raises(SessionReplayError, match="turn 1") as info:
        await replay_session(tampered, ReAct())
    assert info.value.turn == 1


async def test_a_session_kept_without_journals_cannot_be_replayed() -> None:
    session = Session("nj", journal=False)
    async with Runtime(llm=ScriptedLLM(["hi"])) as rt:
        await rt.run(ReAct(), "hello", session=session)
    assert (await session.turns(journals=True))[0].journal == ()
    with pytest.raises(SessionReplayError, match="no journal") as info:
        await replay_session(session, ReAct())
    assert info.value.turn == 0


async def test_a_fork_replays_with_the_turns_it_took() -> None:
    session = Session("orig")
    async with Runtime(llm=ScriptedLLM(["a", "b", "c"])) as rt:
        first = await rt.run(ReAct(), "1", session=session)
        await rt.run(ReAct(), "2", session=session)
        fork = await session.fork("fork", at_turn=0)
        third = await rt.run(ReAct(), "3", session=fork)
    assert list(await replay_session(fork, ReAct())) == [recorded(first), recorded(third)]


async def test_journals_grow_with_the_turn_not_the_session() -> None:
    session = Session("long")
    async with Runtime(llm=ScriptedLLM([f"answer {i}" for i in range(6)])) as rt:
        for i in range(6):
            await rt.run(ReAct(), f"question {i}", session=session)
    turns = await session.turns(journals=True)
    sizes = {len(b"".join(msgspec.json.encode(s) for s in t.journal)) for t in turns}
    assert max(sizes) - min(sizes) < 64  # the history is not stored again in each turn
    # and the live record asked for is still the whole one
    async with Runtime(llm=ScriptedLLM(["x"])) as rt:
        step = await rt.run(ReAct(), "q", session=session, record=True)
    started = step.signals[0].data
    assert len(started.history) == 12
