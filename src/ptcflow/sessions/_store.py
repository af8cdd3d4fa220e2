"""A stored conversation's unit, :class:`Turn`; the :class:`SessionStore` protocol; the
in-memory store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ptcflow.sessions._errors import CorruptTurnError, SessionConflictError
from ptcflow.signals import (
    REQUEST_STARTED,
    JournalError,
    Message,
    ProgramMemory,
    RequestStartedData,
    Signal,
    Summary,
    decode_signal,
    encode_signal,
)

__all__ = (
    "MemoryStore",
    "SessionStore",
    "Turn",
    "conversation_of",
    "decode_turn",
    "encode_body",
    "encode_journal",
    "turn_journal",
)

_encode = msgspec.json.Encoder().encode
_replace = msgspec.structs.replace


class _Body(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """The stored form of a turn (its ``body`` column): messages, programs' memory and the
    summary its compaction made."""

    messages: tuple[Message, ...]
    memory: ProgramMemory | None = None
    summary: Summary | None = None


_decode_body = msgspec.json.Decoder(_Body | tuple[Message, ...]).decode
"""A body is a ``_Body`` object, or (as first stored) the list of the turn's messages."""


class Turn(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One turn of a session: what one run added (its user message first).

    Attributes:
        index: the turn's number in its session (0, 1, 2, ...).
        run_id: the run that wrote it.
        messages: the messages it added, in order.
        memory: what a SubAgent's programs kept by the end of the run (PTC-Lisp text per
            name, as data), the next run's starting memory; ``None`` for a run that keeps
            none (ReAct, the JSON mode).
        summary: the summary of the conversation's older messages that the run's
            compaction made (``None``: it made none, or reused an earlier turn's); the
            next runs reuse the last one stored (docs/conversations.md, "Compaction").
        journal: the run's signals (its own, in ``seq`` order), for
            :func:`ptcflow.runtime.replay_session`; loaded only when asked for
            (``store.load(id, journals=True)``), empty for a session kept without them.
            Its ``ai.request.started`` leaves out the history and memory the run was
            given: they are the earlier turns', put back when it is replayed.
    """

    index: int
    run_id: str
    messages: tuple[Message, ...]
    memory: ProgramMemory | None = None
    summary: Summary | None = None
    journal: tuple[Signal, ...] = ()


def encode_body(turn: Turn) -> bytes:
    """The stored form of a turn's messages, memory and summary (JSON)."""
    return _encode(_Body(messages=turn.messages, memory=turn.memory, summary=turn.summary))


def encode_journal(turn: Turn) -> bytes | None:
    """The stored form of a turn's journal (JSON lines), ``None`` when it has none."""
    if not turn.journal:
        return None
    return b"".join(encode_signal(s) + b"\n" for s in turn.journal)


def _corrupt(session_id: str, index: int, what: str) -> CorruptTurnError:
    return CorruptTurnError(
        f"session {session_id!r}: stored turn {index} cannot be read ({what}); nothing was "
        f"changed: fork the session before turn {index} to go on without it",
        session_id,
        index,
    )


def decode_turn(
    session_id: str,
    index: int,
    run_id: str,
    body: bytes | str,
    journal: bytes | str | None = None,
) -> Turn:
    """A stored row back as a :class:`Turn`.

    Raises:
        CorruptTurnError: ``body`` is not the JSON of a turn (an object with its messages,
            memory and summary, or the list of its messages), or ``journal`` not JSON lines
            of signals.
    """
    try:
        decoded = _decode_body(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise _corrupt(session_id, index, str(exc)) from None
    signals: tuple[Signal, ...] = ()
    if journal:
        text = journal.encode() if isinstance(journal, str) else bytes(journal)
        try:
            signals = tuple(
                decode_signal(line, lineno=n)
                for n, line in enumerate(text.splitlines(), 1)
                if line.strip()
            )
        except (JournalError, ValueError) as exc:
            raise _corrupt(session_id, index, f"its journal: {exc}") from None
    if isinstance(decoded, _Body):
        return Turn(
            index=index,
            run_id=run_id,
            messages=decoded.messages,
            memory=decoded.memory,
            summary=decoded.summary,
            journal=signals,
        )
    return Turn(index=index, run_id=run_id, messages=decoded, journal=signals)


def conversation_of(turns: Sequence[Turn]) -> tuple[tuple[Message, ...], ProgramMemory]:
    """What a run continuing ``turns`` is given: their messages, and the memory the last
    turn that kept one left (empty when none did)."""
    memory = next((t.memory for t in reversed(turns) if t.memory is not None), None)
    history = tuple(m for turn in turns for m in turn.messages)
    return history, ProgramMemory() if memory is None else memory


def turn_journal(signals: Sequence[Signal], run_id: str) -> tuple[Signal, ...]:
    """The journal a turn stores: the run's own signals (not its child runs'), its
    ``ai.request.started`` without the history and memory it was given (the earlier
    turns hold them), so a turn's journal grows with the turn, not the session."""
    out: list[Signal] = []
    for signal in signals:
        if signal.run_id != run_id:
            continue
        data = signal.data
        if signal.type == REQUEST_STARTED and isinstance(data, RequestStartedData):
            data = msgspec.structs.replace(
                data, history=(), memory=None if data.memory is None else ProgramMemory()
            )
            signal = msgspec.structs.replace(signal, data=data)
        out.append(signal)
    return tuple(out)


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

    async def load(self, session_id: str, *, journals: bool = False) -> tuple[Turn, ...]:
        """The session's turns in order (empty for a session never written); their
        journals too when ``journals`` is true."""
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

    async def load(self, session_id: str, *, journals: bool = False) -> tuple[Turn, ...]:
        """The session's turns in order (with their journals when ``journals``)."""
        turns = tuple(self._data.get(session_id, ()))
        if journals:
            return turns
        return tuple(t if not t.journal else _replace(t, journal=()) for t in turns)

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
