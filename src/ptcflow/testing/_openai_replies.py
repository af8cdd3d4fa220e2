"""OpenAI Chat Completions responses as the API documents them (JSON and SSE), for tests.

:func:`chat_turn` returns a reply function: it answers a ``stream: true`` request with a
``chat.completion.chunk`` event stream (text split into fragments, tool-call arguments
split into fragments, a usage chunk when ``stream_options.include_usage`` is set, then
``data: [DONE]``) and any other request with one ``chat.completion`` JSON body.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ptcflow.testing._wire import (
    RecordedRequest,
    ServerReply,
    json_reply,
    sse_frame,
    sse_reply,
)

CREATED = 1_763_683_200


@dataclass(frozen=True)
class Call:
    """A tool call the scripted model makes."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """What the scripted model answers."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    finish_reason: str | None = None
    prompt_tokens: int = 12
    completion_tokens: int = 7
    cached_tokens: int = 0
    model: str = "gpt-test"
    drop_after: int | None = None
    """Drop the connection after this many SSE events (stream only)."""
    skip_done: bool = False
    chunks: tuple[str, ...] | None = None
    """How the streamed text is split (default: 4-character fragments)."""

    @property
    def reason(self) -> str:
        return self.finish_reason or ("tool_calls" if self.calls else "stop")


def usage(turn: Turn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": turn.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def completion(turn: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": turn.text or None,
        "refusal": None,
        "annotations": [],
    }
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in turn.calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": CREATED,
        "model": turn.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": turn.reason}
        ],
        "usage": usage(turn),
        "service_tier": "default",
        "system_fingerprint": "fp_test",
    }


def fragments(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunk(turn: Turn, delta: dict[str, Any], finish: str | None, with_usage: bool) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": turn.model,
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if with_usage:
        body["usage"] = None
    return sse_frame(body)


def stream_events(turn: Turn, *, include_usage: bool) -> list[bytes]:
    events = [chunk(turn, {"role": "assistant", "content": ""}, None, include_usage)]
    events += [
        chunk(turn, {"content": piece}, None, include_usage)
        for piece in (turn.chunks if turn.chunks is not None else fragments(turn.text))
    ]
    for index, call in enumerate(turn.calls):
        head = {"index": index, "id": call.id, "type": "function"}
        head["function"] = {"name": call.name, "arguments": ""}
        events.append(chunk(turn, {"tool_calls": [head]}, None, include_usage))
        for piece in fragments(json.dumps(call.arguments), 5):
            part = {"index": index, "function": {"arguments": piece}}
            events.append(chunk(turn, {"tool_calls": [part]}, None, include_usage))
    events.append(chunk(turn, {}, turn.reason, include_usage))
    if include_usage:
        final = {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": turn.model,
            "system_fingerprint": "fp_test",
            "choices": [],
            "usage": usage(turn),
        }
        events.append(sse_frame(final))
    if not turn.skip_done:
        events.append(b"data: [DONE]\n\n")
    return events


def chat_turn(turn: Turn) -> Callable[[RecordedRequest], ServerReply]:
    """A reply function answering a chat request with ``turn`` (JSON or SSE)."""

    def reply(request: RecordedRequest) -> ServerReply:
        body = request.json()
        if body.get("stream"):
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            return sse_reply(stream_events(turn, include_usage=include), drop_after=turn.drop_after)
        return json_reply(completion(turn))

    return reply


def embedding_reply(vectors: list[list[float]], model: str = "embed-test") -> ServerReply:
    """A ``POST /embeddings`` response (rows deliberately out of order)."""
    rows = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return json_reply(
        {
            "object": "list",
            "data": list(reversed(rows)),
            "model": model,
            "usage": {"prompt_tokens": 3 * len(vectors), "total_tokens": 3 * len(vectors)},
        }
    )


def error_reply(
    status: int, message: str, *, kind: str, headers: tuple[tuple[str, str], ...] = ()
) -> ServerReply:
    """An OpenAI error body with an HTTP status."""
    return json_reply(
        {"error": {"message": message, "type": kind, "param": None, "code": None}},
        status=status,
        headers=headers,
    )
