"""``from_mcp_server`` as a tools entry point (the implementation lives in :mod:`ptcflow.mcp`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptcflow.mcp import MCPToolSource

__all__ = ("from_mcp_server",)


def from_mcp_server(target: Any, **options: Any) -> MCPToolSource:
    """Tools from an MCP server over streamable HTTP or stdio (needs ``ptcflow[mcp]``).

    The same as :func:`ptcflow.mcp.from_mcp_server` (see it for the options); imported
    lazily so the ``mcp`` SDK is only loaded when used. Enter the result with ``async with``
    and pass it to ``for_agent`` / ``Runtime(tools=...)``.
    """
    from ptcflow.mcp import from_mcp_server as _impl

    return _impl(target, **options)
