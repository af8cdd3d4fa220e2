"""The endpoint's pipe: each signal handed over by the bus as the run publishes it (a
listener, no reader task), encoded and sent by the endpoint's writer; a client is dropped
once ``buffer`` signals wait for its connection, or once a send has taken ``send_timeout``."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from ptcflow.runtime import Runtime
from ptcflow.serve import agui_endpoint
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .support import Response, call

pytestmark = pytest.mark.anyio

WORDS = " ".join(f"w{n}" for n in range(40))


def body() -> bytes:
    return json.dumps(
        {
            "threadId": "thread_1",
            "runId": "agui_run_1",
            "messages": [{"id": "m1", "role": "user", "content": "hello"}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    ).encode()


def spy_handles(app: Any) -> list[Any]:
    handles: list[Any] = []
    start = app.start

    def spy(rt: Runtime, request: Any, run_id: str) -> Any:
        handles.append(start(rt, request, run_id))
        return handles[-1]

    app.start = spy
    return handles


async def test_a_client_whose_connection_holds_more_than_buffer_signals_is_dropped() -> None:
    bus = SignalBus()
    stuck = anyio.Event()
    held: list[int] = []

    async def never_read(response: Response) -> None:
        await stuck.wait()  # the connection never takes the first chunk

    async with Runtime(llm=ScriptedLLM([WORDS]), bus=bus) as rt:
        app = agui_endpoint(rt, ReAct(stream=True), state=False, buffer=4, on_disconnect="continue")
        app.send_timeout = 60.0  # not the stall watch: the bound drops it
        handles = spy_handles(app)
        with anyio.fail_after(10):
            response = await call(app, body(), on_body=never_read)
            held.append(bus.statistics().subscribers)  # the endpoint stopped listening
            step = await handles[0].wait()
    assert step.ok and step.value == WORDS  # the run went on to its end
    assert held == [0]
    assert app.statistics.dropped == 1 and app.statistics.open == 0
    last = response.events()[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "client_too_slow"
    assert "more than 4 events behind" in last["message"]


async def test_a_client_that_takes_nothing_for_send_timeout_is_dropped() -> None:
    bus = SignalBus()
    stuck = anyio.Event()

    async def never_read(response: Response) -> None:
        await stuck.wait()

    async with Runtime(llm=ScriptedLLM([WORDS]), bus=bus) as rt:
        app = agui_endpoint(rt, ReAct(stream=True), state=False, on_disconnect="continue")
        app.send_timeout = 0.2  # the run's 40 words fit the buffer: the stall watch drops it
        with anyio.fail_after(10):
            response = await call(app, body(), on_body=never_read)
    assert app.statistics.dropped == 1 and app.statistics.open == 0
    assert bus.statistics().subscribers == 0
    last = response.events()[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "client_too_slow"
    assert "read nothing for 0.2 s" in last["message"]


async def test_a_bus_closed_mid_stream_ends_the_response_and_cancels_the_run() -> None:
    bus = SignalBus()

    async def close_the_bus(response: Response) -> None:
        bus.close()

    async with Runtime(llm=ScriptedLLM([WORDS], latency=30.0), bus=bus) as rt:
        app = agui_endpoint(rt, ReAct(stream=True), state=False)
        handles = spy_handles(app)
        with anyio.fail_after(10):
            response = await call(app, body(), on_body=close_the_bus)
            step = await handles[0].wait()
    assert response.closed and [e["type"] for e in response.events()] == ["RUN_STARTED"]
    assert step.reason == "cancelled"
    assert app.statistics.open == 0 and not app.handles


async def test_signals_published_while_the_connection_is_busy_wait_as_signals() -> None:
    """Nothing is encoded for a busy connection: the run's signals wait in the pipe, and
    go out encoded together (consecutive text chunks merged) once it is free."""
    bus = SignalBus()
    sizes: list[int] = []
    while_busy: list[int] = []

    async with Runtime(llm=ScriptedLLM([WORDS]), bus=bus) as rt:
        app = agui_endpoint(rt, ReAct(stream=True), state=False)
        handles = spy_handles(app)
        encode = app.stream

        def counting(request: Any, run_id: str) -> Any:
            stream = encode(request, run_id)
            feed_many = stream.feed_many

            def feed(signals: Any) -> bytes:
                sizes.append(len(signals))
                return feed_many(signals)

            stream.feed_many = feed  # type: ignore[method-assign]
            return stream

        app.stream = counting

        async def busy_once(response: Response) -> None:
            if len(response.chunks) == 1:
                await handles[0].wait()  # all the run's signals were published meanwhile
                while_busy.append(len(sizes))

        with anyio.fail_after(10):
            response = await call(app, body(), on_body=busy_once)
    assert while_busy == [1]  # nothing encoded while the connection was busy
    assert len(sizes) == 2  # then all that waited, at once
    contents = [e for e in response.events() if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(contents) == 1 and contents[0]["delta"] == WORDS
