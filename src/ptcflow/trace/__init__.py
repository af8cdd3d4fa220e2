"""See a run: the mission tree of a journal or of a live signal stream, as boxed text, as
OpenTelemetry spans (OTLP) and as a self-contained HTML page (``ptcflow trace show|export|open``;
see docs/trace.md)."""

from __future__ import annotations

from ptcflow.trace._commands import (
    add_trace_commands as add_trace_commands,
    run_trace_command as run_trace_command,
)
from ptcflow.trace._follow import (
    FollowPrinter as FollowPrinter,
    JournalFollower as JournalFollower,
    follow_journal as follow_journal,
)
from ptcflow.trace._live import LiveMission as LiveMission, sse_event as sse_event
from ptcflow.trace._mission import Mission as Mission
from ptcflow.trace._node import KINDS as KINDS, STATUSES as STATUSES, Node as Node
from ptcflow.trace._otlp import otlp_request as otlp_request, send_otlp as send_otlp
from ptcflow.trace._page import (
    live_page as live_page,
    page_html as page_html,
    write_page as write_page,
)
from ptcflow.trace._redact import HIDDEN as HIDDEN, Redactor as Redactor
from ptcflow.trace._serve import serve_example as serve_example
from ptcflow.trace._summary import (
    AgentSummary as AgentSummary,
    Prices as Prices,
    summarize as summarize,
)
from ptcflow.trace._text import (
    format_mission as format_mission,
    format_run as format_run,
    format_summary as format_summary,
    format_turn as format_turn,
)

__all__ = (
    "HIDDEN",
    "KINDS",
    "STATUSES",
    "AgentSummary",
    "FollowPrinter",
    "JournalFollower",
    "LiveMission",
    "Mission",
    "Node",
    "Prices",
    "Redactor",
    "add_trace_commands",
    "follow_journal",
    "format_mission",
    "format_run",
    "format_summary",
    "format_turn",
    "live_page",
    "otlp_request",
    "page_html",
    "run_trace_command",
    "send_otlp",
    "serve_example",
    "sse_event",
    "summarize",
    "write_page",
)
