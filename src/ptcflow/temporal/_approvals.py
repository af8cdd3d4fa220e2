"""Calls that wait for a person inside a ``ptcflow.run`` workflow (workflow code).

On Temporal a run that meets a tool call needing a decision does not end paused: the
workflow keeps the call's directive open and waits (``workflow.wait_condition``, no
worker held) until the decision comes in through the ``ptcflow.decide`` update, or the
tool's ``approval_timeout`` passes. :class:`Approvals` is what the workflow keeps: the
calls waiting (the ``ptcflow.pending`` query lists them), the decisions given and not
yet taken, and the calls decided already (a second decision is refused). The update's
validator (:meth:`Approvals.check`) refuses a bad decision before it enters history.
The same list is kept in the workflow's memo (``ptcflow.pending``), which the server
answers from without a worker: the client reads it when no worker polls.

A call waiting inside a child workflow (an agent used as a tool, a ``RunChild``) is the
parent's too: the child tells its parent what waits in it (the ``ptcflow.child_waits``
signal, a :class:`ChildWaits`: its pending calls, the calls decided, and whether it only
waits on people), and the parent lists those calls with its own, their ids prefixed with
the call that runs the child (``"{call id}/{call id in the child}"``) and their agent path
with its name, as ``Runtime.resume`` lists a paused child's. A call keeps the ``run_id``
of the run that made it: the client sends its decision to that workflow's
``ptcflow.decide`` update (:meth:`TemporalRunHandle.decide`), whose validator checks it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from temporalio import workflow

from ptcflow.core import Approve, Decision, Deny, Supply
from ptcflow.signals import PendingCall
from ptcflow.temporal._approval_names import (
    CHILD_WAITS_SIGNAL,
    DECIDE_UPDATE,
    PENDING_MEMO,
    PENDING_QUERY,
    route,
)

__all__ = (
    "CHILD_WAITS_SIGNAL",
    "DECIDE_UPDATE",
    "PENDING_MEMO",
    "PENDING_QUERY",
    "Approvals",
    "ChildWaits",
    "Refusal",
    "expiry_of",
    "route",
)


class ChildWaits(msgspec.Struct, frozen=True, kw_only=True):
    """What waits in a child workflow, told to its parent (``ptcflow.child_waits``).

    Attributes:
        run_id: the child's run id (``{parent run id}/{call id}``).
        pending: the calls waiting in it (its children's included, prefixed).
        decided: the calls decided so far in it, and how.
        idle: every directive in flight in it waits for a person (its clock stands).
    """

    run_id: str
    pending: tuple[PendingCall, ...] = ()
    decided: dict[str, str] = msgspec.field(default_factory=dict)
    idle: bool = False


class Refusal(Exception):
    """A decision the workflow refuses: ``kind`` names the ``ptcflow.core`` error class
    (``UnknownCallError``, ``AlreadyDecidedError``, ``WrongDecisionError``) the client
    raises for it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Approvals:
    """The waiting calls of one workflow run (see the module docstring)."""

    __slots__ = ("agent", "changed", "children", "decided", "given", "open", "run_id", "waiting")

    def __init__(self) -> None:
        self.waiting: dict[str, PendingCall] = {}
        """The calls waiting for a decision, by call id, in the order they asked."""
        self.given: dict[str, Any] = {}
        """Decisions given (or expiries) the waiting directive has not taken yet."""
        self.decided: dict[str, str] = {}
        """Every call decided so far: how (``approve``, ``deny``, ``supply``, ``expired``)."""
        self.run_id = ""
        """The run's id (a child's id is ``{run id}/{call id}``)."""
        self.agent = ""
        """The run's agent name (the first of its children's calls' agent paths)."""
        self.open: set[str] = set()
        """The calls whose child workflows run now (a report of another is stale)."""
        self.children: dict[str, ChildWaits] = {}
        """The latest report of each open child that has told something, by call id."""
        self.changed: Callable[[], None] | None = None
        """Called when what waits changed (the driver's loop looks again)."""

    def own(self) -> tuple[PendingCall, ...]:
        """The calls of this run that wait for a decision now."""
        return tuple(p for k, p in self.waiting.items() if k not in self.given)

    def pending(self) -> tuple[PendingCall, ...]:
        """The calls that wait for a decision now: this run's, then its children's (their
        ids prefixed with the call that runs the child, their agent path with ours)."""
        out = list(self.own())
        for key, report in self.children.items():
            for p in report.pending:
                out.append(
                    msgspec.structs.replace(
                        p, call_id=f"{key}/{p.call_id}", agent=(self.agent, *p.agent)
                    )
                )
        return tuple(out)

    def decided_all(self) -> dict[str, str]:
        """The calls decided so far (given, or taken), this run's and its children's
        (prefixed)."""
        out = {k: _how(v) for k, v in self.given.items()}
        out.update(self.decided)
        for key, report in self.children.items():
            out.update({f"{key}/{k}": v for k, v in report.decided.items()})
        return out

    def publish(self) -> None:
        """Keep :meth:`pending` in the workflow's memo (workflow code); wake the driver."""
        workflow.upsert_memo({PENDING_MEMO: self.pending()})
        if self.changed is not None:
            self.changed()

    def heard(self, report: ChildWaits) -> None:
        """A child told what waits in it (the ``ptcflow.child_waits`` signal)."""
        prefix = f"{self.run_id}/"
        key = report.run_id[len(prefix) :] if report.run_id.startswith(prefix) else ""
        if key not in self.open:  # ended already, or not ours
            return
        self.children[key] = report
        self.publish()

    def opened(self, key: str) -> None:
        """The child workflow of call ``key`` starts."""
        self.open.add(key)

    def closed(self, key: str) -> None:
        """The child workflow of call ``key`` ended: nothing waits in it any more."""
        self.open.discard(key)
        if self.children.pop(key, None) is not None:
            self.publish()

    def idle(self, key: str) -> bool:
        """The child of call ``key`` only waits on people."""
        report = self.children.get(key)
        return report is not None and report.idle

    def check(self, decisions: Mapping[str, Any]) -> None:
        """Refuse ``decisions`` unless each names a waiting call and fits it.

        Raises:
            Refusal: an empty map, an unknown call, a call decided already, or a decision
                that does not fit (``Approve`` for a deferred tool, not a decision).
        """
        if not decisions:
            raise Refusal(
                "WrongDecisionError",
                "no decisions given: pass {call_id: ptcflow.Approve() | ptcflow.Deny(reason) "
                "| ptcflow.Supply(value)} for calls handle.pending() lists",
            )
        below = {p.call_id: p for key in self.children for p in self._below(key)}
        done = self.decided_all()
        for call_id, decision in decisions.items():
            if call_id in below:
                p = below[call_id]
                raise Refusal(
                    "UnknownCallError",
                    f"call {call_id!r} waits in child run {p.run_id}, not in this one: decide "
                    "it through the top-level handle (handle.decide sends it there)",
                )
            how = done.get(call_id) or (
                _how(self.given[call_id]) if call_id in self.given else None
            )
            if how is not None:
                raise Refusal(
                    "AlreadyDecidedError",
                    f"call {call_id!r} was decided already ({how}); a call is decided once",
                )
            call = self.waiting.get(call_id)
            if call is None:
                known = ", ".join(repr(p.call_id) for p in self.pending()) or "none"
                raise Refusal(
                    "UnknownCallError",
                    f"no call {call_id!r} waits for a decision in this run (waiting: {known}); "
                    "list them with handle.pending()",
                )
            if not isinstance(decision, Approve | Deny | Supply):
                raise Refusal(
                    "WrongDecisionError",
                    f"the decision on call {call_id!r} is a {type(decision).__name__}: give "
                    "ptcflow.Approve(), ptcflow.Deny(reason) or ptcflow.Supply(value)",
                )
            if call.kind == "deferred" and isinstance(decision, Approve):
                raise Refusal(
                    "WrongDecisionError",
                    f"call {call_id!r} is of deferred tool {call.tool!r}, which has no body to "
                    "run: give its result with ptcflow.Supply(value), or ptcflow.Deny(reason)",
                )

    def _below(self, key: str) -> tuple[PendingCall, ...]:
        report = self.children[key]
        return tuple(
            msgspec.structs.replace(p, call_id=f"{key}/{p.call_id}") for p in report.pending
        )

    def give(self, decisions: Mapping[str, Decision]) -> None:
        """Take checked decisions (the update's handler)."""
        self.given.update(decisions)

    def take(self, call_id: str) -> Any:
        """The decision on ``call_id`` (``None``: none yet), moved to :attr:`decided`."""
        if call_id not in self.given:
            return None
        decision = self.given.pop(call_id)
        self.waiting.pop(call_id, None)
        self.decided[call_id] = _how(decision)
        return decision

    def expire(self, call_id: str, marker: Any) -> None:
        """``call_id``'s ``approval_timeout`` passed undecided: it ends ``expired``."""
        if call_id in self.waiting and call_id not in self.given:
            self.given[call_id] = marker


def _how(decision: Any) -> str:
    if isinstance(decision, Approve):
        return "approve"
    if isinstance(decision, Deny):
        return "deny"
    if isinstance(decision, Supply):
        return "supply"
    return "expired"


def expiry_of(call: PendingCall) -> float | None:
    """When ``call``'s wait ends by itself (epoch seconds; ``None``: never)."""
    if not call.expires_at:
        return None
    return datetime.datetime.fromisoformat(call.expires_at.replace("Z", "+00:00")).timestamp()
