"""An MCP server for the tests, written with the official SDK's server API (MCPServer).

    python mcp_server_app.py stdio    # serve on stdin/stdout
    python mcp_server_app.py http     # serve streamable HTTP on 127.0.0.1, ephemeral port

In ``http`` mode the process binds and listens first, then prints ``PORT <n>`` on stdout:
that line is the readiness signal (the kernel queues connections from then on).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("ptcflow-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def profile(name: str, tags: list[str] | None = None) -> dict[str, Any]:
    """Return a profile record for a name."""
    return {"name": name.title(), "tags": tags or [], "length": len(name)}


@server.tool(name="text.echo")
def echo(text: str) -> str:
    """Echo the text back (a tool name with a dot)."""
    return text


@server.tool()
def refuse(reason: str) -> str:
    """Always fail with the given reason."""
    raise ValueError(reason)


@server.tool()
def crash(code: int = 3) -> str:
    """Kill the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(code)


@server.tool()
def pid() -> int:
    """Return the server's process id."""
    return os.getpid()


@server.tool()
async def wait(seconds: float) -> str:
    """Wait, then answer."""
    await anyio.sleep(seconds)
    return "waited"


def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = server.streamable_http_app(json_response=False)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run("stdio")
