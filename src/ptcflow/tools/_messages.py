"""The data that travels around a tool: its definition, a call, a result, the call context.

:class:`ToolCall` is the one defined in :mod:`ptcflow.signals` (a model's response carries
it), re-exported here so a provider's tool calls go straight to :func:`dispatch`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.signals import Err, ErrorEnvelope, Ok, ToolCall, json_safe, tool_result_content

__all__ = ("ToolCall", "ToolContext", "ToolDefinition", "ToolResult", "json_safe")


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """What a model is told about a tool: everything but the callable.

    Attributes:
        name: the name the model calls the tool by.
        description: when and why to call it ("" when there is none).
        input_schema: a JSON Schema ``object`` describing the named arguments.
        output_schema: a JSON Schema for the result, or ``None`` when it is not declared.

    Example:
        >>> d = ToolDefinition(name="add", input_schema={"type": "object"})
        >>> msgspec.json.encode(d)
        b'{"name":"add","description":"","input_schema":{"type":"object"},"output_schema":null}'
    """

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    output_schema: dict[str, Any] | None = None


class ToolResult(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The reply to one :class:`ToolCall`.

    Attributes:
        id: the id of the call this answers.
        output: the tool's return value; when ``is_error`` it is the
            :class:`~ptcflow.signals.ErrorEnvelope` describing the failure.
        is_error: True when the tool could not be run or failed.
        name: the name of the tool that was called.
        warnings: input coercions made before the call (``limit: coerced string "10" to int``).
        effects: effects the tool asked for by returning ``Ok(payload, effects)``.

    Example:
        >>> ToolResult(id="call_1", output=5).content()
        '{"ok":true,"result":5}'
    """

    id: str
    output: Any = None
    is_error: bool = False
    name: str = ""
    warnings: tuple[str, ...] = ()
    effects: tuple[Any, ...] = ()

    @property
    def error(self) -> ErrorEnvelope | None:
        """The error envelope when the call failed, else ``None``."""
        return self.output if self.is_error and isinstance(self.output, ErrorEnvelope) else None

    def to_result(self) -> Ok[Any] | Err:
        """Return the canonical envelope: ``Ok(output, effects)`` or ``Err(error, effects)``.

        The ``Ok`` payload is the output as JSON data (see :func:`json_safe`), so a signal
        carrying it survives a journal round trip unchanged; :attr:`output` keeps the
        value exactly as the tool returned it.

        Example:
            >>> ToolResult(id="c", output=5).to_result()
            Ok(payload=5, effects=())
        """
        if not self.is_error:
            return Ok(payload=json_safe(self.output), effects=self.effects)
        error = self.output
        if not isinstance(error, ErrorEnvelope):
            error = ErrorEnvelope.make("tool_error", str(error))
        return Err(error=error, effects=self.effects)

    def content(self) -> str:
        """Return the JSON text the model reads: ``{"ok": true, "result": ...}`` or the error."""
        return tool_result_content(self.to_result())


class ToolContext(msgspec.Struct, frozen=True, kw_only=True):
    """Facts about the current call, injected into a tool that asks for them.

    A tool asks by annotating a parameter with ``ToolContext``; that parameter is filled
    by :func:`dispatch` and left out of the tool's input schema, so the model never sees it.

    Attributes:
        run_id: the id of the run making the call ("" outside a run).
        call_id: the id of the :class:`ToolCall` being answered.
        tool_name: the name the tool was called by.
        state: a read-only snapshot the runtime chose to share (``None`` when none).
        metadata: extra data from the caller (user ids, tenant, request headers...).

    Example:
        >>> def whoami(ctx: ToolContext) -> str:
        ...     return ctx.call_id
    """

    run_id: str = ""
    call_id: str = ""
    tool_name: str = ""
    state: Any = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
