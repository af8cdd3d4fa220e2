"""The data a :class:`~ptcflow.strategies.ReAct` run carries between signals.

Everything here is a frozen msgspec struct holding tuples of frozen structs: a new turn
shares the old messages and appends new ones, so history is never copied, and a state can
be encoded, compared and replayed.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ptcflow.sessions import CompactionPlan
from ptcflow.signals import Err, ErrorEnvelope, Message, Ok, Summary, ToolSpec, Usage

__all__ = ("PendingCall", "ReActState", "ReActStatus")

ReActStatus = Literal["idle", "compacting", "awaiting_llm", "awaiting_tool", "completed", "failed"]
"""Where a ReAct run is: waiting for a request, for the summary of its history
(:class:`~ptcflow.sessions.Compaction`), for the model, for tools, or done."""


class PendingCall(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One tool call of the current turn, in the order the model asked for it.

    Attributes:
        id: the directive id, the ``call_id`` of its signals and the ``tool_call_id`` of
            the tool message that answers it (the model's id, made unique in the run).
        name: the tool the model asked for.
        result: the result once ``ai.tool.result`` arrived, else ``None``.
    """

    id: str
    name: str
    result: Ok[Any] | Err | None = None


class ReActState(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The state of one ReAct run.

    Attributes:
        run_id: the run this state belongs to (directive ids derive from it).
        status: see :data:`ReActStatus`.
        request_id: the request being served.
        messages: the conversation so far (shared between states, never copied).
        tools: the tools the model may call.
        iteration: model calls made for the current request (1 during the first).
        llm_count: LLM directives emitted in the run (ids ``{run_id}/llm/{n}``).
        reject_count: busy rejections emitted in the run (ids ``{run_id}/reject/{n}``).
        llm_call_id: the LLM directive in flight, if any; signals of other calls are stale.
        usage_seen: whether ``ai.usage`` arrived for the call in flight.
        streamed: text accumulated from ``ai.llm.delta`` of the call in flight (fragments
            of an attempt that failed and was retried stay in it; the answer itself comes
            from the response).
        pending: the tool calls of the current turn, in call order.
        call_ids: every tool call id used in the run (kept unique).
        usage: token usage summed over the run.
        text: the last text the model produced (the answer once completed).
        value: the final answer's plain JSON value, once completed with an
            ``output_type`` (``None`` otherwise).
        error: why the run failed, once ``status == "failed"``.
        reason: why the run ended (``final_answer``, ``max_iterations``, ``llm_error``,
            ``cancelled``, ``invalid_input``, ...).
        opening: how many messages at the start of ``messages`` are the strategy's own
            (its system prompt), not the conversation's.
        earlier: the run's whole history when a compaction sent less of it (else empty):
            the conversation is ``earlier`` then the messages after the ``shown`` ones.
        shown: how many messages after ``opening`` stand for ``earlier`` (the compacted
            history: a summary and the kept messages).
        summary: the summary of the history the run sent (made or reused), if any.
        compacting: the compaction under way while ``status == "compacting"``.
        prompt: the user message waiting for the summary while compacting.
        handoff_tools: the names of the run's handoff tools (``ToolSpec.handoff`` set).
        handoff: the call id of the handoff tool call in flight (the model handed the
            conversation to another agent), else ``None``.
        agent: the agent that answered, once a handoff completed the run (``""``: this
            run's own agent).
    """

    run_id: str
    status: ReActStatus = "idle"
    request_id: str | None = None
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    iteration: int = 0
    llm_count: int = 0
    reject_count: int = 0
    llm_call_id: str | None = None
    usage_seen: bool = False
    streamed: str = ""
    pending: tuple[PendingCall, ...] = ()
    call_ids: tuple[str, ...] = ()
    usage: Usage = Usage()
    text: str = ""
    value: Any = None
    error: ErrorEnvelope | None = None
    reason: str = ""
    opening: int = 0
    earlier: tuple[Message, ...] = ()
    shown: int = 0
    summary: Summary | None = None
    compacting: CompactionPlan | None = None
    prompt: str = ""
    handoff_tools: tuple[str, ...] = ()
    handoff: str | None = None
    agent: str = ""

    @property
    def busy(self) -> bool:
        """True while a model call or tool calls are in flight."""
        return self.status in _BUSY

    @property
    def conversation(self) -> tuple[Message, ...]:
        """The conversation so far: the run's whole history (not what a compaction sent
        of it), then the run's own messages; the system prompt left out."""
        if self.earlier or self.shown:
            return self.earlier + self.messages[self.opening + self.shown :]
        return self.messages[self.opening :]


_BUSY = frozenset(("compacting", "awaiting_llm", "awaiting_tool"))
