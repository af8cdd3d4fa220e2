"""Agents as MCP tools: listed with their signatures as schemas, called through the ``mcp``
SDK's client (in process, asyncio and trio), progress from the run's signals, arguments
that do not fit, a client cancelling its call; and an agent calling an agent over MCP
(ptcflow's own MCP client against the server on uvicorn: asyncio)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import mcp
from ptcflow import SubAgent
from ptcflow.mcp import from_mcp_server
from ptcflow.runtime import Runtime
from ptcflow.serve import mcp_http_app, mcp_server
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, collect_signals

from .test_agui_client import serving

pytestmark = pytest.mark.anyio


def adder() -> SubAgent:
    return SubAgent(
        prompt="Add {{x}} and {{y}}", signature="(x :int, y :int) -> :int", name="adder",
        description="Adds two integers.", output="json", max_turns=1,
    )  # fmt: skip


def reporter() -> SubAgent:
    return SubAgent(
        prompt="Report on {{region}}", signature="(region :string) -> {total :float, rows :int}",
        name="reporter", output="json", max_turns=1,
    )  # fmt: skip


async def test_agents_are_listed_with_their_signatures_as_schemas() -> None:
    async with Runtime(llm=ScriptedLLM([]), bus=SignalBus()) as rt:
        server = mcp_server([adder(), reporter(), ReAct(name="chat")], rt)
        async with mcp.Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {"adder", "reporter", "chat"}
    add = listed["adder"]
    assert add.description == "Adds two integers."
    assert add.input_schema["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert add.input_schema["required"] == ["x", "y"]
    assert add.output_schema is not None
    assert add.output_schema["properties"]["result"] == {"type": "integer"}  # wrapped
    report = listed["reporter"].output_schema
    assert report is not None and set(report["properties"]) == {"total", "rows"}
    assert listed["chat"].input_schema["properties"] == {"prompt": {"type": "string"}}


async def test_a_call_runs_the_agent_with_progress_from_its_signals() -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with (
        Runtime(llm=ScriptedLLM(["5"]), bus=SignalBus()) as rt,
        mcp.Client(mcp_server(adder(), rt)) as client,
    ):
        result = await client.call_tool("adder", {"x": 2, "y": "3"}, progress_callback=on_progress)
    assert not result.is_error
    assert result.structured_content == {"result": 5}
    assert result.content[0].text == "5"  # type: ignore[union-attr]
    assert seen and seen[0] == (1, "turn 1: the model answered")


async def test_arguments_that_do_not_fit_are_a_tool_error_naming_the_path() -> None:
    async with (
        Runtime(llm=ScriptedLLM([]), bus=SignalBus()) as rt,
        mcp.Client(mcp_server(adder(), rt)) as client,
    ):
        result = await client.call_tool("adder", {"x": "two"})
        unknown = await client.call_tool("nope", {})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "do not fit its signature (x :int, y :int) -> :int" in text
    assert "x: " in text and "y: " in text
    assert unknown.is_error and "no tool 'nope'" in unknown.content[0].text  # type: ignore[union-attr]


async def test_a_failed_run_is_a_tool_error() -> None:
    async with (
        Runtime(llm=ScriptedLLM(['"five"']), bus=SignalBus()) as rt,
        mcp.Client(mcp_server(adder(), rt)) as client,
    ):
        result = await client.call_tool("adder", {"x": 2, "y": 3})
    assert result.is_error
    assert result.content[0].text.startswith("adder failed (")  # type: ignore[union-attr]


async def test_a_client_cancelling_its_call_cancels_the_run() -> None:
    bus = SignalBus()
    llm = ScriptedLLM(["5"], latency=60.0)  # the model takes a minute
    with collect_signals(bus, "ai.request.*") as seen:
        async with Runtime(llm=llm, bus=bus) as rt, mcp.Client(mcp_server(adder(), rt)) as client:
            with anyio.move_on_after(0.5):
                await client.call_tool("adder", {"x": 2, "y": 3})
            # the client still works after cancelling a call
            assert [t.name for t in (await client.list_tools()).tools] == ["adder"]
    ends = [s for s in seen.signals if s.type == "ai.request.failed"]
    # in process, the handler runs under the client's deadline, which the run inherits:
    # it ends cancelled or timed out, whichever the loop sees first
    assert len(ends) == 1 and ends[0].data.reason in ("cancelled", "timeout")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_client_cancelling_over_http_cancels_the_run() -> None:
    bus = SignalBus()
    llm = ScriptedLLM(["5"], latency=60.0)
    with collect_signals(bus, "ai.request.*") as seen:
        async with (
            Runtime(llm=llm, bus=bus) as rt,
            serving(mcp_http_app([adder()], rt), lifespan="on") as url,
        ):
            async with mcp.Client(url + "/mcp") as client:
                with anyio.move_on_after(0.5):
                    await client.call_tool("adder", {"x": 2, "y": 3})
                assert [t.name for t in (await client.list_tools()).tools] == ["adder"]
            with anyio.fail_after(10):
                while "ai.request.failed" not in seen.types():  # noqa: ASYNC110
                    await anyio.sleep(0.01)
    (end,) = [s for s in seen.signals if s.type == "ai.request.failed"]
    assert end.data.reason == "cancelled"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_agent_calls_an_agent_over_mcp() -> None:
    served = Runtime(llm=ScriptedLLM(["5"]), bus=SignalBus())
    calling = ScriptedLLM([ScriptedLLM.tool_call("adder", x=2, y=3), "It is 5"])
    async with (
        served as rt,
        serving(mcp_http_app([adder()], rt), lifespan="on") as url,
        from_mcp_server(url + "/mcp") as tools,
        Runtime(llm=calling, tools=tools) as caller,
    ):
        step = await caller.run(ReAct(), "What is 2 + 3?")
    assert step.ok and step.value == "It is 5"
    request = calling.requests[-1]
    answer: Any = [m for m in request.messages if m.role == "tool"][-1]
    assert '"result":5' in answer.content.replace(" ", "")
