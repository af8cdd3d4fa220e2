"""A PostgreSQL server for the session tests (started once, stopped at the end)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .pg import PgServer, find_bin


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A running server in a temporary directory; skips the test when none can run."""
    bin_dir, why = find_bin()
    if bin_dir is None:
        pytest.skip(why)
    server = PgServer(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> str:
    """The server's DSN, with the sessions table emptied (and the server up again)."""
    import psycopg

    try:
        conn = psycopg.connect(pg_server.dsn, connect_timeout=2)
    except psycopg.OperationalError:
        pg_server.start()  # a test stopped it
        conn = psycopg.connect(pg_server.dsn, connect_timeout=5)
    with conn:
        conn.execute("DROP TABLE IF EXISTS ptcflow_session_turns")
    return pg_server.dsn
