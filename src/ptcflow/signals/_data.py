"""Typed ``data`` payloads, one struct per signal type.

A signal's ``data`` is one of these structs, so strategies can ``match`` on it and the
journal can decode it back to exactly the same value (see :data:`DATA_TYPES`).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ptcflow.signals import _catalogue as t
from ptcflow.signals._approval import (
    ApprovalRequestedData,
    ApprovalResolvedData,
    RequestPausedData,
    RequestResumedData,
)
from ptcflow.signals._compaction import Compaction, Summary
from ptcflow.signals._envelope import Err, ErrorEnvelope, Ok
from ptcflow.signals._messages import (
    EmbedResponse,
    LLMChunk,
    LLMResponse,
    Message,
    ToolSpec,
    Usage,
)
from ptcflow.signals._program import ProgramMemory, ProgramResultData

__all__ = (
    "DATA_TYPES",
    "EmbedResultData",
    "HandoffData",
    "LLMDeltaData",
    "LLMResponseData",
    "ProgramPrintData",
    "ProgramResultData",
    "RequestEndData",
    "RequestErrorData",
    "RequestStartedData",
    "ToolResultData",
    "ToolStartedData",
    "UsageData",
)


class _Data(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    pass


class LLMDeltaData(_Data, frozen=True, kw_only=True):
    """``ai.llm.delta``: one streamed chunk."""

    chunk: LLMChunk


class UsageData(_Data, frozen=True, kw_only=True):
    """``ai.usage``: token usage of one LLM call."""

    usage: Usage
    model: str = ""


class LLMResponseData(_Data, frozen=True, kw_only=True):
    """``ai.llm.response``: the result of an LLM call and how many attempts it took."""

    result: Ok[LLMResponse] | Err
    attempts: int = 1


class EmbedResultData(_Data, frozen=True, kw_only=True):
    """``ai.embed.result``: the result of an embedding call."""

    result: Ok[EmbedResponse] | Err
    attempts: int = 1


class ProgramPrintData(_Data, frozen=True, kw_only=True):
    """``ai.program.print``: output a streaming program printed.

    Attributes:
        text: what one ``println`` / ``print`` / ``prn`` wrote (past the program's
            ``max_output_chars`` cut, with the ``...[output truncated]`` marker, then
            nothing more).
        index: the print's place in the program's output (0, 1, ...). A program run again
            (a retried attempt) prints again from 0: a consumer that has seen an index of
            this ``call_id`` already skips it.
    """

    text: str
    index: int = 0


class ToolStartedData(_Data, frozen=True, kw_only=True):
    """``ai.tool.started``: a tool call began."""

    tool_name: str
    arguments: dict[str, Any] = {}


class ToolResultData(_Data, frozen=True, kw_only=True):
    """``ai.tool.result``: the result of a tool call (or of a child run used as a tool)."""

    tool_name: str
    result: Ok[Any] | Err
    attempts: int = 1
    duration_ms: float = 0.0


class HandoffData(_Data, frozen=True, kw_only=True):
    """``ai.handoff``: the run hands its conversation to another agent (a handoff tool's
    call, whose ``call_id`` the signal carries)."""

    from_agent: str
    """The agent that hands the conversation over (the run's agent name)."""
    to_agent: str
    """The agent that takes it (the next run's agent name)."""
    tool_name: str
    """The handoff tool the model called (``transfer_to_<agent>``)."""
    messages: int = 0
    """How many messages of the conversation the next agent sees (after the input filter)."""
    chain: tuple[str, ...] = ()
    """The agents that handed the conversation on before, first to last (``from_agent`` is
    the last one); its length counts against ``Limits.max_handoffs``."""


class RequestStartedData(_Data, frozen=True, kw_only=True):
    """``ai.request.started``: a run began with this input."""

    input: Any = None
    agent: str = ""
    tools: tuple[ToolSpec, ...] = ()
    """The tools the run may call, so a journal replays with the same ``RunInfo``."""
    history: tuple[Message, ...] = ()
    """The conversation the run continues (``history=``, a session's messages), so a
    journal replays with the same ``RunInfo``."""
    memory: ProgramMemory | None = None
    """What the conversation's earlier programs kept (``memory=``, a session's), so a
    journal replays with the same ``RunInfo``."""
    compaction: Compaction | None = None
    """How the run shrinks ``history`` before sending it (``compaction=``)."""
    summary: Summary | None = None
    """An earlier summary of the history the run may reuse (a session's, ``summary=``)."""


class RequestEndData(_Data, frozen=True, kw_only=True):
    """``ai.request.completed`` / ``ai.request.failed``: how a run ended."""

    result: Ok[Any] | Err
    usage: Usage = Usage()
    reason: str = ""


class RequestErrorData(_Data, frozen=True, kw_only=True):
    """``ai.request.error``: a request was rejected (busy, invalid)."""

    error: ErrorEnvelope
    reason: str = ""


DATA_TYPES: Final[dict[str, type[Any]]] = {
    t.LLM_DELTA: LLMDeltaData,
    t.USAGE: UsageData,
    t.LLM_RESPONSE: LLMResponseData,
    t.EMBED_RESULT: EmbedResultData,
    t.TOOL_STARTED: ToolStartedData,
    t.TOOL_RESULT: ToolResultData,
    t.REQUEST_STARTED: RequestStartedData,
    t.REQUEST_COMPLETED: RequestEndData,
    t.REQUEST_FAILED: RequestEndData,
    t.REQUEST_ERROR: RequestErrorData,
    t.PROGRAM_PRINT: ProgramPrintData,
    t.PROGRAM_RESULT: ProgramResultData,
    t.APPROVAL_REQUESTED: ApprovalRequestedData,
    t.APPROVAL_RESOLVED: ApprovalResolvedData,
    t.REQUEST_PAUSED: RequestPausedData,
    t.REQUEST_RESUMED: RequestResumedData,
    t.HANDOFF: HandoffData,
}
"""The ``data`` struct of each catalogued signal type (used to decode journals)."""
