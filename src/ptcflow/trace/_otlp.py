"""Replay a mission into OpenTelemetry spans, as OTLP JSON (a file or an OTLP/HTTP request).

The spans are the ones the runtime makes live (see docs/telemetry.md): ``invoke_agent
{agent}`` per run, ``chat {model}`` per model call, ``execute_tool {tool}`` per tool call
and child run, ``execute_tool run_program`` per program, nested the same way (a child
run under the call that started it; a program's tool calls under the program), with the
GenAI attributes. Trace and span ids are derived from the run and call ids, so exporting
the same journal twice gives the same ids (a backend keeps one copy).
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.error
import urllib.request
from typing import Any, Final

from ptcflow.errors import UsageError
from ptcflow.trace._mission import Mission
from ptcflow.trace._node import Node

__all__ = ("otlp_request", "send_otlp")

_INTERNAL: Final = 1
_CLIENT: Final = 3
_ERROR: Final = 2
_CONTENT_LIMIT: Final = 16_000
_BATCH: Final = 2_000


def _id(text: str, chars: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:chars]


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _content(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= _CONTENT_LIMIT else text[: _CONTENT_LIMIT - 3] + "..."


def _nanos(ms: float) -> str:
    return str(round(ms * 1000) * 1000)  # microseconds, exact in a float


def otlp_request(
    mission: Mission, *, service_name: str = "ptcflow", capture_content: bool = False
) -> dict[str, Any]:
    """The mission as an OTLP ``ExportTraceServiceRequest`` in its JSON encoding.

    Args:
        mission: the mission to export.
        service_name: the ``service.name`` resource attribute.
        capture_content: add ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``,
            ``gen_ai.output.messages`` and a program's source (as redacted in the mission),
            as ``Telemetry(capture_content=True)`` does live. Off: names, times, tokens
            and error types only.

    Returns:
        ``{"resourceSpans": [...]}``, ready for ``json.dumps``.

    Example:
        >>> otlp_request(Mission())["resourceSpans"][0]["scopeSpans"][0]["spans"]
        []
    """
    spans: list[dict[str, Any]] = []
    end_default = mission.last_ms or 0.0
    for root in mission.roots:
        trace_id = _id(f"trace {root}", 32)
        for node in mission.walk(root):
            if node.kind == "turn":
                continue
            spans.append(_span(mission, node, trace_id, end_default, capture_content))
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": _value(service_name)}]
                },
                "scopeSpans": [{"scope": {"name": "ptcflow.trace"}, "spans": spans}],
            }
        ]
    }


def _parent_span(mission: Mission, node: Node) -> str | None:
    parent = node.parent
    while parent is not None and mission.nodes[parent].kind == "turn":
        parent = mission.nodes[parent].parent
    return parent


def _span(
    mission: Mission, node: Node, trace_id: str, end_default: float, content: bool
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"ptcflow.run_id": node.run_id}
    events: list[dict[str, Any]] = []
    kind = _INTERNAL
    detail = node.detail
    if node.kind == "run":
        name = f"invoke_agent {node.name}"
        attrs |= {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": node.name,
            "gen_ai.conversation.id": node.run_id,
        }
        if detail.get("reason"):
            attrs["ptcflow.reason"] = detail["reason"]
        if node.status == "paused":
            attrs["ptcflow.run.paused"] = True
            attrs["ptcflow.run.pending_calls"] = len(detail.get("pending", ()))
        for pause in detail.get("pauses", ()):
            if "paused_ms" in pause:
                events.append(_event("ptcflow.run.paused", pause["paused_ms"], {}))
            if "resumed_ms" in pause:
                attrs["ptcflow.run.resumed"] = True
                decided = {"ptcflow.run.decided_calls": len(pause.get("decided", ()))}
                events.append(_event("ptcflow.run.resumed", pause["resumed_ms"], decided))
    elif node.kind == "llm":
        name, kind = f"chat {node.model}".strip(), _CLIENT
        attrs["gen_ai.operation.name"] = "chat"
        if node.model:
            attrs["gen_ai.request.model"] = attrs["gen_ai.response.model"] = node.model
        if "finish_reason" in detail:
            attrs["gen_ai.response.finish_reasons"] = [detail["finish_reason"]]
        if content and "text" in detail:
            parts: list[dict[str, Any]] = []
            if detail["text"]:
                parts.append({"type": "text", "content": detail["text"]})
            parts += [
                {"type": "tool_call", "id": c["id"], "name": c["name"], "arguments": c["arguments"]}
                for c in detail.get("tool_calls", [])
            ]
            attrs["gen_ai.output.messages"] = _content([{"role": "assistant", "parts": parts}])
    else:
        tool = "run_program" if node.kind == "program" else node.name
        name = f"execute_tool {tool}"
        attrs |= {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": node.call_id or node.id,
            "gen_ai.tool.type": "function",
        }
        approval = detail.get("approval")
        if isinstance(approval, dict):
            _approval(approval, node, attrs, events, content)
        elif node.status == "waiting":  # a program, or an agent used as a tool, that waits
            attrs["ptcflow.approval.status"] = "pending"
        error = detail.get("error")
        if node.kind == "program" and isinstance(error, dict) and "category" in error:
            attrs["ptcflow.program.error.category"] = error["category"]
            for key in ("line", "column"):
                if error.get(key) is not None:
                    attrs[f"ptcflow.program.error.{key}"] = error[key]
        if content:
            if "arguments" in detail:
                attrs["gen_ai.tool.call.arguments"] = _content(detail["arguments"])
            if "result" in detail:
                attrs["gen_ai.tool.call.result"] = _content(detail["result"])
            if "source" in detail:
                attrs["ptcflow.program.source"] = detail["source"][:_CONTENT_LIMIT]
    if node.input_tokens or node.output_tokens:
        attrs["gen_ai.usage.input_tokens"] = node.input_tokens
        attrs["gen_ai.usage.output_tokens"] = node.output_tokens
    if node.attempts != 1:
        attrs["ptcflow.attempts"] = node.attempts
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": _id(f"span {node.id}", 16),
        "name": name,
        "kind": kind,
        "startTimeUnixNano": _nanos(node.start_ms),
        "endTimeUnixNano": _nanos(node.end_ms if node.end_ms is not None else end_default),
    }
    parent = _parent_span(mission, node)
    if parent is not None:
        span["parentSpanId"] = _id(f"span {parent}", 16)
    if node.status in ("error", "cancelled"):
        error = detail.get("error")
        error_type = (
            error.get("type") or error.get("category") if isinstance(error, dict) else None
        ) or "fail"
        attrs["error.type"] = "cancelled" if node.status == "cancelled" else error_type
        tool_data = node.kind in ("tool", "program") and not content
        message = error_type if tool_data else (node.error or error_type)[:200]
        span["status"] = {"code": _ERROR, "message": message}
    span["attributes"] = [{"key": k, "value": _value(v)} for k, v in attrs.items()]
    if events:
        span["events"] = events
    return span


def _event(name: str, ms: float, attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "timeUnixNano": _nanos(ms),
        "name": name,
        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
    }


def _approval(
    approval: dict[str, Any],
    node: Node,
    attrs: dict[str, Any],
    events: list[dict[str, Any]],
    content: bool,
) -> None:
    """A call that waited for a decision, as the runtime traces it live: the request
    (an event), then its decision (an attribute and an event), or ``pending``."""
    requested = {
        "ptcflow.approval.kind": approval.get("kind", "approval"),
        "ptcflow.approval.reason": approval.get("reason", ""),
        "gen_ai.tool.call.id": node.call_id or node.id,
    }
    if "expires_at" in approval:
        requested["ptcflow.approval.expires_at"] = approval["expires_at"]
    if content and "arguments" in node.detail:
        requested["gen_ai.tool.call.arguments"] = _content(node.detail["arguments"])
    at = approval.get("requested_ms", node.start_ms)
    events.append(_event("ptcflow.approval.requested", at, requested))
    decision = approval.get("decision")
    if decision is None:
        attrs["ptcflow.approval.status"] = "pending"
        return
    attrs["ptcflow.approval.decision"] = decision
    resolved = {"ptcflow.approval.decision": decision}
    if content and approval.get("decision_reason"):
        resolved["ptcflow.approval.reason"] = approval["decision_reason"]
    events.append(_event("ptcflow.approval.resolved", approval.get("resolved_ms", at), resolved))


def send_otlp(body: dict[str, Any], endpoint: str, *, protocol: str = "json") -> str:
    """POST ``body`` (from :func:`otlp_request`) to an OTLP/HTTP endpoint. Blocks.

    Args:
        body: the request.
        endpoint: the collector's base URL (``http://localhost:4318``, ``/v1/traces`` is
            added) or the full traces URL.
        protocol: ``json`` (``application/json``), or ``protobuf``
            (``application/x-protobuf``; needs the ``opentelemetry-proto`` package).

    Returns:
        The URL the spans were sent to. Large missions go in batches of 2,000 spans.

    Raises:
        UsageError: the endpoint cannot be reached or refused the spans (the message gives
            the HTTP status and the start of its answer).
    """
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    if not url.startswith(("http://", "https://")):
        raise UsageError(
            f"--otlp takes an http(s) URL such as http://localhost:4318, got {endpoint!r}"
        )
    resource = body["resourceSpans"][0]
    spans = resource["scopeSpans"][0]["spans"]
    for start in range(0, max(1, len(spans)), _BATCH):
        part = {
            "resourceSpans": [
                {
                    "resource": resource["resource"],
                    "scopeSpans": [
                        {
                            "scope": resource["scopeSpans"][0]["scope"],
                            "spans": spans[start : start + _BATCH],
                        }
                    ],
                }
            ]
        }
        if protocol == "protobuf":
            data, kind = _protobuf(part), "application/x-protobuf"
        else:
            data, kind = json.dumps(part).encode("utf-8"), "application/json"
        request = urllib.request.Request(url, data=data, headers={"Content-Type": kind})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            text = exc.read(300).decode("utf-8", "replace")
            raise UsageError(f"{url} refused the spans: HTTP {exc.code}: {text}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise UsageError(f"cannot reach the OTLP endpoint {url}: {reason}") from None
    return url


def _protobuf(body: dict[str, Any]) -> bytes:
    """``body`` as a binary ``ExportTraceServiceRequest`` (ids are bytes there)."""
    try:
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise UsageError(
            "--protocol protobuf needs the opentelemetry-proto package "
            "(pip install opentelemetry-proto), or use --protocol json"
        ) from None

    def b64(hex_id: str) -> str:
        return base64.b64encode(bytes.fromhex(hex_id)).decode("ascii")

    copy = json.loads(json.dumps(body))
    for resource in copy["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = b64(span[key])
    message = json_format.ParseDict(copy, ExportTraceServiceRequest())
    data: bytes = message.SerializeToString()
    return data
