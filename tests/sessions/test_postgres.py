"""PostgreSQL: replicas sharing sessions, and a server that goes away mid-run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from ptcflow import Session
from ptcflow.runtime import Runtime
from ptcflow.sessions import PostgresStore, SessionConflictError, StoreUnavailableError
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .pg import PgServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def replicas(pg_dsn: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    a, b = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    yield a, b
    a.close()
    b.close()


async def test_two_replicas_share_a_session_and_a_lost_race_fails_clearly(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    one, two = replicas
    gate = anyio.Event()
    thinking = anyio.Event()

    async def slow(request: Any) -> str:
        thinking.set()
        await gate.wait()
        return "slow answer"

    class Gated:  # the first replica's model answers once the second replica has appended
        def resolve(self, model: str | None, alias: str | None) -> tuple[Any, str]:
            return self, "m"

        async def generate(self, request: Any) -> Any:
            return await ScriptedLLM([await slow(request)]).generate(request)

    outcome: dict[str, Any] = {}

    async def first() -> None:
        async with Runtime(llm=Gated()) as rt:
            try:
                await rt.run(ReAct(), "from replica one", session=Session("shared", one))
            except SessionConflictError as exc:
                outcome["error"] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await thinking.wait()
        async with Runtime(llm=ScriptedLLM(["fast answer"])) as rt:
            await rt.run(ReAct(), "from replica two", session=Session("shared", two))
        gate.set()
    error = outcome["error"]
    assert (error.session_id, error.turn) == ("shared", 0)
    assert error.step is not None and error.step.value == "slow answer"
    stored = await Session("shared", one).messages()
    assert [m.content for m in stored] == ["from replica two", "fast answer"]


async def test_a_server_stopped_mid_run_is_a_typed_error_and_the_run_can_be_retried(
    pg_server: PgServer, pg_dsn: str
) -> None:
    store = PostgresStore(pg_dsn, connect_timeout=2)
    session = Session("outage", store)
    async with Runtime(llm=ScriptedLLM(["first"])) as rt:
        await rt.run(ReAct(), "before", session=session)

    class StopsTheServer:
        def resolve(self, model: str | None, alias: str | None) -> tuple[Any, str]:
            return self, "m"

        async def generate(self, request: Any) -> Any:
            await anyio.to_thread.run_sync(pg_server.stop)
            return await ScriptedLLM(["lost?"]).generate(request)

    async with Runtime(llm=StopsTheServer()) as rt:
        with pytest.raises(StoreUnavailableError, match="PostgreSQL is unavailable") as info:
            await rt.run(ReAct(), "during", session=session)
    assert info.value.retryable and info.value.session_id == "outage"
    assert "postgresql://" not in str(info.value)  # the DSN stays out of errors
    with pytest.raises(StoreUnavailableError):
        await session.turns()
    await anyio.to_thread.run_sync(pg_server.start)
    async with Runtime(llm=ScriptedLLM(["second"])) as rt:
        retried = await rt.run(ReAct(), "during", session=session)
    assert retried.ok
    assert [m.content for m in await session.messages()] == ["before", "first", "during", "second"]
    store.close()


async def test_a_replica_reuses_the_summary_another_stored(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    from ptcflow.sessions import Compaction

    one, two = replicas

    def reply(request: Any) -> str:
        return "S" if request.messages[0].content.startswith("You summarize") else "ok"

    llm = ScriptedLLM(reply)
    compaction = Compaction(max_messages=4, keep_last=2, summarize=True)
    async with Runtime(llm=llm) as rt:
        for i, store in enumerate((one, two, one, two)):
            await rt.run(ReAct(), f"q{i}", session=Session("c", store=store, compaction=compaction))
        assert llm.calls == 5  # the fourth run summarized (its history: 6 messages)
        made = await Session("c", store=one).summary()
        assert made is not None and made.covers == 4
        # the next run, on the other replica, reuses it: no summarizing call
        await rt.run(ReAct(), "q4", session=Session("c", store=one, compaction=compaction))
    assert llm.calls == 6
    assert len(await Session("c", store=two).messages()) == 10
