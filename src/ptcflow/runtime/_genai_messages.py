"""Message content in the OpenTelemetry GenAI conventions' JSON format, for span attributes.

``gen_ai.input.messages`` is a list of ``{"role", "parts", "name"?}`` messages;
``gen_ai.output.messages`` a list of ``{"role", "parts", "finish_reason"}``. Parts are
``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}`` and
``{"type": "tool_call_response", "id", "response"}`` (the conventions' input/output message
JSON schemas). Attribute values stay valid JSON when they are cut to size: the longest
texts are shortened first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ptcflow.signals import LLMResponse, Message

__all__ = ("LIMIT", "encode_content", "input_messages", "output_messages")

LIMIT: Final = 16_000
"""The most characters a content attribute holds."""

_FINISH: Final = {"tool_calls": "tool_call"}
"""ptcflow's finish reasons that the conventions spell differently."""

_encoder = msgspec.json.Encoder()


def _parts(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        ]
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.input}
        )
    return parts


def input_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation sent to a model, as ``gen_ai.input.messages``.

    Example:
        >>> input_messages([Message(role="user", content="2+3?")])
        [{'role': 'user', 'parts': [{'type': 'text', 'content': '2+3?'}]}]
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "parts": _parts(message)}
        if message.name:
            item["name"] = message.name
        out.append(item)
    return out


def output_messages(response: LLMResponse) -> list[dict[str, Any]]:
    """A model's answer, as ``gen_ai.output.messages`` (one message: one choice).

    Example:
        >>> output_messages(LLMResponse(text="5", finish_reason="stop"))
        [{'role': 'assistant', 'parts': [{'type': 'text', 'content': '5'}], 'finish_reason': 'stop'}]
    """
    reason = response.finish_reason or "stop"
    return [
        {
            "role": "assistant",
            "parts": _parts(response.as_message()),
            "finish_reason": _FINISH.get(reason, reason),
        }
    ]


def encode_content(value: Any, limit: int = LIMIT) -> str:
    """``value`` as JSON text of at most ``limit`` characters.

    When it is longer, the longest strings inside it are shortened (ending in ``...``)
    until it fits, so the text stays valid JSON; a value that still does not fit is cut.
    Values JSON cannot hold are written as their ``repr``.
    """
    try:
        text = _encoder.encode(value).decode("utf-8")
    except (TypeError, ValueError, OverflowError):
        return repr(value)[:limit]
    if len(text) <= limit:
        return text
    cap = limit
    while cap > 16:
        cap //= 2
        shortened = _encoder.encode(_shorten(value, cap)).decode("utf-8")
        if len(shortened) <= limit:
            return shortened
    return text[:limit]


def _shorten(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= cap else f"{value[:cap]}..."
    if isinstance(value, dict):
        return {k: _shorten(v, cap) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shorten(v, cap) for v in value]
    return value
