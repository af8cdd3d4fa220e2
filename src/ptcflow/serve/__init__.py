"""Serve agents to people and to other agents: a run streamed as AG-UI events
(:func:`agui_endpoint`) or as the Vercel AI SDK's UI message stream
(:func:`ui_message_stream_endpoint`) over SSE, with bounded buffers per client and the run cancelled when its
client goes away. Needs ``pip install 'ptcflow[agui]'``. See docs/streaming.md.
"""

from __future__ import annotations

from ptcflow.serve._agui import (
    AGUIStream as AGUIStream,
    agui_endpoint as agui_endpoint,
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
    StreamStatistics as StreamStatistics,
)

__all__ = (
    "UI_MESSAGE_STREAM_HEADERS",
    "AGUIStream",
    "BadRequest",
    "RunStream",
    "RunStreamEndpoint",
    "StreamStatistics",
    "UIMessageStream",
    "agui_endpoint",
    "last_user_message_text",
    "last_user_text",
    "parse_run_input",
    "ui_message_stream_endpoint",
)
