"""The HTTP exchange of the local model server: the request it records, the reply it sends,
and the builders of JSON and server-sent-event replies.

Below both the server (:mod:`ptcflow.testing._server`) and the reply builders of each wire
protocol (``_openai_replies``, ``_anthropic_replies``, ``_server_script``), which all speak
in these terms.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = (
    "RecordedRequest",
    "Responder",
    "ServerReply",
    "json_reply",
    "raw_reply",
    "sse_frame",
    "sse_reply",
)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: ``method``, ``path``, lower-cased ``headers``,
    raw ``body``."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The request body decoded as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class ServerReply:
    """A raw HTTP answer: ``status`` + ``headers`` + ``body``, or server-sent ``events``.

    ``events`` (raw SSE frames, see :func:`sse_frame`) are sent as a chunked body, one chunk
    each. ``drop_after`` closes the socket after that many events, mid-body (a cut
    stream). ``hang`` sends nothing and waits until the client goes away; ``hang_after``
    does so after that many events. ``reset`` closes the connection without answering.
    ``delay`` waits that many seconds before answering (a slow server).

    Example:
        >>> ServerReply(status=503).status
        503
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    drop_after: int | None = None
    hang: bool = False
    hang_after: int | None = None
    reset: bool = False
    delay: float = 0.0


def json_reply(
    data: Any, *, status: int = 200, headers: Sequence[tuple[str, str]] = ()
) -> ServerReply:
    """A JSON response.

    Example:
        >>> json_reply({"ok": True}, status=201).body
        b'{"ok": true}'
    """
    return ServerReply(
        status=status,
        headers=(("content-type", "application/json"), *headers),
        body=json.dumps(data).encode(),
    )


def raw_reply(
    body: bytes, *, status: int = 200, content_type: str = "application/json"
) -> ServerReply:
    """A response with an arbitrary (possibly malformed) body."""
    return ServerReply(status=status, headers=(("content-type", content_type),), body=body)


def sse_reply(events: Sequence[bytes], *, drop_after: int | None = None) -> ServerReply:
    """A ``text/event-stream`` response made of raw SSE frames."""
    return ServerReply(
        headers=(("content-type", "text/event-stream"), ("cache-control", "no-cache")),
        events=tuple(events),
        drop_after=drop_after,
    )


def sse_frame(data: Any, *, event: str | None = None) -> bytes:
    """One SSE frame: an optional ``event:`` line, a ``data:`` line (JSON unless a str).

    Example:
        >>> sse_frame({"x": 1}, event="ping")
        b'event: ping\\ndata: {"x": 1}\\n\\n'
    """
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


Responder: TypeAlias = Callable[[RecordedRequest], ServerReply]
"""A function answering a request (the server's answer once its script is used up)."""
