"""An incremental server-sent-events decoder (the WHATWG ``text/event-stream`` format).

The adapters read the raw response bytes through the SDK's streaming response and decode
events here, so every byte of an event is available when it turns out to be malformed, and
no SDK async generator is left for the garbage collector to finalize.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec

__all__ = ("SSEDecoder", "SSEEvent", "SSEResponse")

_MAX_PUMPS = 10_000


class SSEEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched event: its ``event`` name (``""`` when absent) and ``data`` text."""

    event: str = ""
    data: str = ""
    id: str | None = None


class SSEDecoder:
    """Feed bytes in any split; get complete events out.

    Linear in the bytes fed, however they are split: a chunk without a line break is only
    remembered, and a chunk with some is split once (``bytes.splitlines`` breaks at CRLF,
    LF and CR, the three line endings the format allows).

    Example:
        >>> d = SSEDecoder()
        >>> d.feed(b"event: ping\\nda") + d.feed(b"ta: {}\\n\\n")
        [SSEEvent(event='ping', data='{}', id=None)]
    """

    __slots__ = ("_data", "_event", "_id", "_pending")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the start of a line whose end has not come yet
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add bytes; return the events completed by them."""
        if not chunk:
            return []
        if b"\n" not in chunk and b"\r" not in chunk:
            self._pending.append(chunk)
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending = []
        lines = chunk.splitlines(keepends=True)
        # An unfinished last line waits for its end; so does a last line ending in CR,
        # which may be the first half of a CRLF split across two reads.
        if not lines[-1].endswith(b"\n"):
            self._pending.append(lines.pop())
        out: list[SSEEvent] = []
        for raw in lines:
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            event = self._line(line)
            if event is not None:
                out.append(event)
        return out

    def flush(self) -> list[SSEEvent]:
        """Dispatch a last event left without its blank line at end of stream."""
        if not self._pending and not self._data and not self._event:
            return []
        return self.feed(b"\n\n")

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            event = SSEEvent(event=self._event, data="\n".join(self._data), id=self._id)
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None


class SSEResponse:
    """Events of one streaming HTTP response (an ``httpx2.Response`` from an SDK).

    :meth:`receive` returns the events of the next network read (``None`` at the end of
    the body). :meth:`aclose` releases the connection; when the body was not read to the
    end it closes the response and then lets the HTTP library's generators finish, so none
    is left for the garbage collector (trio reports those as a ``ResourceWarning``).

    Args:
        response: the streaming response (anything with ``aiter_bytes()`` and ``aclose()``).
        classify: turns an exception raised while reading into the one to raise (chained
            to its own ``__cause__``, never to what was raised).
    """

    __slots__ = ("_chunks", "_classify", "_decoder", "_ended", "_response")

    def __init__(self, response: Any, classify: Callable[[Exception], Exception]) -> None:
        self._response = response
        self._classify = classify
        self._chunks: AsyncIterator[bytes] = response.aiter_bytes()
        self._decoder = SSEDecoder()
        self._ended = False

    async def receive(self) -> list[SSEEvent] | None:
        """Wait for the next bytes; return the events they complete (``None`` at the end)."""
        if self._ended:
            return None
        try:
            data = await anext(self._chunks)
        except StopAsyncIteration:
            self._ended = True
            return self._decoder.flush()
        except Exception as exc:
            self._ended = True
            failure = self._classify(exc)
            raise failure from failure.__cause__
        return self._decoder.feed(data)

    async def aclose(self) -> None:
        """Release the connection (idempotent; shielded, it never waits on the server)."""
        with anyio.CancelScope(shield=True):
            if not self._ended:
                self._ended = True
                await self._response.aclose()
                # Resume the generator chain on the closed stream until it ends: it can
                # still hand out bytes it had buffered, but it cannot wait for more.
                for _ in range(_MAX_PUMPS):
                    try:
                        await anext(self._chunks)
                    except (Exception, StopAsyncIteration):
                        break
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()
            await self._response.aclose()
