"""The AG-UI endpoint served by uvicorn on 127.0.0.1, consumed by the real ``@ag-ui/client``
(npm, pinned) in node. asyncio only: uvicorn serves on asyncio (the adapter itself is
tested on both backends in test_agui.py)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import anyio
import pytest
import uvicorn

import ptcflow
from ptcflow import SubAgent
from ptcflow.runtime import Runtime
from ptcflow.serve import agui_endpoint
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .npm import node_script, npm_folder

AGUI_CLIENT = "@ag-ui/client@1.0.0"

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(app: Any, *, lifespan: Literal["on", "off"] = "off") -> AsyncIterator[str]:
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan)
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:  # noqa: ASYNC110 (uvicorn offers a flag, no event)
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


async def run_node(
    app: Any,
    question: str,
    *,
    path: str = "",
    lifespan: Literal["on", "off"] = "off",
    decision: str = "",
) -> dict[str, Any]:
    """Serve ``app``, let the real client run ``question`` against ``path`` (and resume
    its interrupts with ``decision``: approve or deny), return what it printed."""
    folder = npm_folder(AGUI_CLIENT)
    script = node_script(folder, "agui_client.mjs")
    async with serving(app, lifespan=lifespan) as url:
        with anyio.fail_after(60):
            command = ["node", str(script), url + path, question, *([decision] if decision else [])]  # fmt: skip
            done = await anyio.run_process(command, check=False)
    assert done.returncode == 0, done.stderr.decode()
    out: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return out


async def _run(llm: ScriptedLLM, agent: Any, tools: list[Callable[..., Any]], q: str, **options: Any) -> dict[str, Any]:  # fmt: skip
    async with Runtime(llm=llm, tools=tools, bus=SignalBus()) as rt:
        return await run_node(agui_endpoint(rt, agent, **options), q)


async def test_the_real_client_reads_a_streamed_react_run() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "The sum is 5"])
    out = await _run(llm, ReAct(stream=True), [add], "What is 2 + 3?", mission=True)
    assert out["ok"], out
    types = [e["type"] for e in out["events"]]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert {"TOOL_CALL_START", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT", "STATE_DELTA"} <= set(
        types
    )
    assert out["result"] == "The sum is 5"
    # the client assembled the conversation from the events
    assistant = [m for m in out["messages"] if m["role"] == "assistant"]
    assert any(m.get("content") == "The sum is 5" for m in assistant)
    assert any(
        call["function"]["name"] == "add" and json.loads(call["function"]["arguments"]) == {"x": 2, "y": 3}
        for m in assistant
        for call in m.get("toolCalls", [])
    )  # fmt: skip
    tool = [m for m in out["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool] == ["5"]
    # and applied the state snapshot and every JSON patch
    kinds = sorted(node["k"] for node in out["state"]["mission"].values())
    assert kinds == ["llm", "llm", "run", "tool", "turn", "turn"]


async def test_the_real_client_reads_subagents_and_a_failed_run() -> None:
    helper = SubAgent(
        prompt="Add {{x}} and {{y}}", signature="(x :int, y :int) -> :int", name="adder",
        output="json", max_turns=1,
    )  # fmt: skip
    llm = ScriptedLLM([ScriptedLLM.tool_call("adder", x=2, y=3), "5"])  # then runs out
    out = await _run(llm, ReAct(), [helper.as_tool()], "add")
    types = [e["type"] for e in out["events"]]
    assert "SUBAGENT_STARTED" in types and "SUBAGENT_FINISHED" in types
    assert types[-1] == "RUN_ERROR"
    assert "script ran out" in out["events"][-1]["message"]


async def test_the_real_client_reads_a_streaming_subagent() -> None:
    from .support import DOUBLER_PROGRAM, PLANNER_PROGRAM, streaming_planner

    planner, llm = streaming_planner(add)
    async with Runtime(llm=llm, bus=SignalBus()) as rt:
        out = await run_node(agui_endpoint(rt, planner, input=lambda _: {}), "go")
    assert out["ok"], out
    assert out["result"] == 42
    # the client assembled each program, streamed chunk by chunk, into a message
    contents = [m.get("content") for m in out["messages"] if m["role"] == "assistant"]
    assert PLANNER_PROGRAM in contents and DOUBLER_PROGRAM in contents
    custom = [e["value"]["text"] for e in out["events"] if e["type"] == "CUSTOM"]
    assert custom == ["asking the doubler\n", "doubling 21\n"]
    chunks = [e for e in out["events"] if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(chunks) > 2


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_the_real_client_sees_an_interrupt_and_resumes_it(decision: str) -> None:
    made: list[str] = []

    @ptcflow.tool(requires_approval=lambda a: a["amount"] > 100)
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        made.append(order)
        return f"refunded {amount} on {order}"

    def answer(request: Any) -> Any:
        if not any(m.role == "assistant" for m in request.messages):
            return ScriptedLLM.tool_call("refund", order="B", amount=500)
        return f"Done: {request.messages[-1].content}"

    async with Runtime(llm=ScriptedLLM(answer), tools=[refund], bus=SignalBus()) as rt:
        out = await run_node(agui_endpoint(rt, ReAct()), "Refund B", decision=decision)
    assert out["ok"], out
    assert out["events"][-1]["type"] == "RUN_FINISHED"
    (interrupt,) = out["interrupts"]  # the client's pendingInterrupts after the first run
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["metadata"]["ptcflow"]["arguments"] == {"order": "B", "amount": 500}
    kinds = [e["type"] for e in out["resumed"]]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert out["pendingAfter"] == []  # the resumed run answered them
    result = [e for e in out["resumed"] if e["type"] == "TOOL_CALL_RESULT"]
    assert [e["toolCallId"] for e in result] == [interrupt["toolCallId"]]
    if decision == "approve":
        assert made == ["B"] and "refunded 500.0 on B" in out["resumedResult"]
    else:
        assert made == [] and "too large" in out["resumedResult"]
    # the client put the tool's result next to its call in the conversation
    tool = [m for m in out["messages"] if m["role"] == "tool"]
    assert [m["toolCallId"] for m in tool] == [interrupt["toolCallId"]]
