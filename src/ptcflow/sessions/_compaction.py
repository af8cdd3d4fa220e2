"""Compaction, the pure part: which messages of a history are sent, and the summarizing
call's messages. :func:`plan_compaction` decides; a strategy performs (it emits the
``LLMGenerate``) and :func:`compacted_history` builds what it then sends.

Nothing here does I/O, reads a clock or draws random numbers: strategies call it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals import Compaction, Message, Summary

__all__ = (
    "SUMMARY_PROMPT",
    "CompactionPlan",
    "compacted_history",
    "estimate_tokens",
    "history_digest",
    "plan_compaction",
    "summary_message",
)

SUMMARY_PROMPT: Final = (
    "You summarize the earlier part of a conversation between a user and an assistant, so "
    "the assistant can go on without it. Keep every fact, decision, name, number, date, "
    "preference and open question the conversation established, and what the tools "
    "returned that still matters; drop greetings and repetition. When a previous summary is "
    "given, merge it with the new messages into one summary. Write plain text, at most 300 "
    "words, and nothing but the summary."
)
"""The default instructions of the summarizing call (``Compaction.summary_prompt``)."""

_encode = msgspec.json.Encoder().encode


class CompactionPlan(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What a run sends in place of its history (made by :func:`plan_compaction`).

    Attributes:
        kept: the last messages, sent word for word.
        start: where ``kept`` starts in the history (a new summary covers ``0..start``).
        pinned: the history's system messages before ``start``, sent first (instructions
            are never summarized away).
        summary: the summary sent before ``kept`` with no model call (an earlier one,
            still covering ``0..start``); ``None`` when there is none or a new one is due.
        request: the messages of the summarizing call (empty: no call is due).
        digest: :func:`history_digest` of ``history[:start]`` (for the new summary).
        base: where the messages the summarizing call folds in start (an earlier
            summary, given to the call, covers those before).
    """

    kept: tuple[Message, ...]
    start: int
    pinned: tuple[Message, ...] = ()
    summary: Summary | None = None
    request: tuple[Message, ...] = ()
    digest: str = ""
    base: int = 0

    @property
    def needs_summary(self) -> bool:
        """True when a summarizing model call must come first."""
        return bool(self.request)


def message_tokens(message: Message) -> int:
    """The estimated tokens of one message: 4, plus one per 4 characters of its text,
    tool names, call arguments (as JSON) and tool call ids."""
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.id) + len(_encode(call.input))
    if message.tool_call_id:
        chars += len(message.tool_call_id)
    return 4 + (chars + 3) // 4


def estimate_tokens(messages: Sequence[Message]) -> int:
    """The estimated tokens of ``messages`` (see :func:`message_tokens`): a rule of thumb
    for English text (about 4 characters a token), not a tokenizer.

    Example:
        >>> estimate_tokens([Message(role="user", content="What is 2 + 3?")])
        8
    """
    return sum(message_tokens(m) for m in messages)


def history_digest(messages: Sequence[Message]) -> str:
    """SHA-256 (hex) of the JSON of ``messages``: what a :class:`Summary` covers."""
    return hashlib.sha256(_encode(tuple(messages))).hexdigest()


def summary_message(summary: Summary) -> Message:
    """The message that stands for the summarized messages in what is sent (a user
    message with a header, never a system one: the summary is the conversation's
    content, not the agent's instructions)."""
    return Message(
        role="user",
        content=(
            f"[Summary of the first {summary.covers} messages of this conversation, "
            f"which are not shown]\n{summary.text}"
        ),
    )


def _over(messages: Sequence[Message], compaction: Compaction) -> bool:
    limit = compaction.max_messages
    if limit is not None and len(messages) > limit:
        return True
    tokens = compaction.max_tokens
    return tokens is not None and estimate_tokens(messages) > tokens


def _cut(history: Sequence[Message], base: int, compaction: Compaction) -> int:
    """Where the kept messages start: at most ``keep_last`` of them, within
    ``max_tokens``, never before ``base``, never at a tool result."""
    keep = compaction.keep_last
    assert keep is not None  # set by Compaction itself
    budget = compaction.max_tokens
    cut = len(history)
    used = 0
    while cut > base and len(history) - cut < keep:
        if budget is not None:
            cost = message_tokens(history[cut - 1])
            if used + cost > budget:
                break
            used += cost
        cut -= 1
    while cut < len(history) and history[cut].role == "tool":
        cut += 1  # its call is left out: so is the result
    return cut


def plan_compaction(
    history: Sequence[Message], compaction: Compaction, summary: Summary | None = None
) -> CompactionPlan | None:
    """What to send instead of ``history`` under ``compaction``; ``None``: send it as is.

    ``summary`` (an earlier run's, with ``summarize=True``) is used when the history starts
    with the messages it covers (same digest): while the messages after it stay under the
    limit, the plan sends it and them with no model call; past the limit, the summarizing
    call extends it with the messages that fell out since (not the whole history).

    A kept tool result always has its call kept (the cut never falls between an assistant
    message and its results); messages keep their order; system messages of the left-out
    part are kept (``pinned``).

    Raises:
        UsageError: ``compaction`` is not a :class:`Compaction`.

    Example:
        >>> from ptcflow.signals import Compaction
        >>> history = [Message(role="user", content=str(i)) for i in range(5)]
        >>> plan = plan_compaction(history, Compaction(max_messages=4, keep_last=2))
        >>> [m.content for m in plan.kept], plan.needs_summary
        (['3', '4'], False)
    """
    if not isinstance(compaction, Compaction):
        raise UsageError(
            f"compaction must be a ptcflow.sessions.Compaction, got {type(compaction).__name__}"
        )
    base = 0
    prior: Summary | None = None
    if (
        compaction.summarize
        and summary is not None
        and 0 < summary.covers <= len(history)
        and history_digest(history[: summary.covers]) == summary.digest
    ):
        base, prior = summary.covers, summary
    rest = history[base:]
    if not _over(rest, compaction):
        if prior is None:
            return None
        pinned = tuple(m for m in history[:base] if m.role == "system")
        return CompactionPlan(kept=tuple(rest), start=base, pinned=pinned, summary=prior)
    cut = _cut(history, base, compaction)
    kept = tuple(history[cut:])
    pinned = tuple(m for m in history[:cut] if m.role == "system")
    if not compaction.summarize:
        return CompactionPlan(kept=kept, start=cut, pinned=pinned)
    dropped = [m for m in history[base:cut] if m.role != "system"]
    if not dropped and prior is not None:  # nothing new fell out: the summary still holds
        return CompactionPlan(kept=kept, start=cut, pinned=pinned, summary=prior)
    request = (
        Message(role="system", content=compaction.summary_prompt or SUMMARY_PROMPT),
        Message(role="user", content=_transcript(prior, dropped)),
    )
    return CompactionPlan(
        kept=kept,
        start=cut,
        pinned=pinned,
        request=request,
        digest=history_digest(history[:cut]),
        base=base,
    )


def compacted_history(plan: CompactionPlan, summary: Summary | None) -> tuple[Message, ...]:
    """What is sent in place of the history: the pinned system messages, the summary
    (``summary``, or the plan's own when ``None``), then the kept messages."""
    summary = summary or plan.summary
    head = plan.pinned + ((summary_message(summary),) if summary is not None else ())
    return head + plan.kept if head else plan.kept


def _transcript(prior: Summary | None, messages: Sequence[Message]) -> str:
    """The user message of the summarizing call: the earlier summary, then the messages
    to fold in, one paragraph each."""
    parts: list[str] = []
    if prior is not None:
        parts += ["## The summary so far", prior.text, ""]
    parts.append("## The messages to summarize")
    for m in messages:
        if m.role == "tool":
            parts.append(f"tool {m.name or ''} ({m.tool_call_id}) returned: {m.content}")
            continue
        if m.content:
            parts.append(f"{m.role}: {m.content}")
        for call in m.tool_calls:
            parts.append(f"{m.role} called {call.name}({_encode(call.input).decode()})")
    return "\n".join(parts)
