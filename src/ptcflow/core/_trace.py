"""What a SubAgent run leaves on its :class:`~ptcflow.runtime.Step`: ``fail`` and ``trace``.

The structs follow the SubAgent specification's ``Step.fail`` and ``Step.trace``
(``turn_trace``) field for field; everything is frozen, plain data, and encodes to JSON.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.signals import Message, ProgramError

__all__ = (
    "ExecutionTrace",
    "ProgramTrace",
    "PromptTrace",
    "StepFail",
    "TokenCounts",
    "ToolCallTrace",
    "Trace",
    "TurnTrace",
)


class StepFail(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Why a SubAgent run failed (the spec's ``step.fail``).

    Attributes:
        reason: a machine-readable code: the ``:reason`` the program gave to ``fail``
            (``"not_found"``), or the run's own (``"max_turns_exceeded"``,
            ``"memory_limit"``, ``"llm_error"``, ``"timeout"``, ``"cancelled"``,
            ``"missing_context"``, ``"program_error"``, ``"invalid_return"``, ...).
        message: a human-readable description.
        op: the operation or tool that failed, when known.
        details: more facts as plain data (for ``fail``: its ``:details`` map).
    """

    reason: str
    message: str
    op: str | None = None
    details: dict[str, Any] = {}


class TokenCounts(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Tokens of one model call or of a whole run."""

    input: int = 0
    output: int = 0


class PromptTrace(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What the model was sent in one turn.

    Attributes:
        system: the full system prompt.
        messages: the conversation sent (the system message first).
        expanded_template: the task prompt with its ``{{placeholders}}`` filled in.
    """

    system: str
    messages: tuple[Message, ...]
    expanded_template: str


class ProgramTrace(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The program extracted from one response.

    Attributes:
        source: the PTC-Lisp text (``None`` when the response held no program).
        ast: the parsed forms, printed (only with ``debug=True``).
        parse_error: why no program could be taken from the response or read, if so.
    """

    source: str | None = None
    ast: str | None = None
    parse_error: str | None = None


class ToolCallTrace(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One tool call of a turn.

    Attributes:
        name: the tool.
        args: its arguments.
        result: what it returned (``None`` when it failed).
        duration_ms: how long it took.
        error: its error (``type`` and ``message`` as ``category`` and ``message``).
        index: its position among the turn's calls, in issue order.
        child: for an agent used as a tool, the :class:`~ptcflow.runtime.Step` of the
            child run (with its own trace); ``None`` otherwise.
        warnings: the coercions of its arguments (``id: coerced string "42" to int``).
    """

    name: str
    args: dict[str, Any] = {}
    result: Any = None
    duration_ms: float = 0.0
    error: ProgramError | None = None
    index: int = 0
    child: Any = None
    warnings: tuple[str, ...] = ()


class ExecutionTrace(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What running the turn's program did.

    Attributes:
        result: the program's value (or the returned value).
        tool_calls: the tools it called.
        error: the error that ended the program, or the problem fed back (a ``return``
            that did not match the signature is category ``validation``).
        context_snapshot: ``ctx/`` as the program saw it (only with ``debug=True``).
        prints: what it printed.
        memory: the memory after the turn, ``{name: PTC-Lisp text}`` (only with
            ``debug=True``).
    """

    result: Any = None
    tool_calls: tuple[ToolCallTrace, ...] = ()
    error: ProgramError | None = None
    context_snapshot: dict[str, Any] | None = None
    prints: tuple[str, ...] = ()
    memory: dict[str, str] | None = None


class TurnTrace(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One turn: the prompt, the model's response, the program and what it did.

    Attributes:
        turn: 1-based.
        timestamp: when the model's response arrived (RFC 3339, from the signal).
        duration_ms: from the end of the previous turn (for the first turn: its first
            model signal) to the end of this one.
        prompt: what the model was sent.
        llm_response: the model's raw response text.
        program: the program taken from it.
        execution: what the program did.
        tokens: the tokens of this turn's model call.
    """

    turn: int
    timestamp: str
    duration_ms: float
    prompt: PromptTrace
    llm_response: str
    program: ProgramTrace
    execution: ExecutionTrace
    tokens: TokenCounts


class Trace(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Every turn of a run (the spec's ``step.trace``)."""

    turns: tuple[TurnTrace, ...] = ()
    total_duration_ms: float = 0.0
    total_tokens: TokenCounts = TokenCounts()
