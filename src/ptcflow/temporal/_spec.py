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

from ptcflow.core import Decision
from ptcflow.directives import Directive
from ptcflow.runtime import RetryPolicy, Step, UsageLimits
from ptcflow.signals import (
    Compaction,
    ErrorEnvelope,
    Message,
    PendingCall as WaitingCall,
    ProgramMemory,
    Signal,
    Summary,
    ToolSpec,
    Usage,
    decode_signal,
    encode_signal,
)
from ptcflow.temporal._options import TemporalOptions
from ptcflow.temporal._refs import AgentRef, ToolRef, load, public_path

__all__ = (
    "ActivityCall",
    "ActivityOutcome",
    "AgentTool",
    "Checkpoint",
    "GuardPlan",
    "MissionBudget",
    "PendingCall",
    "RunResult",
    "RunSpec",
    "SignalPage",
    "Typed",
    "decode_lines",
    "directive_of",
    "encode_lines",
    "payload_size",
    "with_typed_children",
)

_ENCODER = msgspec.json.Encoder()


class Typed(msgspec.Struct, frozen=True, kw_only=True):
    """A value of a class named by import path, as JSON (a directive, a strategy state)."""

    path: str
    json: msgspec.Raw

    @classmethod
    def of(cls, value: Any) -> Typed:
        """Wrap ``value`` (its class must be importable by the reader)."""
        return cls(path=public_path(type(value)), json=msgspec.Raw(_ENCODER.encode(value)))

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
    turns_used: int = 0
    """The mission's model calls so far (a run with a :class:`MissionBudget`)."""
    steps: dict[str, Step] = {}
    """The Steps of the agents the run called so far, by call id (for its trace)."""
    usage_used: UsageBudget | None = None
    """The tree's usage so far (a run with a :class:`UsageBudget`)."""


class MissionBudget(msgspec.Struct, frozen=True, kw_only=True):
    """A mission's turn budget as one of its runs starts: the budget, the turns used."""

    turn_budget: int
    used: int = 0


class UsageBudget(msgspec.Struct, frozen=True, kw_only=True):
    """A run tree's :class:`~ptcflow.UsageLimits` as one of its runs starts (what the
    tree used so far) or ends (what it used then, its own children's included)."""

    limits: UsageLimits
    requests: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Dollars of the tree's priced model calls (a ``max_cost_usd`` budget)."""


class AgentTool(msgspec.Struct, frozen=True, kw_only=True):
    """An agent used as a tool (``SubAgent.as_tool``, an ``LLMTool``), planned on the
    client: what each call of it starts, a child workflow. ``error`` answers every call
    instead when the agent cannot run there (past the mission's ``max_depth``)."""

    name: str
    """The tool's name."""
    agent: str
    """The agent's name (its errors name it)."""
    signature: str | None = None
    """The tool's signature: it validates a call's arguments (the child's context)."""
    expected: str = ""
    """The tool as a signature, for the message of a call with invalid arguments."""
    strategy: AgentRef | None = None
    run_name: str | None = None
    tools: tuple[ToolRef, ...] = ()
    tool_specs: tuple[ToolSpec, ...] = ()
    agent_tools: tuple[AgentTool, ...] = ()
    """The child's own agents used as tools (planned one level deeper)."""
    timeout: float | None = None
    """The agent's own ``mission_timeout`` in seconds (within its caller's time)."""
    turn_budget: int = 20
    """The budget of the mission a call starts when its caller has none (a ReAct run)."""
    error: ErrorEnvelope | None = None
    handoff: str = ""
    """Set on a handoff tool (``ptcflow.handoff``): the next agent's name. A call runs the
    agent as a child workflow given the conversation (through ``input_filter``); its
    answer ends the caller's run."""
    input_filter: str = ""
    """A handoff's input filter, by name: ``""`` (the whole conversation) or
    ``"remove_all_tools"`` (the filters a workflow may run: they are pure)."""
    filter_path: str = ""
    """A handoff's input filter of your own, by import path: a worker runs it (an
    activity), as it runs a tool."""
    continues: bool = False
    """A handoff to a strategy (a ReAct): its input is ``{"continue": True}`` (else a
    SubAgent: the call's arguments, checked by ``signature``, are its context)."""
    caller_tools: bool = False
    """A handoff to a strategy given no tools of its own: it gets the caller's."""


class GuardPlan(msgspec.Struct, frozen=True, kw_only=True):
    """A run's guardrails by reference: each guard's import path, by stage (a worker
    imports and calls it), and each check's deadline in seconds."""

    input: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    timeout_s: float = 10.0


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
    agent_tools: tuple[AgentTool, ...] = ()
    """The run's agents used as tools: their calls are child workflows."""
    mission: MissionBudget | None = None
    """The mission this run belongs to (a SubAgent mission): the workflow counts its
    model calls, and its children's, against the budget."""
    usage: UsageBudget | None = None
    """The run tree's budget (``usage_limits=``) and what the tree used when this run
    started: the workflow counts its model and tool calls, and its children's."""
    salvage: bytes | None = None
    """The record of the last program of an earlier run of the same agent call, which
    failed because its workers were lost: this run's first program answers the calls it
    repeats from it (see ``Driver.salvage``)."""
    history: tuple[Message, ...] = ()
    """The conversation the run continues (``history=``, or its session's messages)."""
    memory: ProgramMemory | None = None
    """What the conversation's earlier programs kept (``memory=``, or its session's)."""
    compaction: Compaction | None = None
    """How the run shrinks ``history`` before sending it (``compaction=``, or its
    session's): the summarizing model call is one more directive of the run."""
    summary: Summary | None = None
    """An earlier summary of the history the compaction may reuse (``summary=``, or its
    session's last)."""
    guards: GuardPlan | None = None
    """The run's guardrails (``guardrails=``): the workflow sends each check to a worker
    and decides from its verdict."""
    handoffs: tuple[str, ...] = ()
    """The agents that handed the conversation on to reach this run, first to last
    (bounded by ``options.max_handoffs``)."""


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
    agent_tools: tuple[str, ...] = ()
    """The program's agents used as tools: a call of one suspends the program."""
    previous: str | None = None
    """The activity id of the directive's previous attempt, which the server gave up (no
    heartbeat): a worker still running or holding its work answers with it."""
    decisions: dict[str, Decision] | None = None
    """The decisions on the calls the directive waited for (a tool that requires
    approval, a deferred tool, a program's such calls), by call id: each is applied where
    its call would start (``Approve`` performs it, ``Deny`` / ``Supply`` answer it)."""
    expired: tuple[str, ...] = ()
    """Calls whose ``approval_timeout`` passed undecided (they end ``approval_expired``)."""
    price: bool = False
    """Price a model call's response on the worker (the run has a ``max_cost_usd``
    budget): the outcome carries its cost."""
    agent_path: tuple[str, ...] = ()
    """The agent names down to the run (``PendingCall.agent`` of the calls that wait)."""


class PendingCall(msgspec.Struct, frozen=True, kw_only=True):
    """A call of an agent used as a tool that a suspended program waits for."""

    index: int
    name: str
    arguments: Any = None


class ActivityOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What performing a directive published: its intermediate signals, its sub-calls'
    signals and its terminal signal(s), as journal lines in order; or the ``error`` that
    answers it when it could not be performed (a tool that cannot be loaded, a result too
    large for history)."""

    signals: tuple[msgspec.Raw, ...] = ()
    traceparent: str | None = None
    attempt: int = 1
    error: ErrorEnvelope | None = None
    pending: tuple[PendingCall, ...] = ()
    """A suspended program: the agent calls it waits for (child workflows), ``signals``
    holding only its completed sub-calls; it runs again with ``record`` extended."""
    record: bytes | None = None
    """A suspended program's completed sub-calls (heartbeat details' format)."""
    priced: bool = False
    """The worker priced the model call (``ActivityCall.price``): ``cost_usd`` is its
    cost, ``None`` when ``model`` has no price in the worker's table."""
    cost_usd: float | None = None
    model: str = ""
    """The model that answered (a priced call)."""
    approvals: tuple[WaitingCall, ...] = ()
    """Calls that wait for a person's decision (``ai.approval.requested`` is in
    ``signals``): the directive is performed again with the decisions, a program with
    ``record`` (its completed sub-calls) so that none runs again."""


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
    turns_used: int = 0
    """The mission's model calls when the run ended (a run with a :class:`MissionBudget`)."""
    usage_used: UsageBudget | None = None
    """The tree's usage when the run ended (a run with a :class:`UsageBudget`)."""
    salvage: bytes | None = None
    """A failed run's record of its last program, which its lost workers failed."""

    def to_step(self) -> Step:
        """The Step, with its recorded signals decoded and its children's Steps typed."""
        step = with_typed_children(self.step)
        if not self.signals:
            return step
        return msgspec.structs.replace(step, signals=tuple(decode_lines(self.signals)))


def with_typed_children(step: Step) -> Step:
    """``step`` with the Steps of the agents it called (``ToolCallTrace.child``, typed
    ``Any``: plain data once it crossed as JSON) typed again, at every level."""
    trace = step.trace
    if trace is None or not any(
        c.child is not None for t in trace.turns for c in t.execution.tool_calls
    ):
        return step
    turns = []
    for turn in trace.turns:
        calls = tuple(
            c
            if c.child is None
            else msgspec.structs.replace(
                c, child=with_typed_children(msgspec.convert(c.child, Step))
            )
            for c in turn.execution.tool_calls
        )
        execution = msgspec.structs.replace(turn.execution, tool_calls=calls)
        turns.append(msgspec.structs.replace(turn, execution=execution))
    return msgspec.structs.replace(step, trace=msgspec.structs.replace(trace, turns=tuple(turns)))


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
