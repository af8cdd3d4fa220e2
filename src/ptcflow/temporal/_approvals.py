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
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from temporalio import workflow

from ptcflow.core import Approve, Decision, Deny, Supply
from ptcflow.signals import PendingCall

__all__ = ("DECIDE_UPDATE", "PENDING_MEMO", "PENDING_QUERY", "Approvals", "Refusal", "expiry_of")

PENDING_QUERY: Final = "ptcflow.pending"
"""The query listing a run's calls that wait for a decision."""
PENDING_MEMO: Final = "ptcflow.pending"
"""The memo key holding the same list (read without a worker)."""
DECIDE_UPDATE: Final = "ptcflow.decide"
"""The update that decides waiting calls: ``{call_id: Approve() | Deny(...) | Supply(...)}``."""


class Refusal(Exception):
    """A decision the workflow refuses: ``kind`` names the ``ptcflow.core`` error class
    (``UnknownCallError``, ``AlreadyDecidedError``, ``WrongDecisionError``) the client
    raises for it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Approvals:
    """The waiting calls of one workflow run (see the module docstring)."""

    __slots__ = ("decided", "given", "waiting")

    def __init__(self) -> None:
        self.waiting: dict[str, PendingCall] = {}
        """The calls waiting for a decision, by call id, in the order they asked."""
        self.given: dict[str, Any] = {}
        """Decisions given (or expiries) the waiting directive has not taken yet."""
        self.decided: dict[str, str] = {}
        """Every call decided so far: how (``approve``, ``deny``, ``supply``, ``expired``)."""

    def pending(self) -> tuple[PendingCall, ...]:
        """The calls that wait for a decision now."""
        return tuple(p for k, p in self.waiting.items() if k not in self.given)

    def publish(self) -> None:
        """Keep :meth:`pending` in the workflow's memo (workflow code)."""
        workflow.upsert_memo({PENDING_MEMO: self.pending()})

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
        for call_id, decision in decisions.items():
            how = self.decided.get(call_id) or (
                _how(self.given[call_id]) if call_id in self.given else None
            )
            if how is not None:
                raise Refusal(
                    "AlreadyDecidedError",
                    f"call {call_id!r} was decided already ({how}); a call is decided once",
                )
            call = self.waiting.get(call_id)
            if call is None:
                known = ", ".join(repr(k) for k in self.waiting) or "none"
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
