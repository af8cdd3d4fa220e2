"""Sessions: a conversation kept in a store (memory, SQLite), continued by runs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ptcflow import Session, SubAgent, UsageError
from ptcflow.runtime import Runtime
from ptcflow.sessions import (
    CorruptTurnError,
    MemoryStore,
    PostgresStore,
    SessionConflictError,
    SessionStore,
    SQLiteStore,
    Turn,
)
from ptcflow.signals import Message
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "postgres":
        postgres = PostgresStore(request.getfixturevalue("pg_dsn"))
        yield postgres
        postgres.close()
        return
    sqlite = SQLiteStore(tmp_path / "sessions.db")
    yield sqlite
    sqlite.close()


async def test_runs_on_a_session_continue_it_and_append_one_turn_each(store: SessionStore) -> None:
    session = Session("user-1", store=store)
    llm = ScriptedLLM(["Hello Ada.", "Your name is Ada."])
    async with Runtime(llm=llm) as rt:
        first = await rt.run(ReAct(system_prompt="Be brief."), "I am Ada.", session=session)
        second = await rt.run(ReAct(system_prompt="Be brief."), "Who am I?", session=session)
    assert second.value == "Your name is Ada."
    assert [m.content for m in llm.requests[1].messages] == [
        "Be brief.",
        "I am Ada.",
        "Hello Ada.",
        "Who am I?",
    ]
    turns = await session.turns()
    assert [t.index for t in turns] == [0, 1]
    assert [t.run_id for t in turns] == [first.run_id, second.run_id]
    assert [m.content for m in turns[1].messages] == ["Who am I?", "Your name is Ada."]
    assert await session.messages() == second.messages
    # another Session object on the same store sees the same conversation
    assert await Session("user-1", store=store).messages() == second.messages
    assert await store.sessions() == ("user-1",)


async def test_a_failed_run_stores_nothing_and_can_be_retried(store: SessionStore) -> None:
    session = Session("s", store=store)
    llm = ScriptedLLM(["hi", ScriptedLLM.auth_error(), "fine"])
    async with Runtime(llm=llm) as rt:
        await rt.run(ReAct(), "hello", session=session)
        failed = await rt.run(ReAct(llm_max_retries=0), "how are you?", session=session)
        assert not failed.ok
        assert len(await session.turns()) == 1
        retried = await rt.run(ReAct(), "how are you?", session=session)
    assert retried.ok
    assert [m.content for m in await session.messages()] == ["hello", "hi", "how are you?", "fine"]


async def test_concurrent_runs_on_one_session_take_turns(store: SessionStore) -> None:
    session = Session("busy", store=store)
    # the model yields to the loop (latency), so without the session's lock the four runs
    # would all load the empty session and three appends would conflict
    llm = ScriptedLLM(lambda request: f"seen {len(request.messages)}", latency=0.01)
    async with Runtime(llm=llm) as rt:

        async def ask(n: int) -> None:
            await rt.run(ReAct(), f"q{n}", session=session)

        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(ask, n)
    turns = await session.turns()
    assert [t.index for t in turns] == [0, 1, 2, 3]
    # each run saw every earlier turn: 1, 3, 5, 7 messages were sent
    assert sorted(t.messages[1].content for t in turns) == ["seen 1", "seen 3", "seen 5", "seen 7"]
    assert [len(t.messages) for t in turns] == [2, 2, 2, 2]


async def test_an_append_that_lost_the_race_fails_clearly_and_keeps_the_winner(
    store: SessionStore,
) -> None:
    winner = Turn(index=0, run_id="r1", messages=(Message(role="user", content="a"),))
    await store.append("s", winner)
    loser = Turn(index=0, run_id="r2", messages=(Message(role="user", content="b"),))
    with pytest.raises(SessionConflictError, match="turn 0 was appended by another run") as info:
        await store.append("s", loser)
    assert info.value.session_id == "s" and info.value.turn == 0
    assert await store.load("s") == (winner,)


async def test_a_run_whose_turn_was_taken_raises_with_its_step(store: SessionStore) -> None:
    session = Session("raced", store=store)

    class Racing:  # a second writer appends turn 0 while the run is thinking
        def __init__(self) -> None:
            self.inner = ScriptedLLM(["mine"])

        def resolve(self, model: str | None, alias: str | None) -> tuple[object, str]:
            return self, "m"

        async def generate(self, request: object) -> object:
            other = Turn(index=0, run_id="other", messages=(Message(role="user", content="x"),))
            await store.append("raced", other)
            return await self.inner.generate(request)  # type: ignore[arg-type]

    async with Runtime(llm=Racing()) as rt:
        with pytest.raises(SessionConflictError) as info:
            await rt.run(ReAct(), "hello", session=session)
    step = info.value.step
    assert step is not None and getattr(step, "value", None) == "mine"
    assert [t.run_id for t in await session.turns()] == ["other"]


async def test_fork_list_read_and_delete(store: SessionStore) -> None:
    session = Session("main", store=store)
    llm = ScriptedLLM(["1", "2", "3", "2b"])
    async with Runtime(llm=llm) as rt:
        for q in ("a", "b", "c"):
            await rt.run(ReAct(), q, session=session)
        fork = await session.fork("alt", at_turn=1)
        await rt.run(ReAct(), "c'", session=fork)
    assert [m.content for m in await fork.messages()] == ["a", "1", "b", "2", "c'", "2b"]
    assert len(await session.turns()) == 3  # the original is untouched
    assert await store.sessions() == ("alt", "main")
    with pytest.raises(UsageError, match="cannot fork at turn 3"):
        await session.fork("x", at_turn=3)
    with pytest.raises(SessionConflictError):
        await session.fork("alt", at_turn=0)
    assert await session.delete() is True
    assert await session.delete() is False
    assert await session.turns() == ()
    assert await store.sessions() == ("alt",)


async def test_the_json_mode_agent_runs_on_a_session(store: SessionStore) -> None:
    agent = SubAgent(
        prompt="Rate {{text}}", signature="(text :string) -> {score :int}", output="json"
    )
    session = Session("rate", store=store)
    llm = ScriptedLLM(['{"score": 3}', '{"score": 4}'])
    async with Runtime(llm=llm) as rt:
        await agent.run(context={"text": "ok"}, session=session, runtime=rt)
        step = await agent.run(context={"text": "better"}, session=session, runtime=rt)
    assert step.value == {"score": 4}
    assert len(await session.turns()) == 2
    assert [m.role for m in llm.requests[1].messages] == ["system", "user", "assistant", "user"]


def test_run_sync_continues_a_session_across_event_loops(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    session = Session("sync", store=store)
    agent = SubAgent(prompt="Echo {{x}}", signature="(x :int) -> {x :int}", output="json")
    for n, backend in enumerate(("asyncio", "trio")):
        llm = ScriptedLLM([f'{{"x": {n}}}'])
        step = agent.run_sync(context={"x": n}, llm=llm, session=session, backend=backend)
        assert step.ok, step.error
    assert len(anyio.run(session.turns)) == 2
    store.close()


async def test_a_corrupt_or_missing_turn_is_a_typed_error_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    session = Session("c", store=store)
    async with Runtime(llm=ScriptedLLM(["1", "2", "3"])) as rt:
        for q in ("a", "b", "c"):
            await rt.run(ReAct(), q, session=session)
    store.close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE ptcflow_session_turns SET body = ? WHERE turn = 1", (b'[{"role":',))
    with pytest.raises(CorruptTurnError, match="session 'c': stored turn 1 cannot be read") as info:
        await session.turns()
    assert (info.value.session_id, info.value.turn) == ("c", 1)
    async with Runtime(llm=ScriptedLLM(["x"])) as rt:
        with pytest.raises(CorruptTurnError):
            await rt.run(ReAct(), "d", session=session)
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT count(*) FROM ptcflow_session_turns").fetchone() == (3,)
        raw.execute("DELETE FROM ptcflow_session_turns WHERE turn = 1")
    with pytest.raises(CorruptTurnError, match="turn 1 is missing") as missing:
        await session.turns()
    assert missing.value.turn == 1
    store.close()


def test_a_session_needs_an_id_and_a_store() -> None:
    with pytest.raises(UsageError, match="non-empty string"):
        Session("")
    with pytest.raises(UsageError, match="must be a SessionStore"):
        Session("x", store={})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="history= or session=, not both"):
        from ptcflow.runtime import RunOptions

        RunOptions(session=Session("x"), history=[Message(role="user", content="hi")])
