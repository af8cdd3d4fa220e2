"""``ptcflow serve --example`` serves its mission over AG-UI at ``POST /agui``: the real
``@ag-ui/client`` runs the three-level mission; an AG-UI thread is a conversation kept in
SQLite (asyncio: uvicorn)."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "service"))

from service_app import COOKIE, QUESTION, create_app
from service_mission import NOTHING_EARLIER

from .test_agui_client import run_node, serving

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_the_example_mission_over_agui(tmp_path: Path) -> None:
    app = create_app(latency=0.01, data_dir=tmp_path)
    out = await run_node(app, "Which regions grew?", path="/agui", lifespan="on")
    assert out["ok"], out
    events = out["events"]
    types = Counter(e["type"] for e in events)
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    names = Counter(e["name"] for e in events if e["type"] == "SUBAGENT_STARTED")
    assert names["analyst"] == 3 and names["counter"] >= 3 and names["writer"] >= 3
    assert types["SUBAGENT_FINISHED"] + types["SUBAGENT_ERROR"] == types["SUBAGENT_STARTED"]
    assert types["TOOL_CALL_RESULT"] == types["TOOL_CALL_START"] > 0
    # the client's state is the whole mission tree, every node ended
    nodes = out["state"]["mission"].values()
    assert {n["k"] for n in nodes} == {"run", "turn", "llm", "program", "tool"}
    assert not [n for n in nodes if n["st"] == "running"]


async def test_a_malformed_agui_request_to_the_example_is_422(tmp_path: Path) -> None:
    async with (
        serving(create_app(latency=0.01, data_dir=tmp_path), lifespan="on") as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        response = await client.post(url + "/agui", content=b'{"threadId": 1}')
        wrong = await client.get(url + "/agui")
        unnamed = await client.post(url + "/agui", json=_input("", QUESTION))
    assert response.status_code == 422
    assert "RunAgentInput" in response.json()["error"]
    assert unnamed.status_code == 422 and "threadId" in unnamed.json()["error"]
    assert wrong.status_code == 405


def _input(thread: str, question: str = "") -> dict[str, Any]:
    messages = [{"id": "q", "role": "user", "content": question}] if question else []
    return {
        "threadId": thread,
        "runId": "r",
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


async def _post(client: httpx.AsyncClient, url: str, thread: str, question: str = "") -> list[dict[str, Any]]:  # fmt: skip
    """POST an AG-UI input to the example's /agui; the events of its SSE answer."""
    response = await client.post(url + "/agui", json=_input(thread, question))
    assert response.status_code == 200, response.text
    return [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]


def _answer(events: list[dict[str, Any]]) -> str:
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    answer: str = events[-1]["result"]["answer"]
    return answer


async def test_an_agui_thread_is_a_conversation_kept_in_sqlite(tmp_path: Path) -> None:
    async with (
        serving(create_app(latency=0.01, data_dir=tmp_path), lifespan="on") as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        first = await _post(client, url, "thread_a", QUESTION)
        assert _answer(first).startswith("amer grew most (31%)")
        # the follow-up names no region: the scripted planner answers it from the earlier
        # turns its task shows, and says so when it was shown none
        follow = _answer(await _post(client, url, "thread_a", "Which of them grew most?"))
        assert follow.startswith(f"amer grew most. Earlier you asked {QUESTION!r}")
        alone = _answer(await _post(client, url, "thread_b", "Which of them grew most?"))
        assert alone == NOTHING_EARLIER
        # the snapshot waits for a question in flight to be stored (the lock of its session)
        assert len((await _post(client, url, "thread_a"))[1]["messages"]) == 4
    # another process on the same data directory: the conversation is in the file
    async with (
        serving(create_app(latency=0.01, data_dir=tmp_path), lifespan="on") as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        events = await _post(client, url, "thread_a")  # no question: the conversation so far
        unknown = await _post(client, url, "thread_new")
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    messages = events[1]["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", QUESTION),
        ("assistant", _answer(first)),
        ("user", "Which of them grew most?"),
        ("assistant", follow),
    ]
    assert len({m["id"] for m in messages}) == 4
    assert unknown[1] == {"type": "MESSAGES_SNAPSHOT", "messages": []}
    assert (tmp_path / "conversations.db").is_file()


async def test_a_conversation_that_cannot_be_read_is_a_run_error(tmp_path: Path) -> None:
    async with (
        serving(create_app(latency=0.01, data_dir=tmp_path), lifespan="on") as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        await _post(client, url, "thread_a", "Which of them grew most?")
        assert len((await _post(client, url, "thread_a"))[1]["messages"]) == 2  # stored
        with sqlite3.connect(tmp_path / "conversations.db") as db:
            db.execute("UPDATE ptcflow_session_turns SET body = x'00ff' WHERE turn = 0")
        loaded = await _post(client, url, "thread_a")
        asked = await _post(client, url, "thread_a", "And then?")
    for events in (loaded, asked):  # said before anything runs; nothing is overwritten
        assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
        assert events[1]["code"] == "CorruptTurnError" and "thread_a" in events[1]["message"]


async def test_the_page_keeps_its_conversation_in_a_cookie(tmp_path: Path) -> None:
    async with (
        serving(create_app(latency=0.01, data_dir=tmp_path), lifespan="on") as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        first = await client.get(url + "/")
        thread = first.cookies[COOKIE]
        again = await client.get(url + "/")  # the client sends the cookie back
        new = await client.get(url + "/?new=1")
        after = await client.get(url + "/")
        sse = await client.get(url + "/?protocol=sse")
    assert thread.startswith("thread_") and len(thread) > 20
    assert f'"thread":"{thread}"' in first.text and f'"thread":"{thread}"' in again.text
    # a new conversation: a new cookie, and back to "/" (a reload keeps it)
    assert new.status_code == 303 and new.headers["location"] == "/"
    fresh = new.cookies[COOKIE]
    assert fresh != thread and f'"thread":"{fresh}"' in after.text
    assert '"agui"' not in sse.text and '"thread"' not in sse.text


async def test_two_questions_at_once_in_one_conversation_take_turns(tmp_path: Path) -> None:
    answers: dict[str, str] = {}
    async with (
        serving(create_app(latency=0.01, data_dir=tmp_path), lifespan="on") as url,
        httpx.AsyncClient(timeout=30) as client,
    ):

        async def ask(question: str) -> None:
            answers[question] = _answer(await _post(client, url, "thread_a", question))

        async with anyio.create_task_group() as tg:  # two tabs of one browser
            tg.start_soon(ask, QUESTION)
            tg.start_soon(ask, "Which of them grew most?")
        events = await _post(client, url, "thread_a")
    # each question with its own answer, one after the other: never interleaved
    pairs = [(m["role"], m["content"]) for m in events[1]["messages"]]
    assert len(pairs) == 4 and [r for r, _ in pairs] == ["user", "assistant"] * 2
    assert dict([pairs[0][1:] + pairs[1][1:], pairs[2][1:] + pairs[3][1:]]) == answers
    # the later one saw the earlier one's turn
    later = pairs[2][1]
    if later == QUESTION:
        assert answers[QUESTION].startswith("amer grew most (31%)")
    else:
        assert answers[later].startswith(f"amer grew most. Earlier you asked {QUESTION!r}")


async def _resume(client: httpx.AsyncClient, url: str, thread: str, *entries: Any) -> httpx.Response:  # fmt: skip
    return await client.post(url + "/agui", json={**_input(thread), "resume": list(entries)})


def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]


async def test_a_refund_pauses_the_example_and_a_decision_resumes_it(tmp_path: Path) -> None:
    app = create_app(latency=0.01, data_dir=tmp_path)
    async with (
        serving(app, lifespan="on") as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        refunds = app.state.service.refunds
        # under the threshold: no approval, the refund is made
        small = await _post(client, url, "thread_small", "Refund order C3 (40)")
        assert small[-1]["result"]["answer"] == "Refunded 40.0 on order C3."
        assert refunds == [{"order": "C3", "amount": 40.0}]
        events = await _post(client, url, "thread_r", "Refund order A17 (250 EUR)")
        finished = events[-1]
        assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
        (interrupt,) = finished["outcome"]["interrupts"]
        assert interrupt["metadata"]["ptcflow"]["arguments"] == {"order": "A17", "amount": 250.0}
        # the snapshot shows the question and the interrupt; no turn is stored yet
        snapshot = await _post(client, url, "thread_r")
        (messages,) = [e["messages"] for e in snapshot if e["type"] == "MESSAGES_SNAPSHOT"]
        assert [m["content"] for m in messages] == ["Refund order A17 (250 EUR)"]
        assert snapshot[-1]["outcome"]["interrupts"][0]["id"] == interrupt["id"]
        # hostile answers: refused, and it still waits
        bad = [
            {"interruptId": "run_x/1", "status": "resolved", "payload": {"approved": True}},
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": 1}},
            {"interruptId": interrupt["id"], "status": "resolved", "payload": "approve"},
        ]
        for entry in bad:
            refused = await _resume(client, url, "thread_r", entry)
            assert refused.status_code == 422, refused.text
            assert interrupt["id"] in refused.json()["error"]  # it lists what waits
        other = await _resume(client, url, "thread_other", {"interruptId": interrupt["id"], "status": "cancelled"})  # fmt: skip
        assert other.status_code == 409
        assert len(refunds) == 1
        ok = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        resumed = _sse(await _resume(client, url, "thread_r", ok))
        assert resumed[0]["type"] == "RUN_STARTED"
        assert resumed[-1]["result"]["answer"] == "Refunded 250.0 on order A17."
        assert refunds[-1] == {"order": "A17", "amount": 250.0} and len(refunds) == 2
        again = await _resume(client, url, "thread_r", ok)
        assert again.status_code == 409 and len(refunds) == 2  # resumed once
        # the resumed mission is the question's turn: a follow-up sees it
        snapshot = await _post(client, url, "thread_r")
        (messages,) = [e["messages"] for e in snapshot if e["type"] == "MESSAGES_SNAPSHOT"]
        assert [m["content"] for m in messages] == [
            "Refund order A17 (250 EUR)",
            "Refunded 250.0 on order A17.",
        ]
        assert "outcome" not in snapshot[-1]
