"""Anthropic Messages API responses as documented (JSON body and SSE events), for tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ptcflow.testing._openai_replies import Call, fragments
from ptcflow.testing._wire import (
    RecordedRequest,
    ServerReply,
    json_reply,
    sse_frame,
    sse_reply,
)


@dataclass(frozen=True)
class Turn:
    """What the scripted Claude answers."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    stop_reason: str | None = None
    input_tokens: int = 20
    output_tokens: int = 9
    cache_read: int = 0
    cache_write: int = 0
    model: str = "claude-test"
    drop_after: int | None = None
    skip_stop: bool = False
    chunks: tuple[str, ...] | None = None
    """How the streamed text is split (default: 4-character fragments)."""

    @property
    def reason(self) -> str:
        return self.stop_reason or ("tool_use" if self.calls else "end_turn")


def usage(turn: Turn, *, output: int | None = None) -> dict[str, Any]:
    return {
        "input_tokens": turn.input_tokens,
        "cache_creation_input_tokens": turn.cache_write,
        "cache_read_input_tokens": turn.cache_read,
        "output_tokens": turn.output_tokens if output is None else output,
        "service_tier": "standard",
    }


def message(turn: Turn) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.calls
    ]
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": turn.reason,
        "stop_sequence": None,
        "usage": usage(turn),
    }


def event(data: dict[str, Any]) -> bytes:
    return sse_frame(data, event=data["type"])


def stream_events(turn: Turn) -> list[bytes]:
    start = message(turn) | {"content": [], "stop_reason": None}
    start["usage"] = usage(turn, output=1)
    events = [event({"type": "message_start", "message": start})]
    index = 0
    if turn.text:
        events.append(
            event(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                }
            )
        )
        events.append(event({"type": "ping"}))
        for piece in turn.chunks if turn.chunks is not None else fragments(turn.text):
            delta = {"type": "text_delta", "text": piece}
            events.append(event({"type": "content_block_delta", "index": 0, "delta": delta}))
        events.append(event({"type": "content_block_stop", "index": 0}))
        index = 1
    for call in turn.calls:
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        events.append(
            event({"type": "content_block_start", "index": index, "content_block": block})
        )
        for piece in ["", *fragments(json.dumps(call.arguments), 6)]:
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(event({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(event({"type": "content_block_stop", "index": index}))
        index += 1
    events.append(
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.reason, "stop_sequence": None},
                "usage": {"output_tokens": turn.output_tokens},
            }
        )
    )
    if not turn.skip_stop:
        events.append(event({"type": "message_stop"}))
    return events


def messages_turn(turn: Turn) -> Callable[[RecordedRequest], ServerReply]:
    """A reply function answering ``POST /v1/messages`` with ``turn`` (JSON or SSE)."""

    def reply(request: RecordedRequest) -> ServerReply:
        if request.json().get("stream"):
            return sse_reply(stream_events(turn), drop_after=turn.drop_after)
        return json_reply(message(turn))

    return reply


def error_reply(
    status: int, message: str, *, kind: str, headers: tuple[tuple[str, str], ...] = ()
) -> ServerReply:
    """An Anthropic error body with an HTTP status."""
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}
    return json_reply(body, status=status, headers=(("request-id", "req_1"), *headers))
