"""MCP tools: expose the tools of a Model Context Protocol server as ptcflow tools.

``async with from_mcp_server("http://127.0.0.1:8000/mcp") as tools:`` connects over
streamable HTTP (or stdio, given a command), lists the server's tools and converts them;
the connection lives exactly as long as the block. Needs ``ptcflow[mcp]`` (the official
``mcp`` SDK, imported on first use). See docs/mcp.md.
"""

from __future__ import annotations

from ptcflow.mcp._convert import MCPToolError as MCPToolError
from ptcflow.mcp._source import (
    MCPConnectionError as MCPConnectionError,
    MCPToolSource as MCPToolSource,
    from_mcp_server as from_mcp_server,
)

__all__ = ("MCPConnectionError", "MCPToolError", "MCPToolSource", "from_mcp_server")
