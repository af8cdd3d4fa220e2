"""A server that cannot be started or reached is named, with what it said on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ptcflow.errors import UsageError
from ptcflow.mcp import MCPConnectionError, from_mcp_server

pytestmark = pytest.mark.anyio


async def enter(target: str | list[str]) -> MCPConnectionError:
    with pytest.raises(MCPConnectionError) as info:
        async with from_mcp_server(target):
            pass  # pragma: no cover - entering fails
    assert isinstance(info.value, ConnectionError)
    return info.value


async def test_a_command_that_does_not_exist() -> None:
    error = await enter(["no-such-mcp-server-xyz", "--flag"])
    assert str(error) == (
        "MCP server stdio:no-such-mcp-server-xyz could not start: the command "
        "'no-such-mcp-server-xyz' was not found (command line: no-such-mcp-server-xyz "
        "--flag); check the command, or give its full path"
    )


async def test_a_script_that_does_not_exist() -> None:
    error = await enter("python no_such_mcp_script.py")
    assert str(error).startswith(
        f"MCP server stdio:python exited before answering (command line: {sys.executable} "
        "no_such_mcp_script.py); its stderr ends with:"
    )
    assert "no_such_mcp_script.py" in error.stderr and "No such file" in error.stderr


async def test_a_server_that_exits_at_start_shows_its_stderr_tail() -> None:
    code = "import sys; print('\\n'.join(f'line {i}' for i in range(40)), file=sys.stderr); sys.exit(3)"
    error = await enter([sys.executable, "-c", code])
    message = str(error)
    assert "exited before answering" in message and "line 39" in message
    assert "line 27" not in message  # the tail: the last 12 lines
    assert error.stderr.endswith("line 39")


async def test_a_url_that_does_not_answer_names_the_url() -> None:
    error = await enter("http://127.0.0.1:9/mcp?token=secret-0123456789")
    assert str(error).startswith(
        "MCP server at http://127.0.0.1:9/mcp?token=[REDACTED] did not answer ("
    )
    assert "check that it is running" in str(error)


async def test_usage_errors_stay_usage_errors() -> None:
    server = [
        sys.executable,
        str(Path(__file__).parents[2] / "examples" / "providers_mcp_server.py"),
    ]
    with pytest.raises(UsageError, match="has no tool"):
        async with from_mcp_server(server, include=["nope"]):
            pass  # pragma: no cover
