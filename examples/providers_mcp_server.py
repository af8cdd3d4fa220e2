"""A small MCP server written with the official SDK (``pip install 'ptcflow[mcp]'``).

    python examples/providers_mcp_server.py          # stdio (what from_mcp_server starts)
    python examples/providers_mcp_server.py --http   # streamable HTTP on 127.0.0.1

With ``--http`` it listens on an ephemeral port and then prints ``PORT <n>``.
"""

from __future__ import annotations

import socket
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("ptcflow-example")

CITIES = {"paris": 2_102_650, "lyon": 522_250, "marseille": 873_076}


@server.tool()
def population(city: str) -> int:
    """Return the population of a French city."""
    try:
        return CITIES[city.lower()]
    except KeyError:
        # ToolError's message reaches the client (other exceptions are reported generically)
        raise ToolError(f"unknown city {city!r}; known: {', '.join(sorted(CITIES))}") from None


@server.tool()
def word_count(text: str) -> dict[str, int]:
    """Count the words and characters of a text."""
    return {"words": len(text.split()), "chars": len(text)}


def serve_http() -> None:
    """Serve streamable HTTP at /mcp on an ephemeral port of 127.0.0.1."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        serve_http()
    else:
        server.run("stdio")
