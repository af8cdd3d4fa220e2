"""The example agent service: a mission per request, streamed as server-sent events, on one
shared Runtime; a client that goes away cancels its mission.

uvicorn serves on asyncio only, so these tests run on asyncio (the service itself is anyio
code; the browser test drives it from a real page).
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
import uvicorn
from service_app import create_app

from .support import RUNS

pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[str, Any]]:
    app = create_app(latency=0.05, data_dir=tmp_path)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # connections queue until uvicorn accepts them: no need to wait for it
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app.state.service
        server.should_exit = True
    sock.close()


async def _events(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    event = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            yield event, json.loads(line[6:])


@pytest.mark.anyio
async def test_a_request_streams_its_mission_live(service: tuple[str, Any]) -> None:
    url, state = service
    async with httpx.AsyncClient(timeout=30) as client:
        page = await client.get(url + "/")
        assert page.status_code == 200 and 'id="ptc-data"' in page.text
        async with client.stream("GET", url + "/missions/stream?question=hi") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            run_id = response.headers["x-mission"]
            seen: list[tuple[str, dict[str, Any]]] = [e async for e in _events(response)]
        runs = (await client.get(url + "/runs")).json()
    kinds = [event for event, _ in seen]
    assert kinds[-1] == "end" and set(kinds[:-1]) == {"signal"}
    assert seen[-1][1] == {"status": "ok", "run_id": run_id}
    first = seen[0][1]
    assert first["signal"]["type"] == "ai.request.started" and first["signal"]["run_id"] == run_id
    assert first["nodes"][0]["k"] == "run" and first["nodes"][0]["st"] == "running"
    agents: dict[str, str] = {}
    for _, data in seen[:-1]:
        for node in data["nodes"]:
            if node["k"] == "run" and node["st"] == "running" and node.get("s"):
                agents.setdefault(node["id"], node["n"])
    assert sorted(agents.values()) == sorted(a for a, n in RUNS.items() for _ in range(n))
    assert runs[run_id] == "ok" and state.ended[run_id].is_set()


@pytest.mark.anyio
async def test_a_client_that_goes_away_cancels_its_mission(service: tuple[str, Any]) -> None:
    url, state = service
    async with httpx.AsyncClient(timeout=30) as client:
        async with client.stream("GET", url + "/missions/stream") as response:
            run_id = response.headers["x-mission"]
            async for _, data in _events(response):
                # leave once the analysts are at work: the mission is far from done
                if any(n["k"] == "run" and n["n"] == "counter" for n in data["nodes"]):
                    break
        with anyio.fail_after(10):
            await state.ended[run_id].wait()
        assert state.runs[run_id] == "cancelled"
        assert (await client.get(url + "/runs")).json()[run_id] == "cancelled"


@pytest.mark.anyio
async def test_missions_run_concurrently_on_the_shared_runtime(service: tuple[str, Any]) -> None:
    url, state = service

    async def one(results: list[str]) -> None:
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream("GET", url + "/missions/stream") as response,
        ):
            async for event, data in _events(response):
                if event == "end":
                    results.append(data["status"])

    results: list[str] = []
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one, results)
    assert results == ["ok", "ok", "ok"] and len(state.runs) == 3
