"""``ptcflow mcp serve --example``: the demo's agents over stdio, called by the ``mcp`` SDK's
client and by ptcflow's own MCP client (a ReAct agent calling them)."""

from __future__ import annotations

import os
import sys

import pytest

import mcp
from ptcflow.mcp import from_mcp_server
from ptcflow.runtime import Runtime
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio

COMMAND = [sys.executable, "-m", "ptcflow.cli", "mcp", "serve", "--example"]


async def test_the_sdk_client_calls_the_example_agents() -> None:
    params = mcp.StdioServerParameters(command=COMMAND[0], args=COMMAND[1:], env=dict(os.environ))
    async with mcp.Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"analyst", "revenue-analyst"}
        assert tools["analyst"].input_schema["required"] == ["prompt"]
        answer = await client.call_tool(
            "analyst", {"prompt": "How much has Alice spent on delivered orders, in euros?"}
        )
        revenue = await client.call_tool("revenue-analyst", {})
        again = await client.call_tool("revenue-analyst", {})  # the scripted model repeats
    assert answer.structured_content == {
        "result": "Alice spent €270.08 on delivered orders (3 orders; converted from USD)."
    }
    assert revenue.structured_content is not None
    assert revenue.structured_content["top_city"] == "Paris"
    assert again.structured_content == revenue.structured_content


async def test_an_agent_calls_the_example_agents_over_stdio() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("revenue-analyst"), "Paris"])
    async with (
        from_mcp_server(COMMAND, env=dict(os.environ)) as tools,
        Runtime(llm=llm, tools=tools) as rt,
    ):
        step = await rt.run(ReAct(), "Which city brought the most revenue?")
    assert step.ok and step.value == "Paris"
    result = [m for m in llm.requests[-1].messages if m.role == "tool"][-1]
    assert '"top_city":"Paris"' in result.content.replace(" ", "")
