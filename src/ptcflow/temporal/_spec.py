"""The messages between a client, its workflows and their activities (plain msgspec data).

Everything crosses Temporal as JSON through :mod:`ptcflow.temporal._converter`: a run's
:class:`RunSpec` (the workflow's input), an :class:`ActivityCall` (one directive to
perform) and its :class:`ActivityOutcome` (the directive's signals, as journal lines), a
:class:`Checkpoint` (what a workflow carries when it continues as new) and the
:class:`RunResult`. Classes that are not ptcflow's own (a custom directive, a strategy's
state) travel as their import path plus their JSON.
"""

from __future__ import annotations

import zlib
from typing import Any

import msgspec

from ptcflow.directives import Directive
from ptcflow.runtime import RetryPolicy, Step
from ptcflow.signals import ErrorEnvelope, Signal, ToolSpec, Usage, decode_signal, encode_signal
from ptcflow.temporal._options import TemporalOptions
from ptcflow.temporal._refs import AgentRef, ToolRef, load

__all__ = (
    "ActivityCall",
    "ActivityOutcome",
    "Checkpoint",
    "RunResult",
    "RunSpec",
    "SignalPage",
    "Typed",
    "decode_lines",
    "directive_of",
    "encode_lines",
    "payload_size",
)

_ENCODER = msgspec.json.Encoder()


class Typed(msgspec.Struct, frozen=True, kw_only=True):
    """A value of a class named by import path, as JSON (a directive, a strategy state)."""

    path: str
    json: msgspec.Raw

    @classmethod
    def of(cls, value: Any) -> Typed:
        """Wrap ``value`` (its class must be importable by the reader)."""
        kind = type(value)
        return cls(
            path=f"{kind.__module__}:{kind.__qualname__}", json=msgspec.Raw(_ENCODER.encode(value))
        )

    def value(self) -> Any:
        """Decode the value with its class (imported here)."""
        return msgspec.json.decode(self.json, type=load(self.path))


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """A run between two workflow executions (continue-as-new): the strategy's state,
    the directives it asked for that had not started, the core's counters."""

    state: Typed
    pending: tuple[Typed, ...]
    seq: int
    usage: Usage
    turns: int
    tool_calls: int
    started_at: float
    signals: tuple[msgspec.Raw, ...] = ()
    """The latest signals (journal lines), for observers still reading them."""
    recorded: tuple[msgspec.Raw, ...] = ()
    """Every signal so far, when the run records them (``record=True``)."""
    children: tuple[str, ...] = ()


class RunSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A workflow's input: one run to drive to its Step."""

    agent: AgentRef
    input: Any = None
    run_id: str
    request_id: str | None = None
    parent_run_id: str | None = None
    name: str | None = None
    tools: tuple[ToolRef, ...] = ()
    tool_specs: tuple[ToolSpec, ...] = ()
    agents: dict[str, AgentRef] = {}
    deadline: float | None = None
    """Epoch seconds (``workflow.time()``'s clock) when the run times out."""
    options: TemporalOptions = TemporalOptions()
    retry: RetryPolicy = RetryPolicy()
    observe: bool = False
    """Keep the signals for observers (the client's bus)."""
    record: bool = False
    traceparent: str | None = None
    checkpoint: Checkpoint | None = None


class ActivityCall(msgspec.Struct, frozen=True, kw_only=True):
    """One directive for an activity worker to perform (one attempt per execution)."""

    directive: Typed
    run_id: str
    parent_run_id: str | None = None
    tool: ToolRef | None = None
    tools: tuple[ToolRef, ...] = ()
    """The tools of the directive's sub-calls (a program's ``tool_names``; all the run's
    tools for a custom kind), loaded by the activity as ``tool`` is."""
    snapshot: Any = None
    """The strategy's snapshot for a tool that takes a ``ToolContext``."""
    max_attempts: int = 1
    """Attempts the directive's retry policy allows (the last one returns its failure)."""
    max_payload_bytes: int | None = None
    """The run's limit on the outcome's size (``TemporalOptions.max_payload_bytes``)."""
    record: bytes | None = None
    """The sub-calls an earlier activity of this directive completed before its worker was
    lost (its last heartbeat details): they are answered from it, not called again."""


class ActivityOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What performing a directive published: its intermediate signals, its sub-calls'
    signals and its terminal signal(s), as journal lines in order; or the ``error`` that
    answers it when it could not be performed (a tool that cannot be loaded, a result too
    large for history)."""

    signals: tuple[msgspec.Raw, ...] = ()
    traceparent: str | None = None
    attempt: int = 1
    error: ErrorEnvelope | None = None


class SignalPage(msgspec.Struct, frozen=True, kw_only=True):
    """A workflow's signals after a ``seq`` (its observers' query), and its child runs."""

    signals: tuple[msgspec.Raw, ...] = ()
    children: tuple[str, ...] = ()
    done: bool = False


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """A workflow's result: the run's Step (without signals) and, when recorded, its
    signals as journal lines."""

    step: Step
    signals: tuple[msgspec.Raw, ...] = ()

    def to_step(self) -> Step:
        """The Step, with its recorded signals decoded."""
        if not self.signals:
            return self.step
        return msgspec.structs.replace(self.step, signals=tuple(decode_lines(self.signals)))


def encode_lines(signals: Any) -> tuple[msgspec.Raw, ...]:
    """Signals as journal lines (exact: :func:`decode_lines` gives them back typed)."""
    return tuple(msgspec.Raw(encode_signal(s)) for s in signals)


def decode_lines(lines: Any) -> list[Signal]:
    """Journal lines back to typed signals."""
    return [decode_signal(bytes(line)) for line in lines]


def directive_of(typed: Typed) -> Directive:
    """Decode a directive (its class imported by path)."""
    value = typed.value()
    assert isinstance(value, Directive)
    return value


def payload_size(value: Any, limit: int) -> int:
    """The size ``value`` takes in history (compressed when it is large); exact up to
    ``limit``, and only compressed when its JSON is larger than ``limit``."""
    raw = _ENCODER.encode(value)
    if len(raw) <= limit:
        return len(raw)
    return len(zlib.compress(raw, 6))
