"""The data of a run that waits for a person: pending calls and their decisions.

A tool that requires approval (or a deferred tool, whose result comes from outside) makes
its call wait: ``ai.approval.requested`` says which call and why, the run ends *paused*
(``ai.request.paused``) once nothing else is running, and ``ai.approval.resolved`` records
each decision when the run is resumed (``ai.request.resumed``). These structs are the
signals' ``data`` and the :class:`~ptcflow.core.Step`'s ``pending`` list.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from ptcflow.signals._messages import Usage

APPROVAL_DENIED: Final = "approval_denied"
"""The error type a denied call ends with (the model sees it with the reason given)."""
APPROVAL_EXPIRED: Final = "approval_expired"
"""The error type a call ends with when its ``approval_timeout`` passed undecided."""

__all__ = (
    "APPROVAL_DENIED",
    "APPROVAL_EXPIRED",
    "ApprovalRequestedData",
    "ApprovalResolvedData",
    "PendingCall",
    "RequestPausedData",
    "RequestResumedData",
    "UsageSpent",
)


class PendingCall(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One tool call that waits for a decision.

    Attributes:
        call_id: the key of its decision in ``rt.resume(step, {call_id: ...})``. Unique in
            the paused mission: a call inside a program is ``"{program call}/tool/{n}"``,
            a call of an agent used as a tool is ``"{tool call}/{call in the child}"``.
        tool: the tool's name.
        arguments: the call's arguments, as the model wrote them (plain JSON data).
        kind: ``"approval"`` (a person approves or denies it) or ``"deferred"`` (its
            result comes from outside: supply it with ``ptcflow.Supply(value)``).
        reason: why it waits (``"requires approval"``, ``"deferred tool"``, or the text a
            predicate returned).
        agent: the path of agent names from the top-level run to the run that made the
            call (one name for a call of the top-level agent).
        run_id: the id of the run that made the call.
        expires_at: when the wait ends by itself (ISO 8601, UTC), from the tool's
            ``approval_timeout``; ``None``: never.
    """

    call_id: str
    tool: str
    arguments: Any = None
    kind: Literal["approval", "deferred"] = "approval"
    reason: str = ""
    agent: tuple[str, ...] = ()
    run_id: str = ""
    expires_at: str | None = None


class ApprovalRequestedData(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """``ai.approval.requested``: a tool call waits for a decision (its ``call_id`` is
    the signal's)."""

    pending: PendingCall


class ApprovalResolvedData(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """``ai.approval.resolved``: the decision on a waiting call.

    ``decision`` is ``"approve"``, ``"deny"``, ``"supply"`` (a deferred call's result
    came from outside) or ``"expired"`` (its ``approval_timeout`` passed first).
    """

    tool: str
    decision: Literal["approve", "deny", "supply", "expired"]
    reason: str = ""


class UsageSpent(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """What a paused run's whole tree had used (the run, its child agents, ended or paused),
    as its usage meter counted it: a resume's ``UsageLimits`` budget goes on from here.

    Attributes:
        requests: model calls started.
        tool_calls: tool calls started, those that wait for a decision included (they
            are started again on resume: the resume does not count them twice).
        usage: tokens of the answered model calls.
        cost_usd: dollars of the priced calls.
        unpriced: the tokens of each model that had no price (a resume with a cost
            budget prices them with its own prices, or ends with ``price_unknown``).

    Example:
        >>> UsageSpent(requests=2, usage=Usage(input_tokens=10))
        UsageSpent(requests=2, tool_calls=0, usage=Usage(input_tokens=10, output_tokens=0, \
cache_read_tokens=0, cache_write_tokens=0), cost_usd=0.0, unpriced={})
    """

    requests: int = 0
    tool_calls: int = 0
    usage: Usage = Usage()
    cost_usd: float = 0.0
    unpriced: dict[str, Usage] = {}


class RequestPausedData(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """``ai.request.paused``: the run stopped to wait for decisions on these calls.

    ``strategy`` (the strategy class, ``module.QualName``) and ``elapsed_ms`` (the time the
    run had been active) let a paused run be rebuilt from the journal alone; ``spent`` (a
    top-level run that may pause: what its whole tree had used) lets its usage budget go
    on where it was (``None``: not counted, as in a child run's pause)."""

    pending: tuple[PendingCall, ...]
    strategy: str = ""
    elapsed_ms: float = 0.0
    spent: UsageSpent | None = None


class RequestResumedData(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """``ai.request.resumed``: a paused run continues with decisions on these calls."""

    decided: tuple[str, ...] = ()
