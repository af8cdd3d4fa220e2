"""The signal type catalogue: every ``type`` a ptcflow signal can carry."""

from __future__ import annotations

from typing import Final

__all__ = (
    "APPROVAL_REQUESTED",
    "APPROVAL_RESOLVED",
    "EMBED_RESULT",
    "HANDOFF",
    "LLM_DELTA",
    "LLM_RESPONSE",
    "PROGRAM_PRINT",
    "PROGRAM_RESULT",
    "REQUEST_COMPLETED",
    "REQUEST_ERROR",
    "REQUEST_FAILED",
    "REQUEST_PAUSED",
    "REQUEST_RESUMED",
    "REQUEST_STARTED",
    "SIGNAL_TYPES",
    "TERMINAL_TYPES",
    "TOOL_RESULT",
    "TOOL_STARTED",
    "USAGE",
)

LLM_DELTA: Final = "ai.llm.delta"
"""A streamed fragment of an LLM response (text or tool-call arguments)."""
LLM_RESPONSE: Final = "ai.llm.response"
"""The terminal signal of an LLM directive; ``data["result"]`` is an Ok/Err envelope."""
USAGE: Final = "ai.usage"
"""Token usage of one LLM call; always published just before its ``ai.llm.response``."""
EMBED_RESULT: Final = "ai.embed.result"
"""The terminal signal of an ``LLMEmbed`` directive."""
TOOL_STARTED: Final = "ai.tool.started"
"""A tool call began executing; always precedes its ``ai.tool.result``."""
TOOL_RESULT: Final = "ai.tool.result"
"""The terminal signal of ``ToolExec`` / ``EmitToolError`` / a child run used as a tool."""
REQUEST_STARTED: Final = "ai.request.started"
"""A run began; ``data["input"]`` holds its input (the journal replays from it)."""
REQUEST_COMPLETED: Final = "ai.request.completed"
"""A run ended successfully; ``data["result"]`` holds the Ok envelope of its answer."""
REQUEST_FAILED: Final = "ai.request.failed"
"""A run ended in failure; ``data["result"]`` holds the Err envelope."""
REQUEST_ERROR: Final = "ai.request.error"
"""A request was rejected (for example: busy); the terminal signal of ``EmitRequestError``."""
HANDOFF: Final = "ai.handoff"
"""A run hands its conversation to another agent: published by the handoff tool call
(``call_id``) once the next agent's run is planned, just before it starts."""
PROGRAM_PRINT: Final = "ai.program.print"
"""Output a program printed (``println`` and friends), published as it is printed by a
``RunProgram`` that streams (``RunProgram(stream=True)``); precedes its ``ai.program.result``."""
PROGRAM_RESULT: Final = "ai.program.result"
"""The terminal signal of a ``RunProgram`` directive: ``Ok(ProgramOutput)`` or ``Err``."""
APPROVAL_REQUESTED: Final = "ai.approval.requested"
"""A tool call waits for a person's decision (or a deferred tool's result from outside)."""
APPROVAL_RESOLVED: Final = "ai.approval.resolved"
"""A waiting tool call was decided (approve, deny, supply, expired) when its run resumed."""
REQUEST_PAUSED: Final = "ai.request.paused"
"""A run stopped to wait for decisions; it ends with a paused Step, not a terminal."""
REQUEST_RESUMED: Final = "ai.request.resumed"
"""A paused run continues (``rt.resume``), in this process or another."""

SIGNAL_TYPES: Final = frozenset(
    {
        APPROVAL_REQUESTED,
        APPROVAL_RESOLVED,
        REQUEST_PAUSED,
        REQUEST_RESUMED,
        LLM_DELTA,
        LLM_RESPONSE,
        USAGE,
        EMBED_RESULT,
        TOOL_STARTED,
        TOOL_RESULT,
        REQUEST_STARTED,
        REQUEST_COMPLETED,
        REQUEST_FAILED,
        REQUEST_ERROR,
        PROGRAM_PRINT,
        PROGRAM_RESULT,
        HANDOFF,
    }
)
"""Every signal type ptcflow publishes."""

TERMINAL_TYPES: Final = frozenset(
    {LLM_RESPONSE, EMBED_RESULT, TOOL_RESULT, REQUEST_ERROR, PROGRAM_RESULT}
)
"""Signal types that end a directive: exactly one is published per directive."""
