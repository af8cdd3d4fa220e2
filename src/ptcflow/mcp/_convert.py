"""MCP data to ptcflow data, without I/O: tool names, schemas, call results, errors."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ptcflow.errors import PtcflowError
from ptcflow.signals import TIMEOUT, TOOL_ERROR, TRANSIENT, VALIDATION, ErrorEnvelope

__all__ = (
    "MCPToolError",
    "call_failure",
    "error_result",
    "result_value",
    "tool_name",
    "unwrap_output_schema",
)

_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_decode = msgspec.json.Decoder().decode

# JSON-RPC error codes (MCP spec and SDK)
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_INVALID_PARAMS = -32602
_METHOD_NOT_FOUND = -32601


class MCPToolError(PtcflowError):
    """A failed MCP tool call; the executor publishes :attr:`envelope` as the tool result.

    Args:
        envelope: the canonical error.
    """

    def __init__(self, envelope: ErrorEnvelope) -> None:
        super().__init__(f"{envelope.type}: {envelope.message}")
        self.envelope = envelope


def tool_name(name: str, prefix: str = "") -> str:
    """The ptcflow name of an MCP tool: ``prefix + name`` with characters outside
    ``[A-Za-z0-9_-]`` replaced by ``_``, cut to 64 characters.

    Example:
        >>> tool_name("text.echo", "docs_")
        'docs_text_echo'
    """
    return _INVALID.sub("_", f"{prefix}{name}")[:64] or "tool"


def _wrapped(schema: Mapping[str, Any] | None) -> bool:
    """Whether an output schema is the SDK's ``{"result": <value>}`` wrapper of a non-object."""
    if not isinstance(schema, Mapping):
        return False
    props = schema.get("properties")
    return (
        isinstance(props, Mapping)
        and list(props) == ["result"]
        and list(schema.get("required") or []) == ["result"]
        and not schema.get("additionalProperties")
    )


def unwrap_output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Return the schema of the value a tool returns (its ``result`` when wrapped)."""
    if schema is None:
        return None
    if _wrapped(schema):
        return dict(schema["properties"]["result"])
    return dict(schema)


def _content_value(block: Any) -> Any:
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    dump = getattr(block, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump is not None else repr(block)


def _text(content: Iterable[Any]) -> str:
    return "\n".join(str(_content_value(b)) for b in content if getattr(b, "type", None) == "text")


def result_value(result: Any, output_schema: Mapping[str, Any] | None) -> Any:
    """The value of a successful ``CallToolResult``.

    Structured content wins (unwrapped from ``{"result": ...}`` when the tool's output
    schema is that wrapper); otherwise one text block gives its text (decoded when it is
    JSON), several blocks a list of their values.
    """
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        if _wrapped(output_schema) and isinstance(structured, Mapping) and "result" in structured:
            return structured["result"]
        return structured
    content = list(getattr(result, "content", None) or [])
    if len(content) == 1 and getattr(content[0], "type", None) == "text":
        text = content[0].text
        try:
            return _decode(text) if text[:1] in "{[" else text
        except msgspec.DecodeError:
            return text
    return [_content_value(b) for b in content]


def error_result(result: Any, *, server: str, tool: str) -> ErrorEnvelope:
    """The envelope of a ``CallToolResult`` with ``isError`` set (the tool itself failed)."""
    message = _text(getattr(result, "content", None) or []) or "the tool reported an error"
    return ErrorEnvelope.make(
        TOOL_ERROR,
        f"MCP tool {tool!r} on {server} failed: {message}",
        {"server": server, "tool": tool},
        retryable=False,
    )


def call_failure(
    exc: Exception, *, server: str, tool: str, stderr_tail: str = ""
) -> MCPToolError | None:
    """Classify an exception raised by an MCP call; ``None`` when it is not an MCP failure.

    A closed connection (the server exited or crashed) is a non-retryable ``tool_error``
    (the session is gone; a retry cannot succeed); a request timeout is ``timeout``; bad
    parameters or an unknown method are ``validation``; any other JSON-RPC error is a
    ``tool_error``. Transport errors under the SDK are ``transient``.
    """
    details: dict[str, Any] = {"server": server, "tool": tool}
    code = getattr(exc, "code", None)
    message = str(getattr(exc, "message", "") or exc)
    if type(exc).__name__ == "MCPError" and isinstance(code, int):
        details["code"] = code
        if code == _CONNECTION_CLOSED:
            if stderr_tail:
                details["stderr"] = stderr_tail
            text = f"MCP server {server} closed the connection during the call to {tool!r}"
            return MCPToolError(
                ErrorEnvelope.make(TOOL_ERROR, f"{text} ({message})", details, retryable=False)
            )
        kind = {
            _REQUEST_TIMEOUT: TIMEOUT,
            _INVALID_PARAMS: VALIDATION,
            _METHOD_NOT_FOUND: VALIDATION,
        }.get(code, TOOL_ERROR)
        text = f"MCP call to {tool!r} on {server} failed: {message}"
        return MCPToolError(ErrorEnvelope.make(kind, text, details))
    if isinstance(exc, TimeoutError):
        return MCPToolError(
            ErrorEnvelope.make(TIMEOUT, f"MCP call to {tool!r} on {server} timed out", details)
        )
    if type(exc).__module__.startswith(("httpx", "anyio")) or isinstance(exc, ConnectionError):
        details["exception"] = type(exc).__name__
        return MCPToolError(
            ErrorEnvelope.make(
                TRANSIENT, f"MCP call to {tool!r} on {server} lost its connection", details
            )
        )
    return None
