"""Sessions in PostgreSQL: :class:`PostgresStore` (psycopg 3, the ``postgres`` extra)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ptcflow.errors import UsageError
from ptcflow.sessions._errors import StoreUnavailableError
from ptcflow.sessions._store import Turn, check_sequence, conflict, decode_turn, encode_turn

__all__ = ("PostgresStore",)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ptcflow_session_turns (
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (session_id, turn)
)
"""


class PostgresStore:
    """Sessions in PostgreSQL, shared by every process that opens the same database.

    psycopg 3's *sync* API runs in a worker thread (``anyio.to_thread``, one at a time on
    one connection): its async API needs asyncio's loop (under trio,
    ``AsyncConnection.connect`` raises ``RuntimeError: no running event loop``, psycopg
    3.3.9), and the store must work on trio too. One row per turn, primary key ``(session_id, turn)``: an append is one
    ``INSERT`` in one transaction; a turn number already taken by another replica raises
    :class:`~ptcflow.sessions.SessionConflictError` (optimistic: no lock is held while a
    run thinks). A broken connection (the server stopped or restarted) raises
    :class:`~ptcflow.sessions.StoreUnavailableError`; the next call connects again.

    Args:
        dsn: a libpq connection string or URL (``postgresql://user@host:5432/db``). It is
            never put in an error message or a ``repr``.
        connect_timeout: seconds to wait for a connection.

    Raises:
        UsageError: psycopg is not installed (``pip install 'ptcflow[postgres]'``).
    """

    def __init__(self, dsn: str, *, connect_timeout: float = 5.0) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:  # pragma: no cover - the extra is installed in tests
            raise UsageError(
                "PostgresStore needs psycopg 3: pip install 'ptcflow[postgres]'"
            ) from None
        self._dsn = dsn
        self._timeout = connect_timeout
        self._conn: Any = None
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        return "PostgresStore(<dsn>)"

    def _connect(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=max(1, round(self._timeout))
            )
            conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    async def _call(self, session_id: str, fn: Callable[[Any], T]) -> T:
        import psycopg

        def job() -> T:
            with self._guard:
                try:
                    return fn(self._connect())
                except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                    if self._conn is not None:
                        self._conn.close()
                        self._conn = None
                    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise StoreUnavailableError(
                        f"PostgreSQL is unavailable ({type(exc).__name__}: {reason}); what was "
                        "stored before is kept: retry once the server is back",
                        session_id,
                    ) from None

        return await anyio.to_thread.run_sync(job)

    async def load(self, session_id: str) -> tuple[Turn, ...]:
        """The session's turns in order.

        Raises:
            CorruptTurnError: a stored turn cannot be read, or one is missing.
            StoreUnavailableError: the server cannot be reached.
        """
        rows = await self._call(
            session_id,
            lambda conn: conn.execute(
                "SELECT turn, run_id, body FROM ptcflow_session_turns WHERE session_id = %s "
                "ORDER BY turn",
                (session_id,),
            ).fetchall(),
        )
        return check_sequence(session_id, [decode_turn(session_id, *row) for row in rows])

    async def append(self, session_id: str, turn: Turn) -> None:
        """Store ``turn`` in one transaction.

        Raises:
            SessionConflictError: turn ``turn.index`` is stored already.
            StoreUnavailableError: the server cannot be reached (nothing was stored).
        """
        import psycopg

        body = encode_turn(turn)

        def q(conn: Any) -> bool:
            try:
                conn.execute(
                    "INSERT INTO ptcflow_session_turns VALUES (%s, %s, %s, %s)",
                    (session_id, turn.index, turn.run_id, body),
                )
            except psycopg.errors.UniqueViolation:
                return False
            return True

        if not await self._call(session_id, q):
            raise conflict(session_id, turn.index)

    async def write(self, session_id: str, turns: Sequence[Turn]) -> None:
        """Store a new session's turns in one transaction.

        Raises:
            SessionConflictError: the session exists already.
        """
        import psycopg

        check_sequence(session_id, turns)
        rows = [(session_id, t.index, t.run_id, encode_turn(t)) for t in turns]

        def q(conn: Any) -> bool:
            try:
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute(
                        "SELECT 1 FROM ptcflow_session_turns WHERE session_id = %s LIMIT 1",
                        (session_id,),
                    )
                    if cur.fetchone() is not None:
                        return False
                    cur.executemany(
                        "INSERT INTO ptcflow_session_turns VALUES (%s, %s, %s, %s)", rows
                    )
            except psycopg.errors.UniqueViolation:
                return False
            return True

        if not await self._call(session_id, q):
            raise conflict(session_id, 0)

    async def sessions(self) -> tuple[str, ...]:
        """The ids of the stored sessions, sorted."""
        rows = await self._call(
            "",
            lambda conn: conn.execute(
                "SELECT DISTINCT session_id FROM ptcflow_session_turns ORDER BY session_id"
            ).fetchall(),
        )
        return tuple(row[0] for row in rows)

    async def delete(self, session_id: str) -> bool:
        """Delete a session (one transaction)."""
        cur = await self._call(
            session_id,
            lambda conn: conn.execute(
                "DELETE FROM ptcflow_session_turns WHERE session_id = %s", (session_id,)
            ),
        )
        return bool(cur.rowcount)

    def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._guard:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
