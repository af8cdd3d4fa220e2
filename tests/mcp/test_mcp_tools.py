"""from_mcp_server against a real MCP server process (the SDK's server API), over stdio and
streamable HTTP: listing, schemas, calls, tool errors, a server that crashes mid-call,
timeouts, a ReAct run, and nothing left running afterwards."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from ptcflow.errors import UsageError
from ptcflow.mcp import MCPToolSource, from_mcp_server
from ptcflow.runtime import Runtime
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import ToolCall, ToolResult, dispatch, for_agent

pytestmark = pytest.mark.anyio

APP = str(Path(__file__).with_name("mcp_server_app.py"))
STDIO = [sys.executable, APP, "stdio"]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@asynccontextmanager
async def http_server() -> AsyncIterator[tuple[str, Process]]:
    """Start the server app in HTTP mode; its ``PORT n`` line says it is listening."""
    async with await anyio.open_process([sys.executable, APP, "http"]) as process:
        assert process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await process.stdout.receive(1)
        port = int(line.decode().split()[1])
        try:
            yield f"http://127.0.0.1:{port}/mcp", process
        finally:
            if process.returncode is None:
                process.terminate()
            with anyio.CancelScope(shield=True):
                await process.wait()


@asynccontextmanager
async def source(transport: str, **kw: object) -> AsyncIterator[MCPToolSource]:
    if transport == "stdio":
        async with from_mcp_server(STDIO, **kw) as tools:  # type: ignore[arg-type]
            yield tools
    else:
        async with http_server() as (url, _), from_mcp_server(url, **kw) as tools:  # type: ignore[arg-type]
            yield tools


async def call(tools: MCPToolSource, tool: str, /, **arguments: object) -> ToolResult:
    return await dispatch(for_agent([tools]), ToolCall(id="c1", name=tool, input=arguments))


TRANSPORTS = ["stdio", "http"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_lists_tools_with_schemas_and_signatures(transport: str) -> None:
    async with source(transport) as tools:
        by_name = {t.name: t for t in tools.ptcflow_tools()}
    assert set(by_name) == {"add", "profile", "text_echo", "refuse", "crash", "pid", "wait"}
    add = by_name["add"]
    assert add.description == "Add two integers."
    assert add.pass_input
    assert add.input_schema["required"] == ["a", "b"]
    assert add.output_schema == {"title": "Result", "type": "integer"}  # unwrapped {"result": ...}
    assert add.signature is not None
    assert add.signature.with_name(None).render() == "(a :int, b :int) -> :int"
    assert by_name["profile"].output_schema is not None


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_calls_return_values_and_tool_errors_become_envelopes(transport: str) -> None:
    async with source(transport) as tools:
        added = await call(tools, "add", a=2, b=40)
        record = await call(tools, "profile", name="ada lovelace")
        echoed = await call(tools, "text_echo", text="hi there")
        refused = await call(tools, "refuse", reason="not today")
        invalid = await call(tools, "add", a="two", b=1)
    assert (added.is_error, added.output) == (False, 42)
    assert record.output == {"name": "Ada Lovelace", "tags": [], "length": 12}
    assert echoed.output == "hi there"
    assert refused.is_error and refused.output.type == "tool_error"
    assert "refuse" in refused.output.message and not refused.output.retryable
    assert refused.output.details["tool"] == "refuse"
    assert invalid.is_error and invalid.output.type == "validation"  # checked before sending


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_prefix_and_include(transport: str) -> None:
    async with source(transport, prefix="calc.", include=["add", "text.echo"]) as tools:
        names = sorted(t.name for t in tools.tools)
        result = await call(tools, "calc_add", a=1, b=1)
    assert names == ["calc_add", "calc_text_echo"]
    assert result.output == 2


async def test_include_of_a_missing_tool_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"has no tool\(s\) \['nope'\]"):
        async with from_mcp_server(STDIO, include=["nope"]):
            pass


async def test_stdio_server_crash_mid_call_is_an_envelope_and_leaves_nothing_running() -> None:
    fds = open_fds()
    async with from_mcp_server(STDIO) as tools:
        pid = (await call(tools, "pid")).output
        assert alive(pid)
        crashed = await call(tools, "crash", code=7)
        after = await call(tools, "add", a=1, b=2)
    assert crashed.is_error and crashed.output.type == "tool_error"
    assert "closed the connection during the call to 'crash'" in crashed.output.message
    assert not crashed.output.retryable
    assert after.is_error  # the session is gone: later calls fail fast, nothing hangs
    assert not alive(pid)
    assert open_fds() == fds


async def test_http_server_crash_mid_call_is_an_envelope() -> None:
    fds = open_fds()
    async with http_server() as (url, process):
        async with from_mcp_server(url) as tools:
            crashed = await call(tools, "crash", code=9)
        assert await process.wait() == 9
    assert crashed.is_error
    assert crashed.output.type in ("tool_error", "transient")
    assert open_fds() == fds


async def test_stdio_process_stops_when_the_block_ends() -> None:
    fds = open_fds()
    async with from_mcp_server(STDIO) as tools:
        pid = (await call(tools, "pid")).output
    assert not alive(pid)
    assert open_fds() == fds
    with pytest.raises(UsageError, match="not connected"):
        tools.ptcflow_tools()
    with pytest.raises(UsageError, match="can be entered once"):
        async with tools:
            pass


async def test_http_session_leaves_no_socket_open() -> None:
    async with http_server() as (url, _):
        fds = open_fds()
        async with from_mcp_server(url) as tools:
            assert (await call(tools, "add", a=1, b=2)).output == 3
        assert open_fds() == fds


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_call_timeout_is_a_timeout_envelope(transport: str) -> None:
    async with source(transport, call_timeout=0.3) as tools:
        slow = await call(tools, "wait", seconds=30)
        fine = await call(tools, "add", a=1, b=2)
    assert slow.is_error and slow.output.type == "timeout"
    assert fine.output == 3  # the session survives a timed-out call


async def test_cancelling_a_call_leaves_the_session_usable() -> None:
    async with from_mcp_server(STDIO) as tools:
        with anyio.move_on_after(0.3) as scope:
            await call(tools, "wait", seconds=30)
        assert scope.cancelled_caught
        assert (await call(tools, "add", a=5, b=6)).output == 11


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_react_runs_parallel_mcp_tool_calls(transport: str) -> None:
    llm = ScriptedLLM(
        [
            [
                ScriptedLLM.tool_call("add", a=2, b=3),
                ScriptedLLM.tool_call("profile", name="grace"),
                ScriptedLLM.tool_call("refuse", reason="no"),
            ],
            "done",
        ]
    )
    async with source(transport) as tools, Runtime(llm=llm, tools=[tools]) as rt:
        step = await rt.run(ReAct(), "go", record=True)
    assert step.ok and step.value == "done"
    assert step.tool_calls == 3
    results = [s.data for s in step.signals if s.type == "ai.tool.result"]
    by_tool = {r.tool_name: r.result for r in results}
    assert by_tool["add"].payload == 5
    assert by_tool["profile"].payload["name"] == "Grace"
    assert by_tool["refuse"].error.type == "tool_error"
