"""What the local model server answers: script entries in the request's wire format, and a
plausible answer to anything once the script is used up.

A script entry is what :class:`~ptcflow.testing.ScriptedLLM` takes (text, tool calls, a
:class:`~ptcflow.testing.Turn`, a fault) and becomes the HTTP answer the real API would give:
a ``chat.completion`` / ``message`` body, or their SSE event streams when the request asks
to stream; a fault becomes its HTTP status (``rate_limited``: 429 with ``Retry-After``,
``transient``: 5xx, ``auth``: 401, ``timeout``: 408), a body that is not JSON
(``malformed``), or no answer at all (``hang``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from ptcflow.signals import Usage
from ptcflow.testing import _anthropic_replies as aw, _openai_replies as ow
from ptcflow.testing._openai_replies import Call
from ptcflow.testing._turns import Fault, ScriptItem, as_turn, with_ids
from ptcflow.testing._wire import RecordedRequest, ServerReply, json_reply, raw_reply

__all__ = ("is_embeddings", "plausible_reply", "reply_for", "sample")

_ANTHROPIC_STOP: Final = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def sample(schema: Any) -> Any:
    """A value that satisfies a simple JSON Schema.

    Example:
        >>> sample({"type": "object", "properties": {"n": {"type": "integer"}}})
        {'n': 2}
    """
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: sample(sub) for name, sub in props.items()}
    return {"integer": 2, "number": 2.5, "string": "text", "boolean": True, "array": []}.get(
        str(kind)
    )


def _has_results(messages: list[Any]) -> bool:
    for m in messages:
        if m.get("role") == "tool":
            return True
        content = m.get("content")
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return True
    return False


def _is_anthropic(request: RecordedRequest) -> bool:
    return request.path.rstrip("/").endswith("/messages")


def is_embeddings(request: RecordedRequest) -> bool:
    """True for an embeddings request (it never takes a text or tool-call script entry)."""
    return request.path.rstrip("/").endswith("/embeddings")


def _embeddings(request: RecordedRequest, body: Any) -> ServerReply:
    raw = body.get("input")
    inputs = raw if isinstance(raw, list) else [raw]
    vectors = [[float(len(str(t))), 1.0, 0.5] for t in inputs]
    return ow.embedding_reply(vectors, str(body.get("model") or "embed-local"))


def plausible_reply(request: RecordedRequest) -> ServerReply:
    """Answer any chat, messages or embeddings request plausibly: call the first offered
    tool once (arguments made from its schema), then answer in text; a requested JSON
    schema gets a fitting object; an embedding request gets small vectors."""
    body = request.json()
    if is_embeddings(request):
        return _embeddings(request, body)
    anthropic = _is_anthropic(request)
    if not body.get("messages"):
        return json_reply({"error": {"message": "messages required"}}, status=400)
    tools = body.get("tools") or []
    text = "Hello from the local model server."
    calls: tuple[Call, ...] = ()
    if tools and not _has_results(body["messages"]):
        first = tools[0] if anthropic else tools[0]["function"]
        schema = first.get("input_schema" if anthropic else "parameters")
        calls = (Call("call_local_1", first["name"], sample(schema)),)
        text = ""
    elif tools:
        text = "All done: the tools answered."
    fmt = body.get("output_config", {}).get("format") if anthropic else body.get("response_format")
    if fmt:
        schema = fmt["schema"] if anthropic else fmt["json_schema"]["schema"]
        text = json.dumps(sample(schema))
    if anthropic:
        return aw.messages_turn(aw.Turn(text=text, calls=calls, model=body["model"]))(request)
    return ow.chat_turn(ow.Turn(text=text, calls=calls, model=body["model"]))(request)


def _fault(fault: Fault, anthropic: bool, number: int) -> ServerReply:
    where = f"model server request #{number}"
    if fault.kind == "hang":
        return ServerReply(hang=True)
    if fault.kind == "malformed":
        return raw_reply(b'{"choices": [ this is not JSON', status=200)
    status, kind, headers = {
        "rate_limited": (429, "rate_limit_error", ()),
        "transient": (fault.status or 503, "api_error", ()),
        "auth": (401, "authentication_error", ()),
        "timeout": (408, "timeout_error", ()),
    }[fault.kind]
    extra: tuple[tuple[str, str], ...] = headers
    if fault.retry_after is not None:
        extra = (("retry-after", str(fault.retry_after)),)
    message = f"{where}: scripted {fault.kind}"
    if anthropic:
        return aw.error_reply(status, message, kind=kind, headers=extra)
    return ow.error_reply(status, message, kind=kind, headers=extra)


def reply_for(item: ScriptItem, request: RecordedRequest, number: int) -> ServerReply:
    """The answer the real API would give for script entry ``item`` (request ``number``).

    Raises:
        UsageError: ``item`` is not a script entry.
    """
    turn = as_turn(item, number)
    anthropic = _is_anthropic(request)
    if turn.fault is not None:
        reply = _fault(turn.fault, anthropic, number)
    else:
        body = request.json()
        model = str(body.get("model") or "local-model")
        calls = tuple(Call(c.id, c.name, c.input) for c in with_ids(turn.tool_calls, number))
        usage = turn.usage or Usage(input_tokens=12, output_tokens=7)
        if anthropic:
            reason = turn.finish_reason and _ANTHROPIC_STOP.get(turn.finish_reason)
            reply = aw.messages_turn(
                aw.Turn(
                    text=turn.text,
                    calls=calls,
                    stop_reason=reason or turn.finish_reason,
                    input_tokens=usage.input_tokens - usage.cache_read_tokens,
                    output_tokens=usage.output_tokens,
                    cache_read=usage.cache_read_tokens,
                    cache_write=usage.cache_write_tokens,
                    model=model,
                    chunks=turn.chunks,
                )
            )(request)
        else:
            reply = ow.chat_turn(
                ow.Turn(
                    text=turn.text,
                    calls=calls,
                    finish_reason=turn.finish_reason,
                    prompt_tokens=usage.input_tokens,
                    completion_tokens=usage.output_tokens,
                    cached_tokens=usage.cache_read_tokens,
                    model=model,
                    chunks=turn.chunks,
                )
            )(request)
    if turn.latency:
        reply = dataclasses.replace(reply, delay=turn.latency)
    return reply
