"""One run streamed to one HTTP client as server-sent events: the part every protocol shares.

A request body is read (bounded) and parsed by the protocol; a listener on the Runtime's
bus is opened *before* the run starts (no signal is missed), scoped to the run's tree
(``run_tree=``: the bus hands each client the signals of its own run and of its child
runs only, so a thousand clients cost a publish no more than one). The bus hands each
signal to the client's pipe inside ``publish``, in the task that publishes it; the only
task woken is the client's writer, which encodes what waits with the protocol's encoder
(a client behind the run gets consecutive text chunks merged) and sends it in one write.
At most ``buffer`` signals wait for a client's connection: one more and the client gets
the protocol's error event and is dropped, and so is a client whose connection has taken
nothing for ``send_timeout``. The bus never waits, so the run is never blocked by a client.
A client that goes away (or is dropped) cancels its run, or leaves it running, as
``on_disconnect`` says.

Plain ASGI (no framework import): mount an endpoint in Starlette with
``Route("/agui", endpoint, methods=["POST"])``, or serve it alone.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

import anyio

from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.signals import Listener, Signal, SignalBus, new_id

__all__ = (
    "BadRequest",
    "Disconnect",
    "RunStream",
    "RunStreamEndpoint",
    "StartedRun",
    "StreamStatistics",
)

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
Disconnect: TypeAlias = Literal["cancel", "continue"]
"""What a client going away (or dropped for being slow) does to its run."""

R = TypeVar("R")

_DISCONNECTS = ("cancel", "continue")


class BadRequest(Exception):
    """A request the protocol cannot run: answered with ``status`` and a JSON body
    ``{"error": message, "details": details}``."""

    def __init__(self, message: str, *, status: int = 422, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.details = details


class RunStream(Protocol):
    """What a protocol gives the endpoint for one run: the bytes to send per signal."""

    @property
    def done(self) -> bool:
        """True once the top-level run has ended (its last event was returned)."""
        ...

    def feed(self, signal: Signal) -> bytes:
        """The encoded events for one signal of the run or of its child runs (``b""``:
        nothing to send)."""
        ...

    def feed_many(self, signals: Iterable[Signal]) -> bytes:
        """The encoded events of several signals (a client behind the run gets them
        merged where the protocol allows: consecutive text chunks of one message)."""
        ...

    def dropped(self, message: str) -> bytes:
        """The error event a client gets before it is dropped for reading too slowly."""
        ...

    def failed(self, message: str, code: str) -> bytes:
        """The error event that ends a run which stopped without its last signal (a
        :class:`StartedRun` whose ``wait()`` raised: ``code`` is the exception's type)."""
        ...


class StartedRun(Protocol):
    """What a ``start`` function returns: a :class:`~ptcflow.runtime.RunHandle`, or
    anything else the endpoint can wait for and cancel (a run started with
    ``rt.run(..., session=...)`` in a task of the service's own, for example)."""

    @property
    def done(self) -> bool:
        """True once the run has ended."""
        ...

    def cancel(self, message: str = "") -> None:
        """Cancel the run (does not block; a no-op once it has ended)."""
        ...

    async def wait(self) -> Any:
        """Block until the run has ended (its Step, where there is one). Raise when it
        could not run to its end: a stream still waiting for the run's last signal then
        ends with the protocol's error event (``RunStream.failed``), not waiting for ever."""
        ...


class StreamStatistics:
    """Counters of an endpoint: streams ``open`` now, ``started``, ``dropped`` (too
    slow), ``disconnected`` (the client went away before the end), ``rejected`` (bad
    request)."""

    __slots__ = ("disconnected", "dropped", "open", "rejected", "started")

    def __init__(self) -> None:
        self.open = 0
        self.started = 0
        self.dropped = 0
        self.disconnected = 0
        self.rejected = 0

    def __repr__(self) -> str:
        return (
            f"<StreamStatistics open={self.open} started={self.started} dropped={self.dropped}"
            f" disconnected={self.disconnected} rejected={self.rejected}>"
        )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or ``None`` when the client went away first. Raises
    :class:`BadRequest` (413) past ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BadRequest(
                f"the request body is over {limit} bytes; send a smaller input",
                status=413,
            )
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def _answer(send: Send, status: int, body: dict[str, Any], headers: Iterable[tuple[bytes, bytes]] = ()) -> None:  # fmt: skip
    data = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def _watch(receive: Receive, gone: anyio.Event, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()
    scope.cancel()


class _Pipe:
    """The signals of a client's run not yet encoded and sent: appended by the bus's
    listener in the task that publishes them (no task woken but the writer's, no wait),
    taken by the endpoint's writer, which encodes and sends them. At most ``limit`` wait:
    one more and the client is dropped (its writer cancelled, the listener closed)."""

    __slots__ = (
        "asleep",
        "closed",
        "failure",
        "limit",
        "listener",
        "overflowed",
        "sending",
        "sends",
        "signals",
        "wakeup",
        "writer",
    )

    def __init__(self, limit: int, writer: anyio.CancelScope) -> None:
        self.signals: deque[Signal] = deque()
        self.limit = limit
        self.writer = writer
        self.listener: Listener | None = None
        self.overflowed = False
        self.closed = False  # the bus stopped calling (closed)
        self.failure: Exception | None = None  # the run raised (StartedRun.wait)
        self.sends = 0  # sends begun
        self.sending = False  # one is in progress
        # the writer waits on one semaphore, released by whoever wakes it: a future per
        # wait (an Event would be five objects per wait, and one per client is always
        # alive, so the collector would scan and promote them all the time)
        self.wakeup = anyio.Semaphore(0, fast_acquire=True)
        self.asleep = False

    def put(self, signal: Signal) -> None:
        """The listener's sink: runs inside ``bus.publish``, never waits."""
        signals = self.signals
        signals.append(signal)
        if len(signals) > self.limit:  # the client fell behind: it is dropped
            self.overflowed = True
            signals.clear()
            if self.listener is not None:
                self.listener.close()
            self.writer.cancel()
            return
        self.wake()

    def close(self) -> None:
        self.closed = True
        self.wake()

    def fail(self, error: Exception) -> None:
        self.failure = error
        self.wake()

    def wake(self) -> None:
        if self.asleep:
            self.asleep = False
            self.wakeup.release()

    async def sleep(self) -> None:
        """Wait until :meth:`put`, :meth:`close` or :meth:`fail` wakes the writer."""
        self.asleep = True
        await self.wakeup.acquire()


async def _fail_on(handle: StartedRun, pipe: _Pipe) -> None:
    """Tell the writer when ``handle``'s run raised: its last signal may never come."""
    try:
        await handle.wait()
    except Exception as exc:
        pipe.fail(exc)


async def _wait_quietly(handle: StartedRun) -> None:
    with contextlib.suppress(Exception):  # a failed run: its client was told (failed())
        await handle.wait()


async def _stall_watch(pipe: _Pipe, stall: float, stalled: anyio.Event) -> None:
    """Stop the writer once one send has lasted ``stall`` seconds (the client stopped
    reading: it is dropped): seen in progress at three looks ``stall / 2`` apart (so after
    ``stall`` to ``1.5 * stall``). One timer per client, no clock read per send."""
    seen, looks = -1, 0
    while True:
        await anyio.sleep(stall / 2)
        if not pipe.sending:
            looks = 0
        elif pipe.sends != seen:
            seen, looks = pipe.sends, 1
        else:
            looks += 1
            if looks >= 3:
                stalled.set()
                pipe.writer.cancel()
                return


class RunStreamEndpoint(Generic[R]):
    """An ASGI app that runs one agent per ``POST`` and streams the run as SSE.

    Built by the protocol helpers (:func:`~ptcflow.serve.agui_endpoint`,
    :func:`~ptcflow.serve.ui_message_stream_endpoint`); use those.

    Args:
        runtime: the open :class:`~ptcflow.runtime.Runtime` whose bus is a
            :class:`~ptcflow.signals.SignalBus`, or a function returning it (an app whose
            lifespan opens the Runtime).
        parse: the request body to the protocol's request; raises :class:`BadRequest`.
        start: starts the run: ``start(runtime, request, run_id) -> RunHandle`` (or any
            :class:`StartedRun`); the run must have that ``run_id``.
        stream: the protocol's encoder of one run: ``stream(request, run_id)``.
        headers: response headers besides ``content-type: text/event-stream``.
        buffer: how many signals may wait for a client's connection (busy sending what
            came before) before the client is dropped.
        on_disconnect: ``"cancel"`` (default): a client that goes away or is dropped
            cancels its run; ``"continue"``: the run goes on to its end.
        max_body: the largest request body accepted, in bytes.
        send_timeout: a client whose connection takes no data for this long (seconds;
            checked every ``send_timeout / 2``) is dropped (and its last event given up
            on after as long).
    """

    def __init__(
        self,
        runtime: Runtime | Callable[[], Runtime],
        *,
        parse: Callable[[bytes], R],
        start: Callable[[Runtime, R, str], StartedRun],
        stream: Callable[[R, str], RunStream],
        headers: Iterable[tuple[str, str]] = (),
        buffer: int = 1024,
        on_disconnect: Disconnect = "cancel",
        max_body: int = 1 << 20,
        send_timeout: float = 10.0,
    ) -> None:
        if on_disconnect not in _DISCONNECTS:
            raise UsageError(f"on_disconnect must be 'cancel' or 'continue', got {on_disconnect!r}")
        if buffer < 1:
            raise UsageError(f"buffer must be at least 1 signal, got {buffer!r}")
        self._runtime = runtime
        self.parse = parse
        self.start = start
        self.stream = stream
        self.headers = [(k.lower().encode(), v.encode()) for k, v in headers]
        self.buffer = buffer
        self.on_disconnect = on_disconnect
        self.max_body = max_body
        self.send_timeout = send_timeout
        self.statistics = StreamStatistics()
        self.handles: dict[str, StartedRun] = {}
        """The runs being streamed now, by run id (a test looks here for leaks)."""

    def runtime(self) -> Runtime:
        """The Runtime runs start on."""
        rt = self._runtime if isinstance(self._runtime, Runtime) else self._runtime()
        if not isinstance(rt.bus, SignalBus):
            raise UsageError(
                "streaming a run needs the Runtime's bus to be a SignalBus: "
                "Runtime(..., bus=SignalBus())"
            )
        return rt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise UsageError(f"this endpoint serves HTTP, not {scope['type']!r}")
        if scope.get("method") != "POST":
            await _answer(
                send,
                405,
                {"error": "POST a request body to start a run"},
                [(b"allow", b"POST")],
            )
            return
        try:
            body = await _read_body(receive, self.max_body)
            if body is None:
                return
            request = self.parse(body)
        except BadRequest as exc:
            self.statistics.rejected += 1
            await _answer(send, exc.status, {"error": exc.message, "details": exc.details})
            return
        await self.serve(request, receive, send)

    async def serve(
        self,
        request: R,
        receive: Receive,
        send: Send,
        *,
        run_id: str | None = None,
        start: Callable[[Runtime, R, str], StartedRun] | None = None,
    ) -> None:
        """Run ``request`` and stream it to the client (the body was read already).

        ``run_id`` and ``start``: the run to stream and how to start it, when not a new
        run started by the endpoint's own ``start`` (a paused run resumed keeps its id)."""
        rt = self.runtime()
        bus = rt.bus
        assert isinstance(bus, SignalBus)
        run_id = run_id or new_id("run_")
        start = start or self.start
        stream = self.stream(request, run_id)
        stats = self.statistics
        gone = anyio.Event()
        dropped = False
        writer = anyio.CancelScope()
        pipe = _Pipe(self.buffer, writer)
        # listen before the run starts, so that no signal of it is missed (only its run
        # tree's signals: the bus routes them, nobody filters); the bus hands each one to
        # the pipe in the task that publishes it, and only this task is woken to send it
        with bus.listen(pipe.put, run_tree=run_id, on_close=pipe.close) as listener:
            pipe.listener = listener
            handle = start(rt, request, run_id)
            self.handles[run_id] = handle
            stats.open += 1
            stats.started += 1
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_watch, receive, gone, tg.cancel_scope)
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [
                                (b"content-type", b"text/event-stream; charset=utf-8"),
                                (b"cache-control", b"no-cache"),
                                (b"x-accel-buffering", b"no"),
                                *self.headers,
                            ],
                        }
                    )
                    stalled = anyio.Event()
                    tg.start_soon(_stall_watch, pipe, self.send_timeout, stalled)
                    tg.start_soon(_fail_on, handle, pipe)
                    signals = pipe.signals
                    with writer:
                        while True:
                            if not signals:
                                if stream.done or pipe.closed or pipe.failure is not None:
                                    break  # (a failed run: what it published, then why)
                                await pipe.sleep()
                                continue
                            # all that waits, in one send: merged where it can be
                            batch = [signals.popleft()] if len(signals) == 1 else list(signals)
                            signals.clear()
                            chunk = stream.feed_many(batch)
                            if chunk:
                                pipe.sends += 1
                                pipe.sending = True
                                await send({"type": "http.response.body", "body": chunk, "more_body": True})  # fmt: skip
                                pipe.sending = False
                            if stream.done:
                                break
                    last = b""
                    if pipe.overflowed or stalled.is_set():
                        dropped = True
                        stats.dropped += 1  # counted now, before its last event is sent
                        why = (
                            f"the client fell more than {self.buffer} events behind the run "
                            "and was dropped; read the stream faster or raise the buffer"
                        )
                        if not pipe.overflowed:
                            why = (
                                f"the client read nothing for {self.send_timeout} s and was dropped"
                            )
                        last = stream.dropped(why)
                    elif pipe.failure is not None and not stream.done:
                        error = pipe.failure
                        last = stream.failed(str(error), type(error).__name__)
                    with anyio.move_on_after(self.send_timeout):
                        await send({"type": "http.response.body", "body": last, "more_body": False})
                    tg.cancel_scope.cancel()
            finally:
                stats.open -= 1
                if not dropped and gone.is_set() and not stream.done:
                    stats.disconnected += 1
                if not handle.done and self.on_disconnect == "cancel":
                    handle.cancel(f"run {run_id}: its client went away")
                if self.on_disconnect == "cancel":
                    with anyio.move_on_after(30, shield=True):
                        await _wait_quietly(handle)
                self.handles.pop(run_id, None)
