"""``ptcflow serve --example`` serves its mission over AG-UI at ``POST /agui``: the real
``@ag-ui/client`` runs the three-level mission (asyncio: uvicorn)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import httpx2 as httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "service"))

from service_app import create_app

from .test_agui_client import run_node, serving

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_the_example_mission_over_agui() -> None:
    app = create_app(latency=0.01)
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


async def test_a_malformed_agui_request_to_the_example_is_422() -> None:
    async with (
        serving(create_app(latency=0.01), lifespan="on") as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        response = await client.post(url + "/agui", content=b'{"threadId": 1}')
        wrong = await client.get(url + "/agui")
    assert response.status_code == 422
    assert "RunAgentInput" in response.json()["error"]
    assert wrong.status_code == 405
