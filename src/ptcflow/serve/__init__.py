"""Serve agents to people and to other agents: a run streamed over SSE as AG-UI events
(:func:`agui_endpoint`) or as the Vercel AI SDK's UI message stream
(:func:`ui_message_stream_endpoint`), with a bounded buffer per client and the run
cancelled when its client goes away; agents as MCP tools (:func:`mcp_server`).
Needs ``pip install 'ptcflow[agui]'`` (and ``ptcflow[mcp]`` for MCP). See docs/streaming.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: the AG-UI names need the agui extra
    from ptcflow.serve._agui import (
        AGUIEndpoint as AGUIEndpoint,
        AGUIStream as AGUIStream,
        MemoryPausedRuns as MemoryPausedRuns,
        PausedRuns as PausedRuns,
        TaskRun as TaskRun,
        agui_endpoint as agui_endpoint,
        decisions_from_resume as decisions_from_resume,
        interrupt_of as interrupt_of,
        last_user_text as last_user_text,
        parse_run_input as parse_run_input,
    )
from ptcflow.serve._aisdk import (
    UI_MESSAGE_STREAM_HEADERS as UI_MESSAGE_STREAM_HEADERS,
    UIMessageStream as UIMessageStream,
    last_user_message_text as last_user_message_text,
    ui_message_stream_endpoint as ui_message_stream_endpoint,
)
from ptcflow.serve._asgi import (
    BadRequest as BadRequest,
    RunStream as RunStream,
    RunStreamEndpoint as RunStreamEndpoint,
    StartedRun as StartedRun,
    StreamStatistics as StreamStatistics,
)
from ptcflow.serve._mcp import (
    AgentTool as AgentTool,
    agent_tool as agent_tool,
    mcp_http_app as mcp_http_app,
    mcp_server as mcp_server,
    serve_mcp_stdio as serve_mcp_stdio,
)

__all__ = (
    "UI_MESSAGE_STREAM_HEADERS",
    "AGUIEndpoint",
    "AGUIStream",
    "AgentTool",
    "BadRequest",
    "MemoryPausedRuns",
    "PausedRuns",
    "RunStream",
    "RunStreamEndpoint",
    "StartedRun",
    "StreamStatistics",
    "TaskRun",
    "UIMessageStream",
    "agent_tool",
    "agui_endpoint",
    "decisions_from_resume",
    "interrupt_of",
    "last_user_message_text",
    "last_user_text",
    "mcp_http_app",
    "mcp_server",
    "parse_run_input",
    "serve_mcp_stdio",
    "ui_message_stream_endpoint",
)

_AGUI = frozenset(
    {
        "AGUIEndpoint",
        "AGUIStream",
        "MemoryPausedRuns",
        "PausedRuns",
        "TaskRun",
        "agui_endpoint",
        "decisions_from_resume",
        "interrupt_of",
        "last_user_text",
        "parse_run_input",
    }
)


def __getattr__(name: str) -> Any:
    """The AG-UI names, imported on first use (``import ptcflow.serve`` needs no extra).

    Raises:
        ConfigError: ``ag-ui-protocol`` is not installed (``pip install 'ptcflow[agui]'``).
    """
    if name not in _AGUI:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module("ptcflow.serve._agui")
    except ModuleNotFoundError as exc:
        from ptcflow.errors import ConfigError

        raise ConfigError(
            f"ptcflow.serve.{name} needs the AG-UI protocol package ({exc.name} is not "
            "installed): pip install 'ptcflow[agui]'"
        ) from None
    value = getattr(module, name)
    globals()[name] = value
    return value
