"""The AI SDK UI message stream: chunks per signal (asyncio and trio, in memory), and a live
run on uvicorn read by the real ``ai`` package's parser and message reader in node
(asyncio only: uvicorn serves on asyncio)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import ptcflow
from ptcflow import SubAgent
from ptcflow.runtime import Runtime
from ptcflow.serve import ui_message_stream_endpoint
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .npm import node_script, npm_folder
from .support import DOUBLER_PROGRAM, PLANNER_PROGRAM, FailingRun, call, streaming_planner
from .test_agui_client import serving

AI = "ai@7.0.173"

pytestmark = pytest.mark.anyio


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def chat(text: str) -> bytes:
    return json.dumps(
        {"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]}
    ).encode()


async def test_a_streamed_run_is_text_and_tool_parts() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "The sum is 5"])
    async with Runtime(llm=llm, tools=[add], bus=SignalBus()) as rt:
        response = await call(ui_message_stream_endpoint(rt, ReAct(stream=True)), chat("2+3?"))
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.body.endswith(b"data: [DONE]\n\n")
    chunks = [
        json.loads(line[6:])
        for line in response.body.decode().split("\n")
        if line.startswith("data: {")
    ]
    types = [c["type"] for c in chunks]
    assert types[0] == "start" and types[-1] == "finish"
    assert types[1:4] == ["tool-input-start", "tool-input-available", "tool-output-available"]
    assert chunks[2]["input"] == {"x": 2, "y": 3} and chunks[3]["output"] == 5
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "The sum is 5"


async def test_a_streaming_subagent_is_its_program_text_tool_calls_and_prints() -> None:
    planner, llm = streaming_planner(add)
    async with Runtime(llm=llm, bus=SignalBus()) as rt:
        app = ui_message_stream_endpoint(rt, planner, input=lambda _: {})
        response = await call(app, chat("go"))
    chunks = [
        json.loads(line[6:])
        for line in response.body.decode().split("\n")
        if line.startswith("data: {")
    ]
    types = [c["type"] for c in chunks]
    assert types[0] == "start" and types[-1] == "finish"
    texts: dict[str, str] = {}
    for c in chunks:
        if c["type"] == "text-delta":
            texts[c["id"]] = texts.get(c["id"], "") + c["delta"]
    assert sorted(texts.values()) == sorted([PLANNER_PROGRAM, DOUBLER_PROGRAM])
    # the planner's program was whole before its first tool call started
    first_tool = types.index("tool-input-start")
    assert "text-end" in types[:first_tool]
    names = [c["toolName"] for c in chunks if c["type"] == "tool-input-start"]
    assert names == ["add", "doubler"]
    prints = [c for c in chunks if c["type"] == "data-print"]
    assert [p["data"]["text"] for p in prints] == ["asking the doubler\n", "doubling 21\n"]
    assert prints[1]["data"]["runId"] != prints[0]["data"]["runId"]  # the doubler's run
    assert prints[1]["data"]["runId"].startswith(prints[0]["data"]["runId"] + "/")


async def test_a_malformed_request_is_422() -> None:
    async with Runtime(llm=ScriptedLLM(["x"]), bus=SignalBus()) as rt:
        app = ui_message_stream_endpoint(rt, ReAct())
        bad = await call(app, b"{nope")
        wrong = await call(app, b'{"messages": 3}')
    assert bad.status == 422 and "not JSON" in bad.json()["error"]
    assert wrong.status == 422 and wrong.json()["error"].startswith("messages:")


async def _read_with_ai(llm: ScriptedLLM, agent: Any, tools: list[Any], text: str, **options: Any) -> dict[str, Any]:  # fmt: skip
    folder = npm_folder(AI)
    script = node_script(folder, "aisdk_reader.mjs")
    async with (
        Runtime(llm=llm, tools=tools, bus=SignalBus()) as rt,
        serving(ui_message_stream_endpoint(rt, agent, **options)) as url,
    ):
        with anyio.fail_after(60):
            done = await anyio.run_process(["node", str(script), url, text], check=False)
    assert done.returncode == 0, done.stderr.decode()
    out: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_real_ai_package_reads_the_stream() -> None:
    helper = SubAgent(
        prompt="Add {{x}} and {{y}}", signature="(x :int, y :int) -> :int", name="adder",
        output="json", max_turns=1,
    )  # fmt: skip
    llm = ScriptedLLM([ScriptedLLM.tool_call("adder", x=2, y=3), "5", "The sum is 5"])
    out = await _read_with_ai(llm, ReAct(stream=True), [helper.as_tool()], "2+3?")
    assert out["status"] == 200 and out["header"] == "v1"
    assert out["invalid"] == [] and out["errors"] == []  # every chunk fits uiMessageChunkSchema
    parts = out["message"]["parts"]
    tool = next(p for p in parts if p["type"] == "dynamic-tool")
    assert tool["toolName"] == "adder" and tool["state"] == "output-available"
    assert tool["input"] == {"x": 2, "y": 3} and tool["output"] == 5
    agent = next(p for p in parts if p["type"] == "data-agent")
    assert agent["data"]["name"] == "adder" and agent["data"]["status"] == "ok"
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[-1] == "The sum is 5"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_real_ai_package_reads_a_failed_run() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3)])  # then the script runs out
    out = await _read_with_ai(llm, ReAct(), [add], "2+3?")
    assert out["invalid"] == []
    assert (
        out["chunks"][-2]["type"] == "error" and "script ran out" in out["chunks"][-2]["errorText"]
    )
    assert out["chunks"][-1] == {"type": "finish", "finishReason": "error"}


async def test_a_started_run_that_raises_before_its_run_starts_is_an_error_part() -> None:
    async with Runtime(llm=ScriptedLLM(["x"]), bus=SignalBus()) as rt:
        app = ui_message_stream_endpoint(rt, start=lambda rt, request, run_id: FailingRun())
        with anyio.fail_after(10):  # its last signal never comes: the stream ends anyway
            response = await call(app, chat("hi"))
    assert response.body.endswith(b"data: [DONE]\n\n")
    (error,) = [json.loads(line[6:]) for line in response.body.decode().split("\n") if line.startswith("data: {")]  # fmt: skip
    assert error == {
        "type": "error",
        "errorText": "LookupError: conversation thread_1 could not be read",
    }


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_real_ai_package_reads_a_streaming_subagent() -> None:
    planner, llm = streaming_planner(add)
    out = await _read_with_ai(llm, planner, [], "go", input=lambda _: {})
    assert out["invalid"] == [] and out["errors"] == []  # every chunk fits uiMessageChunkSchema
    parts = out["message"]["parts"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert sorted(texts) == sorted([PLANNER_PROGRAM, DOUBLER_PROGRAM])
    tools = [p for p in parts if p["type"] == "dynamic-tool"]
    assert [(t["toolName"], t["output"]) for t in tools] == [("add", 21), ("doubler", 42)]
    prints = [p["data"]["text"] for p in parts if p["type"] == "data-print"]
    assert prints == ["asking the doubler\n", "doubling 21\n"]
    assert out["chunks"][-1] == {"type": "finish", "finishReason": "stop"}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_real_ai_package_reads_a_pause_as_an_approval_request() -> None:
    @ptcflow.tool(requires_approval=lambda a: a["amount"] > 100)
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        return f"refunded {amount} on {order}"

    @ptcflow.tool(deferred=True)
    def ship(order: str) -> None:
        """Ship an order (done elsewhere)."""

    calls = [
        ScriptedLLM.tool_call("refund", order="B", amount=500),
        ScriptedLLM.tool_call("ship", order="B"),
    ]
    out = await _read_with_ai(ScriptedLLM([calls]), ReAct(), [refund, ship], "refund B")
    assert out["invalid"] == [] and out["errors"] == []
    types = [c["type"] for c in out["chunks"]]
    assert types.count("tool-approval-request") == 1  # the deferred call asks for no approval
    assert out["chunks"][-1] == {"type": "finish", "finishReason": "tool-calls"}
    parts = out["message"]["parts"]
    tools = {p["toolName"]: p for p in parts if p["type"] == "dynamic-tool"}
    assert tools["refund"]["state"] == "approval-requested"
    assert tools["refund"]["approval"]["id"] == tools["refund"]["toolCallId"]
    assert tools["ship"]["state"] == "input-available"
    (paused,) = [p for p in parts if p["type"] == "data-paused"]
    pending = {p["tool"]: p for p in paused["data"]["pending"]}
    assert pending["refund"]["arguments"] == {"order": "B", "amount": 500}
    assert pending["ship"]["kind"] == "deferred"
