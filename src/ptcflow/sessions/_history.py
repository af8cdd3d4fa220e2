"""A conversation's history, checked: :func:`check_history`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals import Message

__all__ = ("check_history",)


def check_history(history: Iterable[Any]) -> tuple[Message, ...]:
    """Return ``history`` as a tuple of :class:`~ptcflow.signals.Message`, checked.

    Items may be ``Message`` structs or mappings of their fields (a history read back
    from JSON). Every tool call of an assistant message must be answered by a ``tool``
    message naming it (``tool_call_id``) before the next user or assistant message, and
    every tool message must answer such a call: a provider refuses a conversation that
    breaks either rule, so it is refused here, before any model call, rather than repaired
    by guessing.

    Raises:
        UsageError: an item is not a message, or a tool call has no result (or a result
            no call), naming its position.

    Example:
        >>> from ptcflow.signals import Message
        >>> check_history([{"role": "user", "content": "hi"}])
        (Message(role='user', content='hi', tool_calls=(), tool_call_id=None, name=None),)
    """
    if isinstance(history, str | bytes | Mapping):
        raise UsageError(
            f"history must be a sequence of messages (step.messages), got {type(history).__name__}"
        )
    out: list[Message] = []
    for i, item in enumerate(history):
        if isinstance(item, Message):
            out.append(item)
            continue
        try:
            out.append(msgspec.convert(item, Message))
        except msgspec.ValidationError as exc:
            raise UsageError(f"history[{i}] is not a message: {exc}") from None
    open_calls: dict[str, int] = {}
    for i, message in enumerate(out):
        if message.role == "tool":
            call_id = message.tool_call_id
            if call_id is None or call_id not in open_calls:
                raise UsageError(
                    f"history[{i}] is a tool result for {call_id!r}, which no earlier assistant "
                    "message of the history called (or which was answered already)"
                )
            del open_calls[call_id]
            continue
        if open_calls:
            _unanswered(open_calls, out)
        for call in message.tool_calls:
            open_calls[call.id] = i
    if open_calls:
        _unanswered(open_calls, out)
    return tuple(out)


def _unanswered(open_calls: Mapping[str, int], messages: list[Message]) -> None:
    call_id, at = next(iter(open_calls.items()))
    name = next(c.name for c in messages[at].tool_calls if c.id == call_id)
    raise UsageError(
        f"history[{at}] calls tool {name!r} (call {call_id!r}) but no tool message answers it: "
        "a history must hold a result for every tool call (pass the whole step.messages, or "
        "drop the unanswered assistant message)"
    )
