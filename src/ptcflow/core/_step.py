"""The result of one run: :class:`Step`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import msgspec

from ptcflow.core._pause import PausedRun
from ptcflow.core._protocol import Outcome
from ptcflow.core._trace import StepFail, Trace
from ptcflow.errors import RunError
from ptcflow.signals import (
    ErrorEnvelope,
    Message,
    PendingCall,
    ProgramMemory,
    Signal,
    Summary,
    Usage,
)

__all__ = (
    "Step",
    "step_agent",
    "step_details",
    "step_memory",
    "step_messages",
    "step_parts",
    "step_summary",
)

_NO_DETAILS: Final[Mapping[str, Any]] = MappingProxyType({})


class Step(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """How a run ended.

    Attributes:
        run_id: the run's id (every signal of the run carries it).
        ok: True when the run completed with a value.
        value: the answer (the ``Ok`` payload of the strategy's outcome) or ``None``.
        error: the :class:`~ptcflow.signals.ErrorEnvelope` of a failed run, else ``None``.
        usage: tokens used by every LLM call of the run (child runs not included).
        reason: why the run stopped (``"completed"``, ``"max_iterations"``, ``"cancelled"``...).
        turns: LLM calls performed.
        tool_calls: tool calls answered (``ToolExec``, ``EmitToolError``, child runs).
        duration_ms: wall time of the run.
        signals: every signal of the run, in ``seq`` order, when it was started with
            ``record=True``; otherwise empty.
        fail: why a SubAgent run failed (``reason``, ``message``, ``op``, ``details``);
            ``None`` when it succeeded or for other strategies.
        trace: every turn of a SubAgent run (prompt, response, program, tool calls,
            tokens), kept as the run's ``trace`` option says; ``None`` otherwise.
        signature: the output signature of the SubAgent that produced :attr:`value`
            (passing this Step as the next agent's ``context`` uses it as the context's
            types).
        cost_usd: US dollars of the run's own model calls (child runs not included),
            priced by the Runtime's ``prices``; ``None`` when a model it called has no
            price (see :attr:`unpriced_models`: the cost is unknown, not zero) or when
            the run was not priced.
        unpriced_models: the models the run called that have no price.
        messages: the conversation so far, for a strategy that keeps one (ReAct, the
            JSON mode): the run's history first, then this run's messages (its system
            prompt left out), so ``history=step.messages`` continues it; else empty.
        memory: what a SubAgent's programs kept by the end of a run given a memory
            (``memory=``, or run in a session), so ``memory=step.memory`` carries their
            ``def``s into the conversation's next run; ``None`` otherwise.
        paused: True when the run stopped to wait for decisions on :attr:`pending`
            (``ok`` is false and ``error`` is ``None``: it did not fail). Continue it with
            ``rt.resume(step, {call_id: ptcflow.Approve(), ...})``.
        pending: the calls a paused run waits for (:class:`~ptcflow.signals.PendingCall`:
            ``call_id``, ``tool``, ``arguments``, ``kind``, ``reason``, ``agent`` path).
        paused_run: what a paused run needs to continue (its journal, what it belongs to,
            a digest): the Step round-trips through ``msgspec.json`` and resumes in
            another process. ``None`` unless paused.
            Whole even when a compaction sent less of it.
        summary: the summary a compaction sent in place of the history's older messages
            (made by this run, or an earlier one reused); ``None`` when none was sent.
            ``summary=step.summary`` lets the next run reuse it (a session does so itself).
        agent: the agent that answered: the run's own agent name, or, when the run handed
            its conversation on (a handoff tool, see ``ptcflow.handoff``), the name of the
            agent that answered at the end of the chain.

    Example:
        >>> Step(run_id="r", ok=True, value=5).unwrap()
        5
    """

    run_id: str
    ok: bool
    value: Any = None
    error: ErrorEnvelope | None = None
    usage: Usage = Usage()
    reason: str = ""
    turns: int = 0
    tool_calls: int = 0
    duration_ms: float = 0.0
    signals: tuple[Signal, ...] = ()
    fail: StepFail | None = None
    trace: Trace | None = None
    signature: str | None = None
    cost_usd: float | None = None
    unpriced_models: tuple[str, ...] = ()
    messages: tuple[Message, ...] = ()
    memory: ProgramMemory | None = None
    paused: bool = False
    pending: tuple[PendingCall, ...] = ()
    paused_run: PausedRun | None = None
    summary: Summary | None = None
    agent: str = ""

    def __repr__(self) -> str:
        """Compact: the value (shortened), why it ended, turns and tokens; the trace,
        signals and prompts stay on their fields (``step.trace``,
        ``ptcflow.agent.format_trace(step)``)."""
        parts = [f"run_id={self.run_id!r}", f"ok={self.ok}"]
        if self.ok or self.value is not None:
            parts.append(f"value={_short(repr(self.value))}")
        if self.error is not None:
            parts.append(f"error={self.error.type}: {_short(self.error.message)}")
        if self.reason:
            parts.append(f"reason={self.reason!r}")
        if self.fail is not None:
            parts.append(f"fail={self.fail.reason!r}")
        if self.paused:
            parts.append(f"pending=<{', '.join(p.call_id for p in self.pending)}>")
        if self.turns:
            parts.append(f"turns={self.turns}")
        if self.tool_calls:
            parts.append(f"tool_calls={self.tool_calls}")
        usage = self.usage
        if usage.input_tokens or usage.output_tokens:
            parts.append(f"tokens={usage.input_tokens}+{usage.output_tokens}")
        if self.trace is not None:
            parts.append(f"trace=<{len(self.trace.turns)} turn(s)>")
        if self.signals:
            parts.append(f"signals=<{len(self.signals)}>")
        return f"Step({', '.join(parts)})"

    def unwrap(self) -> Any:
        """Return :attr:`value`, or raise :class:`~ptcflow.errors.RunError` if the run failed.

        Raises:
            RunError: the run failed (``.error`` holds its envelope), or it is paused
                (``.error`` is ``None``; see :attr:`pending`).
        """
        if self.ok:
            return self.value
        if self.paused:
            calls = ", ".join(f"{p.call_id} ({p.tool})" for p in self.pending)
            raise RunError(
                f"run {self.run_id} is paused: it waits for decisions on {calls}; continue it "
                "with rt.resume(step, {call_id: ptcflow.Approve() | ptcflow.Deny(reason) | "
                "ptcflow.Supply(value)})"
            )
        err = self.error
        text = f"{err.type}: {err.message}" if err is not None else "the run failed"
        raise RunError(f"run {self.run_id} failed: {text}", err)


_REPR_WIDTH: Final = 200


def _short(text: str) -> str:
    return text if len(text) <= _REPR_WIDTH else text[: _REPR_WIDTH - 3] + "..."


def step_details(strategy: Any, state: Any, outcome: Outcome | None = None) -> Mapping[str, Any]:
    """The Step fields a SubAgent strategy adds (``fail``, ``trace``, ``signature``).

    Empty unless the strategy or its state has a true ``describes_step`` attribute (the
    state's survives wrappers such as ``Recording``); then they come from the outcome of
    the final state (after the end signal): ``outcome`` when the caller has it already
    (the one that ended the run, when the end signal left the state as it was), else
    ``strategy.outcome(state)``.
    """
    if not (getattr(strategy, "describes_step", False) or getattr(state, "describes_step", False)):
        return _NO_DETAILS
    if outcome is None:
        outcome = strategy.outcome(state)
    if outcome is None:
        return _NO_DETAILS
    return {"fail": outcome.fail, "trace": outcome.trace, "signature": outcome.signature}


def step_messages(strategy: Any, state: Any) -> tuple[Message, ...]:
    """The conversation of a finished run: ``strategy.conversation(state)`` for a strategy
    that keeps one, else empty."""
    conversation = getattr(strategy, "conversation", None)
    if conversation is None or state is None:
        return ()
    return tuple(conversation(state))


def step_memory(strategy: Any, state: Any) -> ProgramMemory | None:
    """What a finished run's programs kept: ``strategy.kept_memory(state)`` for a strategy
    that keeps memory across a conversation, else ``None``."""
    kept = getattr(strategy, "kept_memory", None)
    if kept is None or state is None:
        return None
    memory: ProgramMemory | None = kept(state)
    return memory


def step_summary(strategy: Any, state: Any) -> Summary | None:
    """The summary a finished run's compaction sent: ``strategy.compaction_summary(state)``
    for a strategy that compacts, else ``None``."""
    summary = getattr(strategy, "compaction_summary", None)
    if summary is None or state is None:
        return None
    made: Summary | None = summary(state)
    return made


def step_agent(strategy: Any, state: Any, name: str) -> str:
    """The agent that answered a finished run: ``strategy.answered_by(state)`` for a
    strategy that can hand its conversation on (ReAct), when it names one; else ``name``,
    the run's own agent."""
    answered_by = getattr(strategy, "answered_by", None)
    if answered_by is None or state is None:
        return name
    return answered_by(state) or name


StepParts = tuple[tuple[Message, ...], ProgramMemory | None, Summary | None, str, Mapping[str, Any]]
"""What :func:`step_parts` returns: the Step's messages, memory, summary, agent and the
fields a SubAgent adds."""


def step_parts(strategy: Any, state: Any, name: str, outcome: Outcome | None = None) -> StepParts:
    """What a finished run's strategy says about it, asked in one pass (the core builds
    the Step from it): its conversation, kept memory and compaction summary, the agent that
    answered (as :func:`step_messages`, :func:`step_memory`, :func:`step_summary`,
    :func:`step_agent` each ask) and the fields a SubAgent adds (:func:`step_details`)."""
    if state is None:
        return (), None, None, name, step_details(strategy, state, outcome)
    conversation = getattr(strategy, "conversation", None)
    kept = getattr(strategy, "kept_memory", None)
    summary = getattr(strategy, "compaction_summary", None)
    answered_by = getattr(strategy, "answered_by", None)
    messages = () if conversation is None else tuple(conversation(state))
    memory = None if kept is None else kept(state)
    made = None if summary is None else summary(state)
    agent = name if answered_by is None else answered_by(state) or name
    details = _NO_DETAILS
    if getattr(strategy, "describes_step", False) or getattr(state, "describes_step", False):
        if outcome is None:
            outcome = strategy.outcome(state)
        if outcome is not None:
            details = {"fail": outcome.fail, "trace": outcome.trace, "signature": outcome.signature}
    return messages, memory, made, agent, details
