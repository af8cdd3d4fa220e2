"""Conversation and model data: messages, tool calls, usage, normalized LLM responses.

These frozen structs are shared by strategies (which build conversations), directives
(which carry them) and providers (which translate them to a wire protocol). A new turn
shares the old message structs and appends new ones: history is never copied.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = (
    "EmbedResponse",
    "LLMChunk",
    "LLMResponse",
    "Message",
    "StreamAssembler",
    "ToolCall",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
)

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A tool invocation requested by a model: ``id``, tool ``name``, ``input`` map."""

    id: str
    name: str
    input: dict[str, Any] = {}


class Message(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """One conversation message.

    ``role="assistant"`` messages may carry ``tool_calls``; ``role="tool"`` messages answer
    one call and name it in ``tool_call_id`` (``content`` is the JSON envelope text).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class ToolSpec(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """A tool as a model sees it: name, description and JSON Schema of its input."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = {}
    handoff: str = ""
    """The agent this tool hands the conversation to (a handoff tool, see
    ``ptcflow.handoff``); empty for every other tool. Not sent to providers."""


class Usage(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Token counts of one or more LLM calls; ``+`` sums them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class LLMResponse(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A provider's answer, normalized: text, tool calls, usage, finish reason, model."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str = "stop"
    model: str = ""

    def as_message(self) -> Message:
        """Return the assistant message that records this response in the conversation."""
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls)


class ToolCallDelta(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """A streamed fragment of one tool call; ``index`` says which call it extends."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class LLMChunk(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """One streamed event from a provider: a text fragment, tool-call fragments, and (at
    the end) usage, finish reason and model."""

    text: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None


class EmbedResponse(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Embedding vectors, one per input, with usage and model."""

    vectors: tuple[tuple[float, ...], ...]
    usage: Usage = Usage()
    model: str = ""


class StreamAssembler:
    """Accumulate :class:`LLMChunk` events into one :class:`LLMResponse`.

    Tool-call argument fragments are joined per ``index`` and decoded as JSON when the
    stream ends. Malformed argument JSON raises ``ValueError`` naming the tool call.

    Example:
        >>> a = StreamAssembler()
        >>> a.add(LLMChunk(text="Hel")); a.add(LLMChunk(text="lo", finish_reason="stop"))
        >>> a.response().text
        'Hello'
    """

    __slots__ = ("_args", "_calls", "_finish", "_model", "_text", "_usage")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, list[str | None]] = {}  # index -> [id, name]
        self._args: dict[int, list[str]] = {}  # index -> argument fragments (joined once)
        self._usage: Usage | None = None
        self._finish: str | None = None
        self._model: str | None = None

    def add(self, chunk: LLMChunk) -> None:
        """Fold one chunk in."""
        if chunk.text:
            self._text.append(chunk.text)
        for delta in chunk.tool_calls:
            slot = self._calls.setdefault(delta.index, [None, None])
            if delta.id:
                slot[0] = delta.id
            if delta.name:
                slot[1] = delta.name
            if delta.arguments:
                self._args.setdefault(delta.index, []).append(delta.arguments)
        if chunk.usage is not None:
            self._usage = chunk.usage if self._usage is None else self._usage + chunk.usage
        if chunk.finish_reason is not None:
            self._finish = chunk.finish_reason
        if chunk.model:
            self._model = chunk.model

    def response(self) -> LLMResponse:
        """Return the assembled response. Raises ``ValueError`` on malformed arguments."""
        calls = []
        for index in sorted(self._calls):
            call_id, name = self._calls[index]
            raw = "".join(self._args.get(index, ()))
            if not name:
                raise ValueError(f"streamed tool call #{index} never received a name")
            try:
                args = msgspec.json.decode(raw or "{}") if (raw or "").strip() else {}
            except msgspec.DecodeError as exc:
                raise ValueError(
                    f"tool call #{index} ({name}) has malformed JSON arguments: {exc}"
                ) from None
            if not isinstance(args, dict):
                raise ValueError(f"tool call #{index} ({name}) arguments are not a JSON object")
            calls.append(ToolCall(id=call_id or f"call_{index}", name=name, input=args))
        return LLMResponse(
            text="".join(self._text),
            tool_calls=tuple(calls),
            usage=self._usage or Usage(),
            finish_reason=self._finish or ("tool_calls" if calls else "stop"),
            model=self._model or "",
        )
