"""Script entries for :class:`~ptcflow.testing.ScriptedLLM`: turns, faults, and the
errors a fault raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from ptcflow.errors import UsageError
from ptcflow.providers import ProviderError
from ptcflow.signals import (
    AUTH,
    PROVIDER_ERROR,
    RATE_LIMITED,
    TRANSIENT,
    ErrorEnvelope,
    ToolCall,
    Usage,
)

__all__ = ("Fault", "ScriptItem", "Turn", "as_turn", "fault_error", "with_ids")

FaultKind = Literal["timeout", "hang", "rate_limited", "transient", "auth", "malformed"]


class Fault(msgspec.Struct, frozen=True, kw_only=True):
    """A failure a scripted turn injects instead of answering.

    Kinds: ``timeout`` (raises ``TimeoutError`` as an HTTP client would), ``hang`` (sleeps
    until the caller's deadline or cancellation), ``rate_limited`` (HTTP 429 with
    ``retry_after`` seconds), ``transient`` (HTTP ``status`` 5xx), ``auth`` (HTTP 401), and
    ``malformed`` (output that cannot be parsed: tool-call arguments that are not JSON).
    """

    kind: FaultKind
    retry_after: float | None = None
    status: int | None = None


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One scripted model answer.

    Attributes:
        text: the answer text.
        tool_calls: tool calls to request (ids are filled in when empty).
        chunks: how :meth:`ScriptedLLM.stream` splits ``text``; default: word by word.
        usage: reported token usage; default: a deterministic estimate from the lengths.
        latency: seconds to wait before answering (the model's latency); default: the
            model's ``latency``.
        fault: fail this turn instead of answering (see :class:`Fault`).
        finish_reason: default ``tool_calls`` when there are tool calls, else ``stop``.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    chunks: tuple[str, ...] | None = None
    usage: Usage | None = None
    latency: float | None = None
    fault: Fault | None = None
    finish_reason: str | None = None


ScriptItem: TypeAlias = str | ToolCall | Sequence[ToolCall] | Turn
"""A script entry: text, one tool call, parallel tool calls, or a full :class:`Turn`."""


def with_ids(calls: tuple[ToolCall, ...], number: int) -> tuple[ToolCall, ...]:
    """The tool calls with ids filled in where empty: ``call_<request>_<index>``."""
    if not calls or all(call.id for call in calls):
        return calls
    return tuple(
        call if call.id else ToolCall(id=f"call_{number}_{i}", name=call.name, input=call.input)
        for i, call in enumerate(calls)
    )


def fault_error(fault: Fault, number: int) -> Exception:
    """The exception a scripted ``fault`` raises for request ``number`` (not ``hang``)."""
    where = f"ScriptedLLM request #{number}"
    kind = fault.kind
    if kind == "timeout":
        return TimeoutError(f"{where}: scripted timeout")
    if kind == "rate_limited":
        return ProviderError(
            ErrorEnvelope.make(
                RATE_LIMITED,
                f"{where}: HTTP 429 Too Many Requests (scripted)",
                {"status": 429, "retry_after": fault.retry_after},
            ),
            retry_after=fault.retry_after,
        )
    if kind == "transient":
        status = fault.status or 503
        return ProviderError(
            ErrorEnvelope.make(TRANSIENT, f"{where}: HTTP {status} (scripted)", {"status": status})
        )
    if kind == "auth":
        return ProviderError(
            ErrorEnvelope.make(AUTH, f"{where}: HTTP 401 Unauthorized (scripted)", {"status": 401})
        )
    return ProviderError(
        ErrorEnvelope.make(
            PROVIDER_ERROR,
            f"{where}: malformed model output (scripted): tool-call arguments are not JSON",
        )
    )


def as_turn(item: Any, number: int) -> Turn:
    """The :class:`Turn` a script entry stands for; a ``UsageError`` for anything else."""
    if isinstance(item, Turn):
        return item
    if isinstance(item, str):
        return Turn(text=item)
    if isinstance(item, ToolCall):
        return Turn(tool_calls=(item,))
    if isinstance(item, Sequence) and all(isinstance(c, ToolCall) for c in item):
        return Turn(tool_calls=tuple(item))
    raise UsageError(
        f"ScriptedLLM entry for request #{number} is a {type(item).__name__}; use text, "
        "ScriptedLLM.tool_call(...), a list of tool calls, or a Turn(...)"
    )
