"""Which signals end a directive: the terminal signal(s) of each directive kind, as data.

A terminal is a pure function ``(directive, result, attempts, duration_ms)`` returning the
``(type, data)`` pairs to publish, in order; the run core numbers and publishes them. The
table is decided per directive class, by its base classes, once:

==================  ================================================
``LLMGenerate``     ``ai.usage`` (on success), then ``ai.llm.response``
``LLMStream``       the same (a subclass of ``LLMGenerate``)
``LLMEmbed``        ``ai.embed.result``
``EmitRequestError`` ``ai.request.error``
``RunProgram``      ``ai.program.result``
anything else       ``ai.tool.result`` (tools, child runs, custom kinds)
==================  ================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ptcflow.directives import Directive, EmitRequestError, LLMEmbed, LLMGenerate, RunProgram
from ptcflow.signals import (
    EMBED_RESULT,
    LLM_RESPONSE,
    PROGRAM_RESULT,
    REQUEST_ERROR,
    TOOL_RESULT,
    USAGE,
    EmbedResultData,
    Err,
    ErrorEnvelope,
    LLMResponseData,
    Ok,
    ProgramResultData,
    RequestErrorData,
    ToolResultData,
    UsageData,
    json_safe,
)

__all__ = ("Terminal", "TerminalTable", "journal_safe", "tag_of", "tool_name_of")

Terminal = Callable[[Directive, "Ok[Any] | Err", int, float], tuple[tuple[str, Any], ...]]
"""``(directive, result, attempts, duration_ms) -> ((type, data), ...)``."""


def llm_terminal(
    d: Directive, result: Ok[Any] | Err, attempts: int, duration_ms: float
) -> tuple[tuple[str, Any], ...]:
    """``ai.usage`` (successful calls only), then ``ai.llm.response``."""
    response = (LLM_RESPONSE, LLMResponseData(result=result, attempts=attempts))
    if isinstance(result, Err):
        return (response,)
    usage = result.payload.usage
    return (USAGE, UsageData(usage=usage, model=result.payload.model)), response


def embed_terminal(
    d: Directive, result: Ok[Any] | Err, attempts: int, duration_ms: float
) -> tuple[tuple[str, Any], ...]:
    """``ai.embed.result``."""
    return ((EMBED_RESULT, EmbedResultData(result=result, attempts=attempts)),)


def tool_terminal(
    d: Directive, result: Ok[Any] | Err, attempts: int, duration_ms: float
) -> tuple[tuple[str, Any], ...]:
    """``ai.tool.result`` (tools, child runs, custom kinds)."""
    data = ToolResultData(
        tool_name=tool_name_of(d),
        result=result,
        attempts=attempts,
        duration_ms=round(duration_ms, 3),
    )
    return ((TOOL_RESULT, data),)


def program_terminal(
    d: Directive, result: Ok[Any] | Err, attempts: int, duration_ms: float
) -> tuple[tuple[str, Any], ...]:
    """``ai.program.result`` (``Ok(ProgramOutput)`` or the infrastructure's ``Err``)."""
    data = ProgramResultData(result=result, attempts=attempts, duration_ms=round(duration_ms, 3))
    return ((PROGRAM_RESULT, data),)


def request_error_terminal(
    d: Directive, result: Ok[Any] | Err, attempts: int, duration_ms: float
) -> tuple[tuple[str, Any], ...]:
    """``ai.request.error`` (a rejected request)."""
    reason = d.reason if isinstance(d, EmitRequestError) else ""
    if isinstance(result, Err):
        error = result.error
    else:  # pragma: no cover - EmitRequestError is always answered with its error
        error = ErrorEnvelope.make("internal", "a request error directive succeeded")
    return ((REQUEST_ERROR, RequestErrorData(error=error, reason=reason)),)


_BUILTIN: dict[type[Any], Terminal] = {
    LLMGenerate: llm_terminal,
    LLMEmbed: embed_terminal,
    EmitRequestError: request_error_terminal,
    RunProgram: program_terminal,
}


class TerminalTable(dict[type[Any], Terminal]):
    """The terminal of each directive class (see the module docstring): ``table[cls]``,
    decided once per class (by its nearest base class with a terminal of its own).

    Args:
        tool_kinds: directive classes with a handler of their own (``Runtime(handlers=...)``):
            they end with ``ai.tool.result`` whatever their base class.
    """

    def __init__(self, tool_kinds: Iterable[type[Any]] = ()) -> None:
        super().__init__(_BUILTIN)
        for cls in tool_kinds:
            self[cls] = tool_terminal

    def __missing__(self, cls: type[Any]) -> Terminal:
        for base in cls.__mro__[1:]:
            found = self.get(base)
            if found is not None:
                break
        else:
            found = tool_terminal
        if len(self) < 1024:  # bounded: classes are few
            self[cls] = found
        return found


def tag_of(cls: type[Any]) -> str:
    """The msgspec tag of a directive class (its name when it has none)."""
    config = getattr(cls, "__struct_config__", None)
    return str(config.tag) if config is not None and config.tag else cls.__name__


def tool_name_of(d: Directive) -> str:
    """The ``tool_name`` a directive's ``ai.tool.result`` carries: its ``tool_name`` field,
    else its ``agent`` field (child runs), else its tag."""
    name = getattr(d, "tool_name", None) or getattr(d, "agent", None)
    return str(name) if name else tag_of(type(d))


_AS_IS = (str, int, bool, type(None))
_ENCODER = msgspec.json.Encoder()
_RESULT: msgspec.json.Decoder[Ok[Any] | Err] = msgspec.json.Decoder(Ok[Any] | Err)


def journal_safe(result: Ok[Any] | Err) -> Ok[Any] | Err:
    """``result`` exactly as the journal reads it back (tuples become lists, ...).

    For results made by code the runtime does not control (a custom handler, a strategy's
    outcome): a value JSON cannot hold is replaced by what :func:`~ptcflow.signals.json_safe`
    makes of it, an envelope that is not one by an ``internal`` error that says so.

    Example:
        >>> journal_safe(Ok(payload=(1, 2)))
        Ok(payload=[1, 2], effects=())
    """
    if type(result) is Ok and not result.effects and type(result.payload) in _AS_IS:
        return result  # a plain string or number reads back as itself
    try:
        return _RESULT.decode(_ENCODER.encode(result))
    except (TypeError, ValueError, OverflowError, msgspec.ValidationError):
        pass
    if isinstance(result, Ok):
        safe = Ok(payload=json_safe(result.payload), effects=tuple(map(json_safe, result.effects)))
        return _RESULT.decode(_ENCODER.encode(safe))
    error = result.error
    return Err(
        error=ErrorEnvelope.make(
            str(error.type) if isinstance(error.type, str) else "internal",
            str(error.message),
            {"details": error.details} if not isinstance(error.details, dict) else error.details,
            retryable=error.retryable if isinstance(error.retryable, bool) else False,
        ),
        effects=tuple(map(json_safe, result.effects)),
    )
