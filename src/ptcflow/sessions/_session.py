"""A conversation kept in a store: :class:`Session`."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from ptcflow.errors import UsageError
from ptcflow.sessions._store import MemoryStore, SessionStore, Turn, conversation_of
from ptcflow.signals import Compaction, Message, ProgramMemory, Signal, Summary

__all__ = ("Session", "last_summary")

_LOCKS: weakref.WeakValueDictionary[tuple[int, str], anyio.Lock] = weakref.WeakValueDictionary()
"""One lock per (store, session id) in this process, kept while someone holds it."""


class Session:
    """A conversation kept in a store, continued by every run given it.

    ``rt.run(strategy, input, session=session)`` (or ``agent.run(..., session=session)``)
    loads the session's messages, runs with them as the history, and appends the run's
    own messages as one turn (one row, one transaction). Runs on one session in this
    process take turns (a lock per session id and store); a run in another process that
    appended first makes this one's append fail with
    :class:`~ptcflow.sessions.SessionConflictError` (nothing is interleaved or lost). A run
    that fails stores nothing: the session stays as it was, and the run can be retried.

    Args:
        session_id: the conversation's id (any non-empty string; a new id starts an empty
            conversation).
        store: where it is kept (default: a new :class:`~ptcflow.sessions.MemoryStore`).
        journal: keep each run's journal (its signals) with its turn, so that
            :func:`ptcflow.runtime.replay_session` can replay the session with no model
            and no tool (default: true; false keeps messages, memory and summaries only).
        compaction: the :class:`~ptcflow.sessions.Compaction` of every run on it (a run's
            own ``compaction=`` wins): what is sent shrinks, what is stored stays whole.
            A summary a run makes is stored with its turn and reused by the next runs.

    Example:
        >>> from ptcflow import Session
        >>> Session("user-42").session_id
        'user-42'
    """

    __slots__ = ("compaction", "journal", "session_id", "store")

    def __init__(
        self,
        session_id: str,
        store: SessionStore | None = None,
        *,
        journal: bool = True,
        compaction: Compaction | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise UsageError(f"a session id must be a non-empty string, got {session_id!r}")
        if store is not None and not isinstance(store, SessionStore):
            raise UsageError(
                f"store must be a SessionStore (MemoryStore, SQLiteStore, PostgresStore), "
                f"got {type(store).__name__}"
            )
        if compaction is not None and not isinstance(compaction, Compaction):
            raise UsageError(
                "compaction must be a ptcflow.sessions.Compaction(max_messages=..., ...), got "
                f"{type(compaction).__name__}"
            )
        self.session_id = session_id
        self.store: SessionStore = MemoryStore() if store is None else store
        self.journal = bool(journal)
        self.compaction = compaction

    def __repr__(self) -> str:
        extra = "" if self.compaction is None else f", compaction={self.compaction!r}"
        return f"Session({self.session_id!r}, store={self.store!r}{extra})"

    async def memory(self) -> ProgramMemory:
        """What the session's SubAgent programs kept so far (the next run's starting
        memory; empty when none kept any)."""
        return conversation_of(await self.turns())[1]

    async def turns(self, *, journals: bool = False) -> tuple[Turn, ...]:
        """The stored turns, in order (empty for a new session); with ``journals``, each
        with its run's journal.

        Raises:
            CorruptTurnError: a stored turn cannot be read.
            StoreUnavailableError: the store cannot be reached.
        """
        return await self.store.load(self.session_id, journals=journals)

    async def messages(self) -> tuple[Message, ...]:
        """Every stored message, turn after turn (what the next run gets as its history)."""
        return tuple(m for turn in await self.turns() for m in turn.messages)

    async def summary(self) -> Summary | None:
        """The last summary a compaction stored in this session (what the next run
        reuses or extends), or ``None``."""
        return last_summary(await self.turns())

    async def fork(self, session_id: str, at_turn: int) -> Session:
        """A new session in the same store holding turns ``0..at_turn`` of this one
        (their messages, memory, summaries and journals).

        Raises:
            UsageError: ``at_turn`` is not a stored turn.
            SessionConflictError: ``session_id`` exists already.
        """
        turns = await self.turns(journals=True)
        if not isinstance(at_turn, int) or not 0 <= at_turn < len(turns):
            raise UsageError(
                f"session {self.session_id!r} has turns 0..{len(turns) - 1}; "
                f"cannot fork at turn {at_turn!r}"
            )
        fork = Session(session_id, self.store, journal=self.journal, compaction=self.compaction)
        await self.store.write(session_id, turns[: at_turn + 1])
        return fork

    async def delete(self) -> bool:
        """Delete the stored session; ``False`` when nothing was stored."""
        return await self.store.delete(self.session_id)

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[tuple[Turn, ...]]:
        """Hold this session's lock (in this process) and yield its turns: what a run on
        the session does around itself, then :meth:`append`."""
        key = (id(self.store), self.session_id)
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = anyio.Lock()
        async with lock:
            yield await self.turns()

    async def append(
        self,
        index: int,
        run_id: str,
        messages: tuple[Message, ...],
        *,
        memory: ProgramMemory | None = None,
        summary: Summary | None = None,
        journal: tuple[Signal, ...] = (),
    ) -> Turn:
        """Store ``messages`` as turn ``index`` (written by ``run_id``), with what its
        programs kept (``memory``), the summary its compaction made (``summary``, if any)
        and its run's ``journal``.

        Raises:
            SessionConflictError: turn ``index`` was stored by someone else.
            StoreUnavailableError: the store cannot be reached.
        """
        turn = Turn(
            index=index,
            run_id=run_id,
            messages=messages,
            memory=memory,
            summary=summary,
            journal=journal,
        )
        await self.store.append(self.session_id, turn)
        return turn


def last_summary(turns: tuple[Turn, ...]) -> Summary | None:
    """The summary of the last turn that stored one, or ``None``."""
    for turn in reversed(turns):
        if turn.summary is not None:
            return turn.summary
    return None
