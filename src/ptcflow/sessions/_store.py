"""A stored conversation's unit, :class:`Turn`; the :class:`SessionStore` protocol; the
in-memory store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ptcflow.sessions._errors import CorruptTurnError, SessionConflictError
from ptcflow.signals import Message, Summary

__all__ = ("MemoryStore", "SessionStore", "Turn", "decode_turn", "encode_messages", "encode_turn")

_encode = msgspec.json.Encoder().encode


class _Body(msgspec.Struct, frozen=True, kw_only=True):
    """A stored turn with a summary: ``{"messages": [...], "summary": {...}}`` (a turn
    without one is stored as the bare list of its messages, as before)."""

    messages: tuple[Message, ...]
    summary: Summary | None = None


_decode_body = msgspec.json.Decoder(tuple[Message, ...] | _Body).decode


class Turn(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One turn of a session: the messages one run added (its user message first).

    Attributes:
        index: the turn's number in its session (0, 1, 2, ...).
        run_id: the run that wrote it.
        messages: the messages it added, in order.
        summary: the summary of the conversation's older messages that the run's
            compaction made (``None``: it made none, or reused an earlier turn's); the
            next runs reuse the last one stored (docs/conversations.md, "Compaction").
    """

    index: int
    run_id: str
    messages: tuple[Message, ...]
    summary: Summary | None = None


def encode_messages(messages: Sequence[Message]) -> bytes:
    """The stored form of a turn's messages (JSON)."""
    return _encode(tuple(messages))


def encode_turn(turn: Turn) -> bytes:
    """The stored form of a turn (JSON): its messages, and its summary when it has one."""
    if turn.summary is None:
        return _encode(turn.messages)
    return _encode(_Body(messages=turn.messages, summary=turn.summary))


def decode_turn(session_id: str, index: int, run_id: str, body: bytes | str) -> Turn:
    """A stored row back as a :class:`Turn`.

    Raises:
        CorruptTurnError: ``body`` is not the JSON of a list of messages (or of an object
            with the messages and a summary).
    """
    try:
        decoded = _decode_body(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptTurnError(
            f"session {session_id!r}: stored turn {index} cannot be read ({exc}); nothing was "
            f"changed: fork the session before turn {index} to go on without it",
            session_id,
            index,
        ) from None
    if isinstance(decoded, _Body):
        return Turn(index=index, run_id=run_id, messages=decoded.messages, summary=decoded.summary)
    return Turn(index=index, run_id=run_id, messages=decoded)


def check_sequence(session_id: str, turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """``turns`` if they are numbered 0, 1, 2, ... with none missing.

    Raises:
        CorruptTurnError: a turn is missing (the first missing one is named).
    """
    for expected, turn in enumerate(turns):
        if turn.index != expected:
            raise CorruptTurnError(
                f"session {session_id!r}: turn {expected} is missing (the next stored turn is "
                f"{turn.index}); nothing was changed: fork the session before turn {expected} "
                "to go on",
                session_id,
                expected,
            )
    return tuple(turns)


def conflict(session_id: str, index: int) -> SessionConflictError:
    """The error of an append that lost the race for turn ``index``."""
    return SessionConflictError(
        f"session {session_id!r}: turn {index} was appended by another run first; this run's "
        "messages were not stored. Load the session again and retry the run",
        session_id,
        index,
    )


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions are kept. Every method is async and safe on asyncio and trio.

    A store appends whole turns: ``append`` writes one turn in one transaction and
    refuses a turn number that is taken (:class:`SessionConflictError`), so two writers
    never interleave or overwrite each other.
    """

    async def load(self, session_id: str) -> tuple[Turn, ...]:
        """The session's turns in order (empty for a session never written)."""
        ...

    async def append(self, session_id: str, turn: Turn) -> None:
        """Store ``turn`` (``turn.index`` must be the next number)."""
        ...

    async def write(self, session_id: str, turns: Sequence[Turn]) -> None:
        """Store the turns of a new session in one transaction (a fork)."""
        ...

    async def sessions(self) -> tuple[str, ...]:
        """The ids of the stored sessions, sorted."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Delete a session; ``False`` when there was none."""
        ...


class MemoryStore:
    """Sessions in this process's memory (the default store; lost when it exits).

    Example:
        >>> store = MemoryStore()
    """

    def __init__(self) -> None:
        self._data: dict[str, list[Turn]] = {}

    async def load(self, session_id: str) -> tuple[Turn, ...]:
        """The session's turns in order."""
        return tuple(self._data.get(session_id, ()))

    async def append(self, session_id: str, turn: Turn) -> None:
        """Store ``turn``.

        Raises:
            SessionConflictError: ``turn.index`` is not the next number.
        """
        turns = self._data.setdefault(session_id, [])
        if turn.index != len(turns):
            raise conflict(session_id, turn.index)
        turns.append(turn)

    async def write(self, session_id: str, turns: Sequence[Turn]) -> None:
        """Store a new session's turns.

        Raises:
            SessionConflictError: the session exists already.
        """
        if self._data.get(session_id):
            raise conflict(session_id, 0)
        self._data[session_id] = list(check_sequence(session_id, turns))

    async def sessions(self) -> tuple[str, ...]:
        """The ids of the stored sessions, sorted."""
        return tuple(sorted(k for k, v in self._data.items() if v))

    async def delete(self, session_id: str) -> bool:
        """Delete a session."""
        return bool(self._data.pop(session_id, None))
