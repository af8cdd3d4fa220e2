"""A PTC-Lisp SubAgent in a conversation: earlier turns in its task message, compactly,
and its run as two messages (the task, the answer as JSON)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ptcflow.signals import Message, ProgramMemory, Summary

__all__ = ("conversation_of", "with_earlier_turns", "with_kept_memory")

EARLIER_MESSAGES: Final = 20
"""The last messages of the history shown in the task message (older ones are counted)."""
MESSAGE_CHARS: Final = 400
"""Characters kept of each message shown."""

_encode = msgspec.json.Encoder().encode


def with_earlier_turns(
    history: tuple[Message, ...], task: str, summary: Summary | None = None
) -> str:
    """``task`` after the history's last questions and answers, one line each (tool calls
    and results left out: a program reads data from its tools, not from old results);
    ``summary`` (a compaction's, standing for the messages before ``history``) first, whole.

    Example:
        >>> print(with_earlier_turns((Message(role="user", content="2+3?"),
        ...     Message(role="assistant", content="5")), "Double it."))
        ## Earlier in this conversation
        user: 2+3?
        assistant: 5
        <BLANKLINE>
        ## Now
        Double it.
    """
    shown = [m for m in history if m.role in ("user", "assistant") and m.content]
    if not shown and summary is None:
        return task
    lines = ["## Earlier in this conversation"]
    if summary is not None:
        lines.append(f"(a summary of the first {summary.covers} messages) {summary.text}")
    if len(shown) > EARLIER_MESSAGES:
        lines.append(f"({len(shown) - EARLIER_MESSAGES} earlier messages left out)")
        shown = shown[-EARLIER_MESSAGES:]
    for m in shown:
        text = " ".join(m.content.split())
        if len(text) > MESSAGE_CHARS:
            text = text[:MESSAGE_CHARS] + " ..."
        lines.append(f"{m.role}: {text}")
    return "\n".join([*lines, "", "## Now", task])


def conversation_of(
    history: tuple[Message, ...], task: str, completed: bool, value: Any
) -> tuple[Message, ...]:
    """The conversation after a PTC run: the history, the task, and (when it completed)
    the returned value as JSON."""
    if not task:
        return history
    asked = (*history, Message(role="user", content=task))
    if not completed:
        return asked
    try:
        answer = _encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        answer = repr(value)
    return (*asked, Message(role="assistant", content=answer))


def with_kept_memory(memory: ProgramMemory, task: str) -> str:
    """``task`` after the names the conversation's earlier programs kept (their values
    stay in memory: a program reads them by name).

    Example:
        >>> print(with_kept_memory(ProgramMemory(values={"total": "42"}), "Double it."))
        ## Kept in memory by earlier programs (read them by name)
        total
        <BLANKLINE>
        Double it.
    """
    lines = ["## Kept in memory by earlier programs (read them by name)"]
    if memory.values:
        lines.append(", ".join(sorted(memory.values)))
    if memory.functions:
        lines.append("functions: " + ", ".join(sorted(memory.functions)))
    return "\n".join([*lines, "", task])
