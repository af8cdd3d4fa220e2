"""The OpenAI Chat Completions wire format, without I/O.

Builds request bodies from an :class:`~ptcflow.runtime.LLMRequest` and turns response
bodies and stream chunks (plain JSON mappings, as documented by the API) into normalized
:class:`~ptcflow.signals.LLMResponse` / :class:`~ptcflow.signals.LLMChunk` values. The
adapter in ``_openai.py`` only moves these mappings through the official SDK.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from ptcflow.providers._protocol import LLMRequest
from ptcflow.signals import LLMChunk, LLMResponse, Message, ToolCall, ToolCallDelta, Usage

from ._errors import malformed
from ._wire import as_int, encode_json, input_schema, raw_json, reason, truncated

__all__ = (
    "OpenAIStreamState",
    "build_chat_body",
    "finish_reason",
    "parse_completion",
    "parse_usage",
)

_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def finish_reason(raw: Any) -> str | None:
    """Normalize a finish reason; unknown values pass through unchanged (lower-cased).

    Example:
        >>> finish_reason("function_call"), finish_reason("eos")
        ('tool_calls', 'eos')
    """
    return reason(raw, _FINISH)


def _message(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.name and m.role == "user":
        out["name"] = m.name
    if m.role == "assistant" and m.tool_calls:
        out["content"] = m.content or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": encode_json(c.input)},
            }
            for c in m.tool_calls
        ]
    return out


def _tool_choice(choice: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if choice == "any":
        return "required"
    return {"type": "function", "function": {"name": choice}}


def prompt_cache_key(request: LLMRequest) -> str | None:
    """A key naming the stable prefix of ``request`` (its system prompt and its tools), so
    that OpenAI routes the calls of one agent to the same prompt cache; ``None`` for a
    request with neither.

    Example:
        >>> req = LLMRequest(model="m", messages=(Message(role="system", content="Be brief."),))
        >>> prompt_cache_key(req)
        'ptcflow-4cdb6ae18c5b9823ca827c86'
    """
    system = [m.content for m in request.messages if m.role == "system"]
    if not system and not request.tools:
        return None
    digest = hashlib.sha256()
    for text in system:
        digest.update(text.encode())
        digest.update(b"\0")
    for t in request.tools:
        digest.update(t.name.encode())
        digest.update(b"\0")
    return "ptcflow-" + digest.hexdigest()[:24]


def build_chat_body(request: LLMRequest, *, stream: bool) -> dict[str, Any]:
    """Return the JSON body of ``POST /chat/completions`` for ``request``.

    ``tool_choice`` accepts ``auto``, ``none``, ``required`` (or ``any``) or a tool name;
    ``response_schema`` becomes ``response_format`` of type ``json_schema`` (strict when
    ``options["strict_schema"]`` is true); every other option (``temperature``,
    ``max_tokens``, ``seed``, ...) is sent as given. Unless ``options["prompt_cache"]``
    is ``False``, a request with a system prompt or tools carries a
    ``prompt_cache_key`` (:func:`prompt_cache_key`; an option of that name wins).

    Example:
        >>> req = LLMRequest(model="m", messages=(Message(role="user", content="hi"),))
        >>> build_chat_body(req, stream=False)
        {'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]}
    """
    body: dict[str, Any] = {"model": request.model}
    body["messages"] = [_message(m) for m in request.messages]
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": input_schema(t),
                },
            }
            for t in request.tools
        ]
    if request.tool_choice:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    options = dict(request.options)
    strict = bool(options.pop("strict_schema", False))
    if options.pop("prompt_cache", True) is not False:
        key = prompt_cache_key(request)
        if key is not None:
            body["prompt_cache_key"] = key
    if request.response_schema is not None:
        schema = request.response_schema
        name = str(schema.get("title") or "response")
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(name), "schema": schema, "strict": strict},
        }
    body.update(options)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _schema_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)
    return cleaned[:64] or "response"


def parse_usage(raw: Any) -> Usage | None:
    """Read ``usage`` (``prompt_tokens``, ``completion_tokens``, cached tokens) if present.

    ``input_tokens`` counts every prompt token, cached ones included (OpenAI's
    ``prompt_tokens``); ``cache_read_tokens`` is ``prompt_tokens_details.cached_tokens``.
    """
    if not isinstance(raw, Mapping):
        return None
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        cache_read_tokens=as_int(cached),
    )


def _arguments(raw: Any, name: str, provider: str) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    text = raw if isinstance(raw, str) else ""
    if not text.strip():
        return {}
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        raise malformed(
            provider, f"tool call {name!r} has malformed JSON arguments", text
        ) from None
    if not isinstance(value, dict):
        raise malformed(provider, f"tool call {name!r} arguments are not a JSON object", text)
    return value


def parse_completion(data: Any, *, provider: str = "openai") -> LLMResponse:
    """Turn a ``chat.completion`` body into an :class:`LLMResponse`.

    Raises:
        ProviderError: ``provider_error`` when the body is not a completion (no choices,
            malformed tool-call arguments); the raw body is kept, truncated.
    """
    if not isinstance(data, Mapping):
        raise malformed(provider, "response is not a JSON object", raw_json(data))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise malformed(provider, "response has no choices", raw_json(data))
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise malformed(provider, "response choice has no message", raw_json(data))
    calls = []
    for i, raw_call in enumerate(message.get("tool_calls") or ()):
        fn = raw_call.get("function") if isinstance(raw_call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise malformed(provider, f"tool call #{i} has no function name", raw_json(data))
        args = _arguments(fn.get("arguments"), fn["name"], provider)
        call_id = raw_call.get("id") or f"call_{i}"
        calls.append(ToolCall(id=str(call_id), name=fn["name"], input=args))
    content = message.get("content")
    reason = finish_reason(choices[0].get("finish_reason"))
    return LLMResponse(
        text=content if isinstance(content, str) else "",
        tool_calls=tuple(calls),
        usage=parse_usage(data.get("usage")) or Usage(),
        finish_reason=reason or ("tool_calls" if calls else "stop"),
        model=str(data.get("model") or ""),
    )


class OpenAIStreamState:
    """Turns ``chat.completion.chunk`` mappings into :class:`LLMChunk` values.

    Text and tool-call fragments are yielded as they arrive. The finish reason is held
    back and yielded together with the usage (``stream_options.include_usage``) in one
    final chunk by :meth:`finish`, so the last chunk always carries both.
    """

    __slots__ = ("_finish", "_model", "_usage", "provider")

    def __init__(self, *, provider: str = "openai") -> None:
        self.provider = provider
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._model: str | None = None

    def feed(self, data: Any) -> LLMChunk | None:
        """Fold one chunk in; return what to publish now (``None`` when nothing)."""
        if not isinstance(data, Mapping):
            raise malformed(self.provider, "stream chunk is not a JSON object", raw_json(data))
        if isinstance(data.get("model"), str) and data["model"]:
            self._model = data["model"]
        usage = parse_usage(data.get("usage"))
        if usage is not None:
            self._usage = usage
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            return None
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise malformed(self.provider, "stream choice is not an object", raw_json(data))
        reason = finish_reason(choice.get("finish_reason"))
        if reason is not None:
            self._finish = reason
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return None
        text = delta.get("content")
        text = text if isinstance(text, str) else ""
        calls = tuple(self._call_delta(i, c) for i, c in enumerate(delta.get("tool_calls") or ()))
        if not text and not calls:
            return None
        return LLMChunk(text=text, tool_calls=calls)

    def _call_delta(self, position: int, raw: Any) -> ToolCallDelta:
        if not isinstance(raw, Mapping):
            raise malformed(self.provider, "tool call fragment is not an object", raw_json(raw))
        fn = raw.get("function")
        fn = fn if isinstance(fn, Mapping) else {}
        index = raw.get("index")
        args = fn.get("arguments")
        return ToolCallDelta(
            index=index if isinstance(index, int) else position,
            id=raw.get("id") if isinstance(raw.get("id"), str) else None,
            name=fn.get("name") if isinstance(fn.get("name"), str) else None,
            arguments=args if isinstance(args, str) else "",
        )

    def finish(self) -> LLMChunk:
        """Return the final chunk (finish reason, usage, model).

        Raises:
            ProviderError: ``transient`` when the stream ended before any finish reason
                (a truncated stream is worth another attempt).
        """
        if self._finish is None:
            raise truncated(self.provider, "a finish reason")
        return LLMChunk(finish_reason=self._finish, usage=self._usage or Usage(), model=self._model)
