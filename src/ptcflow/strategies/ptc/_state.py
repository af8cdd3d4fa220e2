"""The data a :class:`~ptcflow.strategies.PTC` run carries between signals.

Frozen msgspec structs holding tuples: a new turn shares the messages and turns of the
old state and appends, so nothing is copied and a state can be encoded, compared and
replayed from a journal.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

from ptcflow.core import StepFail
from ptcflow.sessions import CompactionPlan
from ptcflow.signals import ErrorEnvelope, Message, ProgramError, ProgramOutput, Summary, Usage

__all__ = ("PtcState", "PtcStatus", "PtcTurn")

PtcStatus = Literal["compacting", "awaiting_llm", "awaiting_program", "completed", "failed"]
"""Where a PTC run is: waiting for the summary of its history
(:class:`~ptcflow.sessions.Compaction`), for the model, for its program, or done."""


class PtcTurn(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One turn: the model call, the program taken from it and what the program did.

    Attributes:
        turn: 1-based.
        sent: how many messages of the state's conversation the model was sent.
        started: when the turn started (RFC 3339, from the signals; ``""`` unknown).
        timestamp: when the model's response arrived.
        ended: when the turn ended.
        response: the model's raw text.
        source: the program taken from it, if any.
        ast: the parsed program, printed (``debug=True`` only).
        ctx: ``ctx/`` as the program saw it (``debug=True`` only).
        output: what the program did, if it ran.
        problem: the error or the problem fed back (or that ended the run).
        usage: the tokens of the turn's model call.
    """

    turn: int
    sent: int
    started: str = ""
    timestamp: str = ""
    ended: str = ""
    response: str = ""
    source: str | None = None
    ast: str | None = None
    ctx: dict[str, Any] | None = None
    output: ProgramOutput | None = None
    problem: ProgramError | None = None
    usage: Usage = Usage()


class PtcState(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The state of one PTC run.

    Attributes:
        run_id: the run (directive ids derive from it: ``{run_id}/llm/{n}``,
            ``{run_id}/program/{n}``).
        status: see :data:`PtcStatus`.
        request_id: the request being served.
        judgment: one turn without tools: the program's value is the answer.
        system: the full system prompt of the run.
        expanded_prompt: the task prompt with its placeholders filled in.
        messages: the conversation so far (shared between states, never copied).
        ctx: the data the next program reads as ``ctx/`` (context, results merged in,
            ``fail`` after a failed turn).
        memory: memory kept for the next program, ``{name: PTC-Lisp text}``.
        functions: functions kept for the next program, ``{name: defn source}``.
        tool_names: the tools programs may call.
        tool_inputs: tool name -> its int/float/bool arguments as signature text (to
            report the coercions of a call's arguments; see ``coercible_inputs``).
        llm_call_id: the model call in flight, if any.
        program_call_id: the program in flight, if any.
        usage_seen: whether ``ai.usage`` arrived for the model call in flight.
        usage: tokens summed over the run.
        turns: the finished turns, and the current one last while it runs.
        value: the answer once completed.
        fail: why it failed, once failed.
        error: the run's error envelope, once failed.
        reason: why the run ended (``returned``, ``answered``, ``fail``,
            ``max_turns_exceeded``, ``memory_limit``, ``llm_error``, ...).
        first_time: the time of the first signal folded in.
        last_time: the time of the last signal folded in.
        rejected: requests rejected as busy (ids ``{run_id}/reject/{n}``).
        history: the conversation before this run (``RunInfo.history``), returned with
            the run's task and answer as the Step's ``messages``.
        keep_memory: the run is part of a conversation that keeps its programs' memory
            (``RunInfo.memory`` was given): every program's memory is written, the last
            one's too, and returned as the Step's ``memory``.
        summary: the summary of the history's older messages its task showed (made by
            the run's compaction, or reused), if any.
        compacting: the compaction under way while ``status == "compacting"``.
    """

    describes_step: ClassVar[bool] = True
    """The runtime copies the outcome's ``fail``, ``trace`` and ``signature`` to the Step."""

    run_id: str
    status: PtcStatus = "awaiting_llm"
    request_id: str | None = None
    judgment: bool = False
    system: str = ""
    expanded_prompt: str = ""
    messages: tuple[Message, ...] = ()
    ctx: dict[str, Any] = {}
    memory: dict[str, str] = {}
    functions: dict[str, str] = {}
    tool_names: tuple[str, ...] = ()
    tool_inputs: dict[str, str] = {}
    llm_call_id: str | None = None
    program_call_id: str | None = None
    usage_seen: bool = False
    usage: Usage = Usage()
    turns: tuple[PtcTurn, ...] = ()
    value: Any = None
    fail: StepFail | None = None
    error: ErrorEnvelope | None = None
    reason: str = ""
    first_time: str = ""
    last_time: str = ""
    rejected: int = 0
    history: tuple[Message, ...] = ()
    keep_memory: bool = False
    summary: Summary | None = None
    compacting: CompactionPlan | None = None

    @property
    def turn(self) -> int:
        """The number of the current (or last) turn; 0 before the first."""
        return len(self.turns)
