"""Resuming a paused run: ``rt.resume(step, decisions, agent=...)``.

A paused run's state is its journal (``PausedRun``): the run is rebuilt by folding the
journal through its strategy again (strategies are pure), the decisions are checked
against the calls that wait, and the run continues under its own id from where it
stopped, the waiting calls first, each with its decision. Time spent waiting does not
count: the run's deadline counts on from the time it had been active.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from ptcflow.core import (
    AlreadyDecidedError,
    Approve,
    Deny,
    NotPausedError,
    PausedRun,
    PauseInUseError,
    PauseMismatchError,
    Rebuilt,
    Step,
    Supply,
    TamperedPauseError,
    UnknownCallError,
    WrongDecisionError,
    open_programs,
    rebuild,
)
from ptcflow.directives import ToolExec
from ptcflow.runtime._approvals import EXPIRED
from ptcflow.runtime._config import Unset
from ptcflow.runtime._driver import drive
from ptcflow.runtime._options import RunOptions
from ptcflow.runtime._run import LocalRun
from ptcflow.signals import (
    REQUEST_PAUSED,
    REQUEST_RESUMED,
    USAGE,
    Err,
    PendingCall,
    RequestPausedData,
    RequestResumedData,
    Signal,
    UsageData,
    UsageSpent,
    json_safe,
)

__all__ = ("begin_resumed", "resume_child", "resume_run")

_REMEMBERED: Final = 10_000
"""Pauses a Runtime remembers having resumed (a second resume of one is refused)."""
_DECISIONS: Final = (Approve, Deny, Supply)


def paused_of(step: Any) -> PausedRun:
    """The :class:`PausedRun` of ``step`` (a paused Step, or a PausedRun itself)."""
    if isinstance(step, PausedRun):
        return step
    if not isinstance(step, Step):
        raise NotPausedError(
            f"rt.resume() takes the paused Step a run returned (or its paused_run), got "
            f"{type(step).__name__}"
        )
    if not step.paused or step.paused_run is None:
        state = "succeeded" if step.ok else f"failed ({step.reason or 'failed'})"
        raise NotPausedError(
            f"run {step.run_id} is not paused: it {state}, so there is nothing to resume; "
            "resume the Step of a run whose step.paused is true"
        )
    return step.paused_run


async def resume_run(
    rt: Any,
    step: Step | PausedRun,
    decisions: Mapping[str, Any],
    agent: Any,
    options: RunOptions,
) -> Step:
    """Continue the paused run of ``step`` with ``decisions`` on Runtime ``rt`` (see
    ``Runtime.resume``, which calls this; ``rt`` is not typed here: this module sits below
    ``_runtime``)."""
    rt._check_open()
    paused = paused_of(step)
    paused.check(rt.pause_key)
    signals = paused.signals()
    start = _start_of(paused, signals)
    if paused.digest in rt._resuming:
        raise PauseInUseError(
            f"this pause of run {paused.run_id} is being resumed already, or was resumed by "
            "this Runtime: resume the Step the last resume returned (a pause is resumed once, "
            "so no call runs twice)"
        )
    timeout = options.timeout
    if isinstance(timeout, Unset):
        ms = rt.limits.mission_timeout_ms
        timeout = None if ms is None else ms / 1000.0
    if timeout is not None:  # the time it waited does not count; what it ran does
        timeout = max(timeout - paused.elapsed_ms / 1000.0, 0.001)
    chosen = msgspec.structs.replace(
        options, run_id=paused.run_id, request_id=start.request_id, timeout=timeout
    )
    run = _reopen(rt, agent, start, chosen)
    rebuilt = _rebuilt(run, paused, signals)
    pending = waiting(paused, rebuilt)
    if isinstance(step, Step):
        _check_shown(step, paused, pending)
    checked = _check_decisions(paused, rebuilt, pending, decisions)
    rt._resuming[paused.digest] = None
    while len(rt._resuming) > _REMEMBERED:
        del rt._resuming[next(iter(rt._resuming))]
    _restore(run, paused, signals, rebuilt, checked)
    over = _count_on(run, paused, signals, rebuilt)
    if run.resumed is not None:  # an agent's plan counts on too (a mission's turns)
        run.resumed(paused)
    now = run.executor.clock()
    begin_resumed(run, rebuilt, tuple(checked), now - paused.elapsed_ms / 1000.0)
    if over is not None:  # the tree had used the resume's budget already: nothing more runs
        run.cancel(over, now)
    return await drive(run, rt._runs)


def _count_on(
    run: LocalRun, paused: PausedRun, signals: list[Signal], rebuilt: Rebuilt
) -> Err | None:
    """The budget (and the run's cost) goes on from what was used before the pause: the
    whole tree's counts, journaled on the run's ``ai.request.paused`` (a journal without
    them, from an older ptcflow: the run's own). The error when they pass the budget."""
    if run.costs is not None:  # Step.cost_usd: the run's own calls, before the pause too
        _price_own(run, signals, paused.run_id)
    meter = run.meter
    if meter is None:
        return None
    spent = _spent_of(signals, paused.run_id)
    if spent is None:
        meter.add_counts(
            requests=rebuilt.turns,
            tool_calls=rebuilt.tool_calls,
            input_tokens=rebuilt.usage.input_tokens,
            output_tokens=rebuilt.usage.output_tokens,
        )
        return None
    over = meter.carry(spent, None if run.costs is None else run.costs.prices)
    meter.carried = True
    meter.tool_calls -= started_again(rebuilt, paused)
    return over


def _spent_of(signals: list[Signal], run_id: str) -> UsageSpent | None:
    """What the tree had used, as the run's last ``ai.request.paused`` says."""
    for s in reversed(signals):
        if s.run_id == run_id and s.type == REQUEST_PAUSED:
            data = s.data
            return data.spent if isinstance(data, RequestPausedData) else None
    return None


def _price_own(run: LocalRun, signals: list[Signal], run_id: str) -> None:
    """Price the run's own model calls made before the pause (``Step.cost_usd``)."""
    costs = run.costs
    assert costs is not None
    for s in signals:
        if s.run_id == run_id and s.type == USAGE and isinstance(s.data, UsageData):
            costs.add(s.data.model, s.data.usage)


def started_again(rebuilt: Rebuilt, paused: PausedRun) -> int:
    """The tool calls of a rebuilt run that are started again as it resumes, counted on
    the meter once already before the pause: its open tool calls (they wait, or run a
    paused child) and its programs' calls that wait (or run a paused child)."""
    opened = rebuilt.open
    tools = sum(1 for d in opened.values() if isinstance(d, ToolExec))
    subcalls = {k for k in (*rebuilt.pending, *paused.children) if k not in opened}
    return tools + len(subcalls)


def _reopen(rt: Any, agent: Any, start: Signal, options: RunOptions) -> LocalRun:
    """The run of ``agent`` again, on the input it started with (its journal's
    ``ai.request.started``): a SubAgent's context is read from there. A ``context=``
    given again (an agent option) is used instead, and must be the same.

    Raises:
        PauseMismatchError: the context given is not the one the run started with.
    """
    data: Any = start.data
    if options.agent_options.get("context") is None:
        return rt._open(agent, data.input, options)  # type: ignore[no-any-return]
    run: LocalRun = rt._open(agent, None, options)
    again = msgspec.json.decode(msgspec.json.encode(json_safe(run.core.input)))
    if again != data.input:
        raise PauseMismatchError(
            f"paused run {start.run_id} started with another context than the context= "
            "given to resume it; leave context= out (the run's own is in its journal), or "
            "give the same one"
        )
    return run


def resume_child(
    child: LocalRun, paused: PausedRun, decisions: dict[str, Any], otel_parent: Any
) -> None:
    """Start ``child`` (an agent used as a tool, planned again by its parent's call) from
    its paused run ``paused``, with ``decisions`` on its calls (checked by the top-level
    resume; their ids relative to the child). The caller drives it (``drive(child)``).

    Raises:
        PauseMismatchError: the child is not the run that paused (another agent, strategy
            or tools, another run id), or its journal does not lead where it says.
        TamperedPauseError: its journal is damaged.
    """
    if paused.run_id != child.run_id:
        raise PauseMismatchError(
            f"the paused child run {paused.run_id!r} is resumed by the call that runs "
            f"{child.run_id!r}: the parent's journal and its paused children do not match"
        )
    signals = paused.signals()
    rebuilt = _rebuilt(child, paused, signals)
    _restore(child, paused, signals, rebuilt, decisions)
    if child.costs is not None:
        _price_own(child, signals, paused.run_id)
    meter = child.meter
    if meter is not None and meter.carried:  # its started calls were counted: once
        meter.tool_calls -= started_again(rebuilt, paused)
    if child.resumed is not None:  # a child that started a mission (called by a strategy)
        child.resumed(paused)
    now = child.executor.clock()
    begin_resumed(child, rebuilt, tuple(decisions), now - paused.elapsed_ms / 1000.0, otel_parent)


def _rebuilt(run: LocalRun, paused: PausedRun, signals: list[Signal]) -> Rebuilt:
    """``run``'s state folded back from ``paused``'s journal, checked against it."""
    _check_agent(run, paused)
    rebuilt = rebuild(run.strategy, signals, run_id=paused.run_id)
    _check_open_calls(paused, rebuilt)
    return rebuilt


def _restore(
    run: LocalRun,
    paused: PausedRun,
    signals: list[Signal],
    rebuilt: Rebuilt,
    decisions: dict[str, Any],
) -> None:
    """Give the rebuilt ``run`` what it resumes with: its decisions, its open programs'
    records, its paused children (resumed in place by the calls that ran them) and its
    journal so far (it records on from there)."""
    run.decisions = decisions
    run.program_records = open_programs(rebuilt) or None
    run.paused_children = dict(paused.children)
    run.core.recorded = [s for s in signals if s.run_id == paused.run_id]


def begin_resumed(
    run: LocalRun,
    rebuilt: Rebuilt,
    decided: tuple[str, ...],
    started: float,
    otel_parent: Any = None,
) -> None:
    """Start ``run`` from its rebuilt state: ``ai.request.resumed``, then the open
    directives again (each waiting call meets its decision when it is performed)."""
    run.begin_counted(otel_parent, resumes=_last_traceparent(run))
    core = run.core
    core.seq = rebuilt.seq
    core.started_at = started
    core.note(REQUEST_RESUMED, RequestResumedData(decided=decided))
    core.resume(
        run.executor.clock(),
        state=rebuilt.state,
        directives=list(rebuilt.open.values()),
        seq=core.seq,
        usage=rebuilt.usage,
        turns=rebuilt.turns,
        tool_calls=rebuilt.tool_calls,
        started_at=started,
    )
    run.carry_out()


def _last_traceparent(run: LocalRun) -> str:
    """The ``traceparent`` of the span of the run's last segment, as its last run-level
    signal (``ai.request.paused``) carries it (``""``: it was not traced)."""
    for signal in reversed(run.core.recorded or ()):
        if signal.run_id == run.run_id and signal.call_id is None:
            return signal.traceparent or ""
    return ""


def _start_of(paused: PausedRun, signals: list[Signal]) -> Any:
    for s in signals:
        if s.run_id == paused.run_id and s.type == "ai.request.started":
            return s
    raise PauseMismatchError(
        f"the journal of paused run {paused.run_id!r} has no ai.request.started: it was cut "
        "before the run began; resume the Step the run returned, or its whole journal"
    )


def _check_agent(run: LocalRun, paused: PausedRun) -> None:
    cls = type(run.strategy)
    strategy = f"{cls.__module__}.{cls.__qualname__}"
    tools = tuple(sorted(spec.name for spec in run.core.tool_specs))
    problems = []
    if strategy != paused.strategy:
        problems.append(f"its strategy is {paused.strategy}, not {strategy}")
    if run.name != paused.agent:
        problems.append(f"its agent is named {paused.agent!r}, not {run.name!r}")
    if tools != paused.tools:
        problems.append(f"its tools are {list(paused.tools)}, not {list(tools)}")
    if problems:
        raise PauseMismatchError(
            f"paused run {paused.run_id} belongs to another agent: {'; '.join(problems)}; "
            "resume it with the agent (and tools) it ran with"
        )


def _check_shown(step: Step, paused: PausedRun, pending: Mapping[str, PendingCall]) -> None:
    """The calls the Step shows are those its journal says wait (``pending``: a client that
    changed the arguments it was shown must not get a decision on other ones)."""
    shown = {p.call_id: (p.tool, p.arguments) for p in step.pending}
    known = {k: (p.tool, p.arguments) for k, p in pending.items()}
    if shown != known:
        raise TamperedPauseError(
            f"paused run {paused.run_id}: the Step's pending calls differ from those its "
            "journal says wait (the Step was changed): resume the Step as the run returned it"
        )


def _check_decisions(
    paused: PausedRun,
    rebuilt: Rebuilt,
    pending: Mapping[str, PendingCall],
    decisions: Mapping[str, Any],
) -> dict[str, Any]:
    """The decisions by call id, checked against the calls that wait (``pending``); plus
    ``EXPIRED`` for undecided calls past their ``approval_timeout``."""
    if not isinstance(decisions, Mapping):
        raise WrongDecisionError(
            "rt.resume() takes the decisions as a mapping {call_id: ptcflow.Approve() | "
            f"ptcflow.Deny(reason) | ptcflow.Supply(value)}}, got {type(decisions).__name__}"
        )
    checked: dict[str, Any] = {}
    for call_id, decision in decisions.items():
        if call_id not in pending:
            if _decided(paused, rebuilt, call_id):
                raise AlreadyDecidedError(
                    f"call {call_id!r} of run {paused.run_id} was decided already (by an "
                    "earlier resume); decide only the calls step.pending lists"
                )
            listed = ", ".join(repr(c) for c in pending) or "none"
            raise UnknownCallError(
                f"call {call_id!r} is not waiting in paused run {paused.run_id}; the calls "
                f"that wait are: {listed}"
            )
        if not isinstance(decision, _DECISIONS):
            raise WrongDecisionError(
                f"the decision on call {call_id!r} must be ptcflow.Approve(), "
                f"ptcflow.Deny(reason) or ptcflow.Supply(value), got {decision!r}"
            )
        call = pending[call_id]
        if isinstance(decision, Approve) and call.kind == "deferred":
            raise WrongDecisionError(
                f"call {call_id!r} is of the deferred tool {call.tool!r}, which has no body "
                "in this process: give its result with ptcflow.Supply(value), or "
                "ptcflow.Deny(reason)"
            )
        checked[call_id] = decision
    now = utcnow()
    for call_id, call in pending.items():
        expires = call.expires_at
        if (
            call_id not in checked
            and expires is not None
            and datetime.datetime.fromisoformat(expires) <= now
        ):
            checked[call_id] = EXPIRED
    return checked


def utcnow() -> datetime.datetime:
    """The wall clock approval timeouts are read on (a function: tests replace it)."""
    return datetime.datetime.now(datetime.UTC)


def waiting(paused: PausedRun, rebuilt: Rebuilt) -> dict[str, PendingCall]:
    """The calls that wait in ``paused``, by call id: its own run's and its paused
    children's (their ids prefixed with the call that runs the child)."""
    out = dict(rebuilt.pending)
    for call_id, child in paused.children.items():
        out.pop(call_id, None)
        for signal in child.signals():
            data = signal.data
            if signal.type == "ai.request.paused" and signal.run_id == child.run_id:
                for p in data.pending:
                    key = f"{call_id}/{p.call_id}"
                    out[key] = msgspec.structs.replace(p, call_id=key)
    return out


def _decided(paused: PausedRun, rebuilt: Rebuilt, call_id: str) -> bool:
    return call_id in rebuilt.decided


def _check_open_calls(paused: PausedRun, rebuilt: Rebuilt) -> None:
    """Each waiting call, and each paused child, belongs to a directive the rebuilt
    strategy still waits for."""
    for call_id in (*rebuilt.pending, *paused.children):
        if not any(call_id == d or call_id.startswith(f"{d}/") for d in rebuilt.open):
            raise PauseMismatchError(
                f"paused run {paused.run_id}: call {call_id!r} waits in its journal, but the "
                "strategy, folded over the journal again, does not wait for it (the agent "
                "changed since it paused, or the journal is not this run's)"
            )
    _check_children(paused)


def _check_children(paused: PausedRun) -> None:
    """Each paused child (at any depth) is the run of the call it is kept under (a child
    run's id is ``{parent run id}/{call id}``)."""
    for call_id, child in paused.children.items():
        if child.run_id != f"{paused.run_id}/{call_id}":
            raise PauseMismatchError(
                f"paused run {paused.run_id}: the paused child kept for call {call_id!r} is "
                f"run {child.run_id!r}, which that call did not run (the paused run was "
                "assembled from different runs); resume the Step exactly as the run returned it"
            )
        _check_children(child)
