"""Serve agents to people and to other agents: a run streamed as AG-UI events over SSE
(:func:`agui_endpoint`), with bounded buffers per client and the run cancelled when its
client goes away. Needs ``pip install 'ptcflow[agui]'``. See docs/streaming.md.
"""

from __future__ import annotations

from ptcflow.serve._agui import (
    AGUIStream as AGUIStream,
    agui_endpoint as agui_endpoint,
    last_user_text as last_user_text,
    parse_run_input as parse_run_input,
)
from ptcflow.serve._asgi import (
    BadRequest as BadRequest,
    RunStream as RunStream,
    RunStreamEndpoint as RunStreamEndpoint,
    StreamStatistics as StreamStatistics,
)

__all__ = (
    "AGUIStream",
    "BadRequest",
    "RunStream",
    "RunStreamEndpoint",
    "StreamStatistics",
    "agui_endpoint",
    "last_user_text",
    "parse_run_input",
)
