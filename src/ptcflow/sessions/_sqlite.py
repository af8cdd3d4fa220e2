"""Sessions in a SQLite file: :class:`SQLiteStore` (stdlib ``sqlite3`` in a worker thread)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ptcflow.sessions._errors import StoreUnavailableError
from ptcflow.sessions._store import Turn, check_sequence, conflict, decode_turn, encode_turn

__all__ = ("SQLiteStore",)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ptcflow_session_turns (
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (session_id, turn)
) WITHOUT ROWID
"""


class SQLiteStore:
    """Sessions in a SQLite file: no server, both anyio backends.

    One connection (WAL journal, ``synchronous=NORMAL``) is used by one worker thread at a
    time (``anyio.to_thread``, behind a thread lock), so the event loop never blocks on
    the disk. One row per turn, primary key ``(session_id, turn)``: appending a turn is
    one ``INSERT`` in one transaction, whatever the session's length, and a turn number
    already taken (another process appended first) raises
    :class:`~ptcflow.sessions.SessionConflictError`.

    Args:
        path: the database file (created with its table when missing).

    Example:
        >>> store = SQLiteStore(":memory:")
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._conn: sqlite3.Connection | None = None
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def job() -> T:
            with self._guard:
                try:
                    return fn(self._connect())
                except sqlite3.OperationalError as exc:
                    raise StoreUnavailableError(f"{self!r}: {exc}", "") from exc

        return await anyio.to_thread.run_sync(job)

    async def load(self, session_id: str) -> tuple[Turn, ...]:
        """The session's turns in order.

        Raises:
            CorruptTurnError: a stored turn cannot be read, or one is missing.
        """

        def q(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(
                "SELECT turn, run_id, body FROM ptcflow_session_turns WHERE session_id = ? "
                "ORDER BY turn",
                (session_id,),
            ).fetchall()

        rows = await self._call(q)
        return check_sequence(session_id, [decode_turn(session_id, *row) for row in rows])

    async def append(self, session_id: str, turn: Turn) -> None:
        """Store ``turn`` in one transaction.

        Raises:
            SessionConflictError: turn ``turn.index`` is stored already.
        """
        body = encode_turn(turn)

        def q(conn: sqlite3.Connection) -> bool:
            try:
                conn.execute(
                    "INSERT INTO ptcflow_session_turns VALUES (?, ?, ?, ?)",
                    (session_id, turn.index, turn.run_id, body),
                )
            except sqlite3.IntegrityError:
                return False
            return True

        if not await self._call(q):
            raise conflict(session_id, turn.index)

    async def write(self, session_id: str, turns: Sequence[Turn]) -> None:
        """Store a new session's turns in one transaction.

        Raises:
            SessionConflictError: the session exists already.
        """
        rows = [(session_id, t.index, t.run_id, encode_turn(t)) for t in turns]
        check_sequence(session_id, turns)

        def q(conn: sqlite3.Connection) -> bool:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    taken = conn.execute(
                        "SELECT 1 FROM ptcflow_session_turns WHERE session_id = ? LIMIT 1",
                        (session_id,),
                    ).fetchone()
                    if taken is None:
                        conn.executemany(
                            "INSERT INTO ptcflow_session_turns VALUES (?, ?, ?, ?)", rows
                        )
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.IntegrityError:
                return False
            return taken is None

        if not await self._call(q):
            raise conflict(session_id, 0)

    async def sessions(self) -> tuple[str, ...]:
        """The ids of the stored sessions, sorted."""

        def q(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(
                "SELECT DISTINCT session_id FROM ptcflow_session_turns ORDER BY session_id"
            ).fetchall()

        return tuple(row[0] for row in await self._call(q))

    async def delete(self, session_id: str) -> bool:
        """Delete a session (one transaction)."""

        def q(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "DELETE FROM ptcflow_session_turns WHERE session_id = ?", (session_id,)
            )
            return cur.rowcount > 0

        return await self._call(q)

    def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._guard:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
