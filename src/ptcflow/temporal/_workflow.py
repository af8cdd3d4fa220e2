"""The workflow of one agent run: the run core driven by Temporal (``ptcflow.run``).

The body is a thin loop around :class:`~ptcflow.core.RunCore`, the same sans-I/O
core the local anyio driver drives, in the shape of the contract suite's asyncio driver:
after every event it takes the core's work lists, starts each new directive as an activity
(a child workflow for ``RunChild``; ``EmitToolError`` / ``EmitRequestError`` are answered by
the core itself), cancels what the core interrupts, and reports each activity's outcome
(``core.finish``). Only ``temporalio.workflow`` and asyncio are used here: time is
``workflow.now()``, signal ids come from the workflow's seeded random, and tasks complete
in a deterministic order, so a replay of the history rebuilds the very same run.

Cancelling the workflow cancels the run: its activities and child workflows are cancelled,
each pending directive still gets its one terminal signal (``cancelled``), and the
workflow returns the cancelled Step. A long run continues as new at a quiet moment (no
activity in flight), carrying the strategy's state, the directives it asked for and the
core's counters (:class:`~ptcflow.temporal._spec.Checkpoint`).

Tool calls that wait for a person keep the workflow waiting, holding no worker: the
``ptcflow.pending`` query lists them, the ``ptcflow.decide`` update decides them (its
validator refuses an unknown call, a second decision, a decision that does not fit); see
``_approvals`` and ``docs/temporal.md``, "Approvals".
"""

from __future__ import annotations

import bisect
from typing import Any

import msgspec
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ptcflow.core import Decision
    from ptcflow.runtime import Step
    from ptcflow.signals import (
        INTERNAL,
        ErrorEnvelope,
        PendingCall,
        Signal,
        decode_signal,
        encode_signal,
    )
    from ptcflow.temporal._approvals import (
        CHILD_WAITS_SIGNAL,
        DECIDE_UPDATE,
        PENDING_QUERY,
        Approvals,
        ChildWaits,
        Refusal,
    )
    from ptcflow.temporal._drive import RUN_WORKFLOW, Driver
    from ptcflow.temporal._spec import RunResult, RunSpec, SignalPage

__all__ = ("DECIDE_UPDATE", "PENDING_QUERY", "RUN_WORKFLOW", "SIGNALS_QUERY", "AgentWorkflow")

SIGNALS_QUERY = "ptcflow.signals"
_PAGE = 1000


@workflow.defn(name=RUN_WORKFLOW)
class AgentWorkflow:
    """One agent run (see the module docstring); its input is a :class:`RunSpec`."""

    def __init__(self) -> None:
        self._lines: list[msgspec.Raw] = []
        self._seqs: list[int] = []
        self._children: list[str] = []
        self._done = False
        self._approvals = Approvals()

    @workflow.query(name=PENDING_QUERY)
    def pending(self) -> tuple[PendingCall, ...]:
        """The tool calls that wait for a decision now, in the order they asked (the
        calls waiting in child runs after this run's, prefixed with the call running the
        child)."""
        return self._approvals.pending()

    @workflow.update(name=DECIDE_UPDATE)
    def decide(self, decisions: dict[str, Decision]) -> tuple[str, ...]:
        """Decide waiting calls, ``{call_id: Approve() | Deny(reason) | Supply(value)}``;
        returns the call ids decided."""
        self._approvals.give(decisions)
        self._approvals.publish()
        return tuple(decisions)

    @decide.validator
    def check_decisions(self, decisions: dict[str, Decision]) -> None:
        """Refuse an unknown call, a second decision, a decision that does not fit."""
        try:
            self._approvals.check(decisions)
        except Refusal as exc:
            raise ApplicationError(str(exc), type=exc.kind, non_retryable=True) from None

    @workflow.signal(name=CHILD_WAITS_SIGNAL)
    def child_waits(self, report: ChildWaits) -> None:
        """A child workflow tells what waits in it (listed with this run's calls)."""
        self._approvals.heard(report)

    @workflow.query(name=SIGNALS_QUERY)
    def signals(self, after: int) -> SignalPage:
        """The run's signals with ``seq > after`` (up to 1,000), and its child runs."""
        start = bisect.bisect_right(self._seqs, after)
        return SignalPage(
            signals=tuple(self._lines[start : start + _PAGE]),
            children=tuple(self._children),
            done=self._done and start + _PAGE >= len(self._lines),
        )

    @workflow.run
    async def run(self, spec: RunSpec) -> RunResult:
        """Drive the run to its Step."""
        try:
            strategy = spec.agent.build()
        except Exception as exc:  # the workflow's worker cannot load the strategy
            self._done = True
            error = ErrorEnvelope.make(
                INTERNAL,
                f"strategy {spec.agent.path} cannot be loaded on the workflow's worker "
                f"(task queue {spec.options.task_queue!r}): {type(exc).__name__}: {exc}. "
                "Install its module where the workers run",
                {"strategy": spec.agent.path, "exception": type(exc).__name__},
                retryable=False,
            )
            return RunResult(
                step=Step(run_id=spec.run_id, ok=False, error=error, reason="strategy_error")
            )
        driver = Driver(self, spec, strategy, self._approvals)
        try:
            return await driver.drive()
        finally:
            self._done = True

    def observe(self, signal: Signal) -> None:
        """Keep ``signal`` for observers (the signals query)."""
        self._lines.append(msgspec.Raw(encode_signal(signal)))
        self._seqs.append(signal.seq)

    def add_child(self, run_id: str) -> None:
        """A child workflow was started (observers follow it too)."""
        self._children.append(run_id)

    @property
    def children(self) -> tuple[str, ...]:
        """The child runs started so far."""
        return tuple(self._children)

    def tail(self, n: int) -> list[msgspec.Raw]:
        """The latest ``n`` signals kept for observers."""
        return self._lines[-n:] if n else []

    def carry(self, lines: Any, children: Any) -> None:
        """The signals and children carried over from the previous execution."""
        for line in lines:
            self._lines.append(line)
            self._seqs.append(decode_signal(bytes(line)).seq)
        self._children.extend(children)
