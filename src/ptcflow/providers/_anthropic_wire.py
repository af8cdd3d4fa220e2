"""The Anthropic Messages wire format, without I/O.

Builds ``POST /v1/messages`` bodies (system prompt apart, ``tool_use`` / ``tool_result``
content blocks, consecutive same-role turns merged as the API requires) and reads
responses and the streaming event sequence ``message_start``, ``content_block_start``,
``content_block_delta`` (``text_delta``, ``input_json_delta``), ``content_block_stop``,
``message_delta``, ``message_stop`` into normalized values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from ptcflow.providers._protocol import LLMRequest
from ptcflow.signals import LLMChunk, LLMResponse, Message, ToolCall, ToolCallDelta, Usage

from ._errors import malformed, stream_error
from ._wire import as_int, input_schema, raw_json, reason, truncated

__all__ = (
    "AnthropicStreamState",
    "build_messages_body",
    "parse_message",
    "parse_usage",
    "stop_reason",
)

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when ``options`` does not set it (the API requires one)."""

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

_decoder = msgspec.json.Decoder()


def stop_reason(raw: Any) -> str | None:
    """Map a ``stop_reason`` to the normalized finish reason; unknown ones pass through.

    Example:
        >>> stop_reason("end_turn"), stop_reason("tool_use"), stop_reason("pause_turn")
        ('stop', 'tool_calls', 'pause_turn')
    """
    return reason(raw, _STOP)


def _is_error_content(content: str) -> bool:
    """True for the ``{"ok": false, ...}`` envelope text the runtime gives failed tools."""
    if not content.startswith("{"):
        return False
    try:
        value = _decoder.decode(content)
    except msgspec.DecodeError:
        return False
    return isinstance(value, dict) and value.get("ok") is False


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": m.tool_call_id or "",
            "content": m.content,
        }
        if _is_error_content(m.content):
            block["is_error"] = True
        return [block]
    out: list[dict[str, Any]] = []
    if m.content:
        out.append({"type": "text", "text": m.content})
    for call in m.tool_calls if m.role == "assistant" else ():
        out.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
    return out


def _conversation(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            system.append(m.content)
            continue
        role = "assistant" if m.role == "assistant" else "user"
        blocks = _blocks(m)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            previous = turns[-1]["content"]
            if role == "user" and blocks[0]["type"] == "tool_result":
                # tool results must come first in a user turn
                turns[-1]["content"] = [
                    *[b for b in previous if b["type"] == "tool_result"],
                    *blocks,
                    *[b for b in previous if b["type"] != "tool_result"],
                ]
            else:
                previous.extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # a lone text block is sent as a plain string
        blocks = turn["content"]
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            turn["content"] = blocks[0]["text"]
    return "\n\n".join(system), turns


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none", "any"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


CACHE_POINT: Final[Mapping[str, str]] = {"type": "ephemeral"}
"""The ``cache_control`` of a prompt-cache point (Anthropic's 5-minute cache)."""


def _mark_history(turns: list[dict[str, Any]]) -> None:
    """A cache point on the last block of the conversation: everything before the next
    turn's new messages is read from the cache then (the history only grows)."""
    last = turns[-1]
    content = last["content"]
    if isinstance(content, str):
        content = last["content"] = [{"type": "text", "text": content}]
    if content:
        content[-1] = {**content[-1], "cache_control": dict(CACHE_POINT)}


def build_messages_body(request: LLMRequest, *, stream: bool) -> dict[str, Any]:
    """Return the JSON body of ``POST /v1/messages`` for ``request``.

    ``max_tokens`` comes from ``options`` (default :data:`DEFAULT_MAX_TOKENS`);
    ``tool_choice`` accepts ``auto``, ``none``, ``any`` (or ``required``) or a tool name;
    ``response_schema`` becomes ``output_config.format`` (structured outputs); other
    options (``temperature``, ``top_p``, ``stop_sequences``, ...) are sent as given.

    Prompt caching is on unless ``options["prompt_cache"]`` is ``False``: a
    ``cache_control`` point on the system prompt, on the last tool and on the last block
    of the conversation (three of the four the API allows).

    Example:
        >>> req = LLMRequest(model="claude", messages=(Message(role="system", content="Be brief."),
        ...     Message(role="user", content="hi")), options={"prompt_cache": False})
        >>> build_messages_body(req, stream=False)
        {'model': 'claude', 'max_tokens': 4096, 'messages': [{'role': 'user', 'content': 'hi'}], 'system': 'Be brief.'}
    """
    options = dict(request.options)
    cache = options.pop("prompt_cache", True) is not False
    system, turns = _conversation(request.messages)
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": int(options.pop("max_tokens", DEFAULT_MAX_TOKENS)),
        "messages": turns,
    }
    if system:
        body["system"] = (
            [{"type": "text", "text": system, "cache_control": dict(CACHE_POINT)}]
            if cache
            else system
        )
    if request.tools:
        body["tools"] = [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": input_schema(t),
            }
            for t in request.tools
        ]
        if cache:
            body["tools"][-1]["cache_control"] = dict(CACHE_POINT)
    if cache and len(turns) > 1:  # a history: the conversation so far is reused next turn
        _mark_history(turns)
    if request.tool_choice:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.response_schema is not None:
        config = dict(options.pop("output_config", None) or {})
        config["format"] = {"type": "json_schema", "schema": request.response_schema}
        body["output_config"] = config
    body.update(options)
    if stream:
        body["stream"] = True
    return body


def parse_usage(raw: Any) -> Usage | None:
    """Read ``usage``. ``input_tokens`` counts every prompt token: the uncached ones plus
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` (as OpenAI counts)."""
    if not isinstance(raw, Mapping):
        return None
    read = as_int(raw.get("cache_read_input_tokens"))
    write = as_int(raw.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")) + read + write,
        output_tokens=as_int(raw.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def parse_message(data: Any, *, provider: str = "anthropic") -> LLMResponse:
    """Turn a ``message`` body into an :class:`LLMResponse` (``thinking`` blocks skipped).

    Raises:
        ProviderError: ``provider_error`` when the body is not a message; the raw body is
            kept, truncated.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
        raise malformed(provider, "response is not a message", raw_json(data))
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in data["content"]:
        if not isinstance(block, Mapping):
            raise malformed(provider, "content block is not an object", raw_json(data))
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            args = block.get("input")
            if not isinstance(args, Mapping) or not isinstance(block.get("name"), str):
                raise malformed(provider, "tool_use block is malformed", raw_json(data))
            call_id = str(block.get("id") or f"toolu_{len(calls)}")
            calls.append(ToolCall(id=call_id, name=block["name"], input=dict(args)))
    reason = stop_reason(data.get("stop_reason"))
    return LLMResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=parse_usage(data.get("usage")) or Usage(),
        finish_reason=reason or ("tool_calls" if calls else "stop"),
        model=str(data.get("model") or ""),
    )


class AnthropicStreamState:
    """Turns streaming events (decoded ``data`` mappings) into :class:`LLMChunk` values.

    Text deltas and ``input_json_delta`` fragments are yielded as they arrive; tool-use
    blocks are numbered in order of appearance (the ``index`` of their
    :class:`~ptcflow.signals.ToolCallDelta`). Usage from ``message_start`` and
    ``message_delta`` and the stop reason are yielded in one final chunk by :meth:`finish`.
    """

    __slots__ = ("_model", "_raw_usage", "_stop", "_stopped", "_tools", "provider")

    def __init__(self, *, provider: str = "anthropic") -> None:
        self.provider = provider
        self._tools: dict[int, int] = {}  # content block index -> tool call index
        self._raw_usage: dict[str, Any] = {}
        self._stop: str | None = None
        self._model: str | None = None
        self._stopped = False

    def feed(self, event: Any) -> LLMChunk | None:
        """Fold one event in; return what to publish now (``None`` when nothing)."""
        if not isinstance(event, Mapping):
            raise malformed(self.provider, "stream event is not a JSON object", raw_json(event))
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, Mapping):
                self._model = str(message.get("model") or "") or None
                self._merge_usage(message.get("usage"))
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason"):
                self._stop = stop_reason(delta.get("stop_reason"))
            self._merge_usage(event.get("usage"))
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            raise stream_error(self.provider, event.get("error"))
        return None  # ping, content_block_stop, unknown future events

    def _merge_usage(self, raw: Any) -> None:
        if isinstance(raw, Mapping):  # message_delta usage counts are cumulative
            self._raw_usage.update({k: v for k, v in raw.items() if v is not None})

    def _start(self, event: Mapping[str, Any]) -> LLMChunk | None:
        block = event.get("content_block")
        if not isinstance(block, Mapping):
            return None
        index = event.get("index")
        if block.get("type") == "tool_use" and isinstance(index, int):
            position = self._tools.setdefault(index, len(self._tools))
            name = block.get("name")
            delta = ToolCallDelta(
                index=position,
                id=str(block.get("id") or f"toolu_{position}"),
                name=name if isinstance(name, str) else None,
            )
            return LLMChunk(tool_calls=(delta,))
        if block.get("type") == "text" and block.get("text"):
            return LLMChunk(text=str(block["text"]))
        return None

    def _delta(self, event: Mapping[str, Any]) -> LLMChunk | None:
        delta = event.get("delta")
        if not isinstance(delta, Mapping):
            raise malformed(self.provider, "content_block_delta without delta", raw_json(event))
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return LLMChunk(text=text) if isinstance(text, str) and text else None
        if kind == "input_json_delta":
            index = event.get("index")
            position = self._tools.get(index) if isinstance(index, int) else None
            if position is None:
                raise malformed(
                    self.provider, "input_json_delta for no tool_use block", raw_json(event)
                )
            part = delta.get("partial_json")
            if not isinstance(part, str) or not part:
                return None
            return LLMChunk(tool_calls=(ToolCallDelta(index=position, arguments=part),))
        return None  # thinking_delta, signature_delta, citations: not part of the answer

    def finish(self) -> LLMChunk:
        """Return the final chunk (finish reason, usage, model).

        Raises:
            ProviderError: ``transient`` when the stream ended before ``message_stop``.
        """
        if not self._stopped:
            raise truncated(self.provider, "message_stop")
        return LLMChunk(
            finish_reason=self._stop or ("tool_calls" if self._tools else "stop"),
            usage=parse_usage(self._raw_usage) or Usage(),
            model=self._model,
        )
