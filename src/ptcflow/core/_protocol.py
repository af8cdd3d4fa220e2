"""The strategy protocol: a pure, deterministic state machine.

``init`` and ``handle`` return ``(state, directives)``. They never await, read a clock,
draw random numbers, mint uuids, read the environment or call telemetry: ids come from
``RunInfo.run_id`` plus counters kept in the state, and time arrives on signals. State is
data only (frozen msgspec structs, tuples), so a run can be serialized, replayed from its
journal, and run unchanged as the body of a durable workflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import msgspec

from ptcflow.core._trace import StepFail, Trace
from ptcflow.directives import Directive
from ptcflow.signals import (
    Compaction,
    Err,
    Message,
    Ok,
    ProgramMemory,
    RequestStartedData,
    Signal,
    Summary,
    ToolSpec,
    Usage,
)

__all__ = ("Outcome", "RunInfo", "Strategy", "Transition", "run_info_of")

S = TypeVar("S")

Transition = tuple[S, Sequence[Directive]]
"""What ``init`` and ``handle`` return: the next state and the directives to perform."""


class RunInfo(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What a strategy knows about its run when it starts."""

    run_id: str
    input: Any = None
    request_id: str | None = None
    parent_run_id: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    """The tools this run may call (name, description, input schema), as data."""
    history: tuple[Message, ...] = ()
    """The conversation before this run (``rt.run(..., history=...)``, or a session's),
    checked: every tool call has its result. A strategy that continues conversations
    puts it before the run's own messages and has a ``conversation(state)`` method
    returning history plus its messages (the Step's ``messages``)."""
    memory: ProgramMemory | None = None
    """What the conversation's earlier PTC-Lisp programs kept (``memory=``, or a
    session's), or ``None`` outside such a conversation. A strategy that keeps memory
    starts its programs from it and has a ``kept_memory(state)`` method returning what they
    kept by the end (the Step's ``memory``)."""
    compaction: Compaction | None = None
    """How to shrink ``history`` before sending it (``compaction=``): a strategy that
    keeps a conversation plans it with :func:`ptcflow.sessions.plan_compaction` (and makes
    the summarizing model call first when one is due); ``Step.messages`` stays whole."""
    summary: Summary | None = None
    """An earlier summary of ``history`` (a session's last, or ``summary=``), which the
    compaction reuses or extends when it still covers the history's start."""


class Outcome(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """How a run ended: the result envelope, summed usage, and why it stopped.

    SubAgent strategies also describe the run for its :class:`~ptcflow.runtime.Step`:
    ``fail`` (why it failed), ``trace`` (every turn) and ``signature`` (the output
    signature, so a Step can be the next agent's context). The runtime copies them into
    the Step of a strategy whose ``describes_step`` attribute is true, from the outcome of
    the state after the run's end signal was folded in (so a cancelled or timed-out run
    keeps its trace): the outcome that ended the run when the end signal left an immutable
    state as it was, else ``outcome()`` asked once more. A strategy whose ``turn_spans`` class attribute is true
    numbers its turns with the directives' ``iteration``; the runtime then opens a span per
    turn (data the runtime reads: the strategy itself never calls telemetry).
    """

    result: Ok[Any] | Err
    usage: Usage = Usage()
    reason: str = ""
    fail: StepFail | None = None
    trace: Trace | None = None
    signature: str | None = None


@runtime_checkable
class Strategy(Protocol[S]):
    """A pure agent state machine (see the module docstring for the rules)."""

    @property
    def name(self) -> str:
        """The strategy's name (``invoke_agent {name}`` spans, logs)."""
        ...

    def init(self, run: RunInfo) -> tuple[S, Sequence[Directive]]:
        """Return the first state and directives for a run with ``run.input``."""
        ...

    def handle(self, state: S, signal: Signal) -> tuple[S, Sequence[Directive]]:
        """Fold one signal of this run into the state; ignore what does not apply."""
        ...

    def outcome(self, state: S) -> Outcome | None:
        """Return the outcome once the state is terminal, else ``None``."""
        ...

    def snapshot(self, state: S) -> Any:
        """Return a JSON-safe view of the state (tools receive it as ``context["state"]``)."""
        ...


def run_info_of(start: Signal, tools: tuple[ToolSpec, ...] | None = None) -> RunInfo:
    """The :class:`RunInfo` a run started with, from its ``ai.request.started`` signal (a
    journal replays, a paused run resumes, from the same one the live run had).

    ``tools``: the run's tool specs (default: those the signal records).
    """
    data = start.data
    if not isinstance(data, RequestStartedData):
        return RunInfo(
            run_id=start.run_id,
            request_id=start.request_id,
            parent_run_id=start.parent_run_id,
            tools=tools or (),
        )
    return RunInfo(
        run_id=start.run_id,
        input=data.input,
        request_id=start.request_id,
        parent_run_id=start.parent_run_id,
        tools=tuple(data.tools) if tools is None else tools,
        history=data.history,
        memory=data.memory,
        compaction=data.compaction,
        summary=data.summary,
    )
