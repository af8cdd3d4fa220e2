"""A tiny scripted HTTP/1.1 server on 127.0.0.1 for wire-protocol tests (anyio + h11).

It runs inside the test's event loop (asyncio or trio), binds an ephemeral port before
``open_wire_server`` yields (the kernel queues connections from then on: readiness is
explicit, nobody polls), records every request, and answers each one with the next
scripted :class:`Reply`: a JSON body, a server-sent-event stream, or a fault (an HTTP
error with headers, a stream dropped mid-way, a response that never comes).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import h11
from anyio.abc import SocketAttribute, SocketStream


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The request body decoded as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """What to answer: ``status`` + ``headers`` + ``body`` (bytes) or SSE ``events``.

    ``events`` (raw ``data: ...`` frames) are sent as a chunked body, one chunk each.
    ``drop_after`` closes the socket after that many events, mid-body. ``hang`` sends
    nothing and waits until the client goes away; ``hang_after`` does so after that many
    events.
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    drop_after: int | None = None
    hang: bool = False
    hang_after: int | None = None


def json_reply(data: Any, *, status: int = 200, headers: Sequence[tuple[str, str]] = ()) -> Reply:
    """A JSON response."""
    return Reply(
        status=status,
        headers=(("content-type", "application/json"), *headers),
        body=json.dumps(data).encode(),
    )


def raw_reply(body: bytes, *, status: int = 200, content_type: str = "application/json") -> Reply:
    """A response with an arbitrary (possibly malformed) body."""
    return Reply(status=status, headers=(("content-type", content_type),), body=body)


def sse_reply(events: Sequence[bytes], *, drop_after: int | None = None) -> Reply:
    """A ``text/event-stream`` response made of raw SSE frames."""
    return Reply(
        headers=(("content-type", "text/event-stream"), ("cache-control", "no-cache")),
        events=tuple(events),
        drop_after=drop_after,
    )


def sse_frame(data: Any, *, event: str | None = None) -> bytes:
    """One SSE frame: optional ``event:`` line, a ``data:`` line (JSON unless bytes/str)."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


Responder = Callable[[Recorded], Reply]


@dataclass
class WireServer:
    """A running server: its ``base_url``, the ``requests`` it saw, its reply script."""

    port: int
    responder: Responder | None = None
    requests: list[Recorded] = field(default_factory=list)
    script: deque[Reply | Callable[[Recorded], Reply]] = field(default_factory=deque)
    open_connections: int = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def push(self, *replies: Reply | Callable[[Recorded], Reply]) -> None:
        """Queue replies (or functions of the request) for the next requests, in order."""
        self.script.extend(replies)

    def _answer(self, request: Recorded) -> Reply:
        if self.script:
            item = self.script.popleft()
            return item(request) if callable(item) else item
        if self.responder is not None:
            return self.responder(request)
        return json_reply({"error": {"message": "test script exhausted"}}, status=599)

    async def _serve(self, stream: SocketStream) -> None:
        self.open_connections += 1
        try:
            async with stream:
                await self._connection(stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            pass
        finally:
            self.open_connections -= 1

    async def _connection(self, stream: SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request = await self._read_request(conn, stream)
            if request is None:
                return
            self.requests.append(request)
            reply = self._answer(request)
            if not await self._send(conn, stream, reply):
                return
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _read_request(self, conn: h11.Connection, stream: SocketStream) -> Recorded | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return None
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                headers = {k.decode().lower(): v.decode() for k, v in head.headers}
                return Recorded(head.method.decode(), head.target.decode(), headers, bytes(body))
            elif isinstance(event, h11.ConnectionClosed):
                return None

    async def _send(self, conn: h11.Connection, stream: SocketStream, reply: Reply) -> bool:
        """Send ``reply``; False when the connection must end (dropped or hung)."""
        if reply.hang:
            await _wait_for_close(stream)
            return False
        headers = list(reply.headers)
        if reply.events is None:
            headers.append(("content-length", str(len(reply.body))))
        else:
            headers.append(("transfer-encoding", "chunked"))
        await stream.send(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        if reply.events is None:
            await stream.send(conn.send(h11.Data(data=reply.body)))
        else:
            for i, frame in enumerate(reply.events):
                if reply.hang_after is not None and i >= reply.hang_after:
                    await _wait_for_close(stream)
                    return False
                if reply.drop_after is not None and i >= reply.drop_after:
                    await stream.aclose()  # mid-body, without the terminating chunk
                    return False
                await stream.send(conn.send(h11.Data(data=frame)))
        await stream.send(conn.send(h11.EndOfMessage()))
        return True


async def _wait_for_close(stream: SocketStream) -> None:
    """Wait until the client gives up and closes the socket."""
    try:
        while await stream.receive():
            pass
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        pass


@asynccontextmanager
async def open_wire_server(responder: Responder | None = None) -> AsyncIterator[WireServer]:
    """Serve on 127.0.0.1 (ephemeral port) for the duration of the ``async with`` block."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server = WireServer(port=listener.extra(SocketAttribute.local_port), responder=responder)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server._serve)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()
