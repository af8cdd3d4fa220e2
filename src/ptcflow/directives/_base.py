"""The directive family: frozen, tagged msgspec structs describing side effects.

A strategy never performs I/O; it returns directives. The executor performs each one and
publishes signals carrying the same correlation ids. Directives are data: they can be
logged, compared, encoded (``kind`` is the tag) and replayed.

Adding a directive kind
-----------------------
Subclass :class:`Directive` with a new ``tag`` and register a handler for it with the
runtime (``Runtime(handlers={MyDirective: my_handler})``); the executor gives it the same
deadline, retry, cancellation and exactly-one-terminal-signal treatment as the built-in
kinds::

    class RunProgram(Directive, frozen=True, kw_only=True, tag="run_program"):
        source: str
"""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.signals import ErrorEnvelope, Message, ToolSpec

__all__ = (
    "Directive",
    "EmitRequestError",
    "EmitToolError",
    "LLMEmbed",
    "LLMGenerate",
    "LLMStream",
    "RunChild",
    "ToolExec",
)

RESERVED_CONTEXT_KEY = "state"


class Directive(msgspec.Struct, frozen=True, gc=False, kw_only=True, tag_field="kind"):
    """Base of every directive.

    Attributes:
        id: unique per run; the ``call_id`` of the signals it causes and the idempotency
            key of the side effect (an activity may run twice on a durable backend).
        request_id: the user request the directive serves.
        iteration: the strategy's turn counter when it was emitted.
        timeout_ms: the directive's deadline (all attempts together); ``None`` inherits the
            remaining run budget.
        max_retries: extra attempts after the first for retryable failures.
        retry_backoff_ms: base of the exponential backoff (full jitter, capped).
        metadata: free-form observability data (origin, operation, ...).
    """

    id: str
    request_id: str | None = None
    iteration: int = 0
    timeout_ms: int | None = None
    max_retries: int = 0
    retry_backoff_ms: int = 200
    metadata: dict[str, Any] = {}

    def problems(self) -> list[str]:
        """Return what is wrong with the fields (empty when valid); checked before start."""
        out = []
        if not self.id:
            out.append("id must be a non-empty string")
        if self.timeout_ms is not None and self.timeout_ms <= 0:
            out.append(f"timeout_ms must be positive or None, got {self.timeout_ms}")
        if self.max_retries < 0:
            out.append(f"max_retries must be >= 0, got {self.max_retries}")
        if self.retry_backoff_ms < 0:
            out.append(f"retry_backoff_ms must be >= 0, got {self.retry_backoff_ms}")
        return out


class LLMGenerate(Directive, frozen=True, kw_only=True, tag="llm_generate"):
    """Ask a model for one response. Signals: ``ai.usage`` then ``ai.llm.response``.

    ``model`` names a concrete model (``openai:gpt-4.1-mini``); ``model_alias`` names an
    alias resolved by the model registry (``fast``); with neither, the run's model is used.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    model_alias: str | None = None
    tool_choice: str | None = None
    response_schema: dict[str, Any] | None = None
    options: dict[str, Any] = {}
    max_retries: int = 2

    def problems(self) -> list[str]:
        """Also checks that a conversation is present and model fields are not both set."""
        out = Directive.problems(self)  # by class, not super(): cheaper, once per directive
        if not self.messages:
            out.append("messages must not be empty")
        if self.model and self.model_alias:
            out.append("set model or model_alias, not both")
        return out


class LLMStream(LLMGenerate, frozen=True, kw_only=True, tag="llm_stream"):
    """Like :class:`LLMGenerate`, streamed: ``ai.llm.delta``* then ``ai.usage`` then
    ``ai.llm.response``."""


class LLMEmbed(Directive, frozen=True, kw_only=True, tag="llm_embed"):
    """Embed texts. Signal: ``ai.embed.result``."""

    inputs: tuple[str, ...]
    model: str | None = None
    model_alias: str | None = None
    max_retries: int = 2

    def problems(self) -> list[str]:
        """Also checks that there is something to embed."""
        out = Directive.problems(self)  # by class, not super(): cheaper, once per directive
        if not self.inputs:
            out.append("inputs must not be empty")
        return out


class ToolExec(Directive, frozen=True, kw_only=True, tag="tool_exec"):
    """Run a tool. Signals: ``ai.tool.started`` then ``ai.tool.result``.

    ``context`` is passed to the tool; its ``state`` key is reserved: the runtime sets it to
    the strategy's snapshot, overriding any value given here. Retries default to 0.
    """

    tool_name: str
    arguments: dict[str, Any] = {}
    context: dict[str, Any] = {}

    def problems(self) -> list[str]:
        """Also checks the tool name."""
        out = Directive.problems(self)  # by class, not super(): cheaper, once per directive
        if not self.tool_name:
            out.append("tool_name must be a non-empty string")
        return out


class EmitToolError(Directive, frozen=True, kw_only=True, tag="emit_tool_error"):
    """Answer a tool call with an error without running anything (unknown tool, bad call).

    Signal: ``ai.tool.result`` carrying ``Err(error)``; ``id`` is the tool call's id.
    """

    tool_name: str
    error: ErrorEnvelope


class EmitRequestError(Directive, frozen=True, kw_only=True, tag="emit_request_error"):
    """Reject a request (for example because the strategy is busy). Signal:
    ``ai.request.error``."""

    error: ErrorEnvelope
    reason: str = ""


class RunChild(Directive, frozen=True, kw_only=True, tag="run_child"):
    """Start a child run of the agent registered under ``agent`` (an agent used as a tool).

    The child runs nested in this run (``parent_run_id`` set, cancelled with it) and its
    outcome is published as ``ai.tool.result`` for the call ``id``.
    """

    agent: str
    input: dict[str, Any] = {}

    def problems(self) -> list[str]:
        """Also checks the agent name."""
        out = Directive.problems(self)  # by class, not super(): cheaper, once per directive
        if not self.agent:
            out.append("agent must be a non-empty string")
        return out
