"""A local stand-in for OpenAI and Anthropic that answers any request plausibly.

Used to run the documentation's examples and ``examples/providers_*.py`` for real (real SDKs,
real HTTP) without a network: it calls the first offered tool once with arguments made from
its JSON Schema, then answers in text; a ``response_format`` / ``output_config`` schema gets
a JSON object that fits it.
"""

from __future__ import annotations

import json
from typing import Any

from . import anthropic_wire as aw, openai_wire as ow
from .openai_wire import Call
from .wire_server import Recorded, Reply, json_reply


def sample(schema: Any) -> Any:
    """A value that satisfies a simple JSON Schema."""
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


def respond(request: Recorded) -> Reply:
    """Answer a chat completions, messages or embeddings request."""
    body = request.json()
    if request.path.endswith("/embeddings"):
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return ow.embedding_reply([[float(len(t)), 1.0, 0.5] for t in inputs], body["model"])
    anthropic = request.path.endswith("/messages")
    tools = body.get("tools") or []
    text = "Hello from the local test server."
    calls: tuple[Call, ...] = ()
    if tools and not _has_results(body["messages"]):
        first = tools[0] if anthropic else tools[0]["function"]
        schema = first.get("input_schema" if anthropic else "parameters")
        calls = (Call("call_docs_1", first["name"], sample(schema)),)
        text = ""
    elif tools:
        text = "All done: the tools answered."
    fmt = body.get("output_config", {}).get("format") if anthropic else body.get("response_format")
    if fmt:
        schema = fmt["schema"] if anthropic else fmt["json_schema"]["schema"]
        text = json.dumps(sample(schema))
    if anthropic:
        return aw.messages_turn(aw.Turn(text=text, calls=calls, model=body["model"]))(request)
    if not body.get("messages"):
        return json_reply({"error": {"message": "messages required"}}, status=400)
    return ow.chat_turn(ow.Turn(text=text, calls=calls, model=body["model"]))(request)
