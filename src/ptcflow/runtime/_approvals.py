"""Tool calls that wait for a person: asking (the run parks the call) and applying a
decision when the run resumes (see ``docs/approvals.md``).

A call of a tool with ``requires_approval`` (true, or a predicate that says so) or of a
``deferred`` tool is not performed: ``ai.approval.requested`` is published with its
:class:`~ptcflow.signals.PendingCall` and the call parks (``Parked``): the run core ends the
run *paused* once nothing else runs. On resume the call's decision is applied where the
call would have started: ``Approve`` performs it, ``Deny`` ends it with an
``approval_denied`` error the model reads, ``Supply`` ends it with the value given.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

from ptcflow.core import Approve, Deny, Parked, Supply, journal_safe
from ptcflow.directives import RESERVED_CONTEXT_KEY
from ptcflow.runtime._run import DirectiveContext
from ptcflow.signals import (
    APPROVAL_DENIED,
    APPROVAL_EXPIRED,
    APPROVAL_REQUESTED,
    APPROVAL_RESOLVED,
    TOOL_ERROR,
    ApprovalRequestedData,
    ApprovalResolvedData,
    Err,
    ErrorEnvelope,
    Ok,
    PendingCall,
)
from ptcflow.tools import Tool, ToolContext

__all__ = ("EXPIRED", "Expired", "apply_decision", "ask_approval", "expired")


class Expired:
    """The decision a resume makes for a call whose ``approval_timeout`` passed."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Expired()"


EXPIRED: Final = Expired()


def ask_approval(
    ctx: DirectiveContext, tool: Tool, arguments: Any, checked: Any
) -> Parked | Err | None:
    """Park the call of ``ctx`` when ``tool`` asks for a decision on it (``None``: it runs
    now; an ``Err`` when its predicate failed: the tool is not called). The predicate reads
    ``checked`` (the arguments as the tool's signature coerced them); the pending call shows
    ``arguments`` as the model wrote them."""
    d: Any = ctx.directive
    run = ctx.run
    context = None
    rule = tool.requires_approval
    if callable(rule):
        metadata = {k: v for k, v in d.context.items() if k != RESERVED_CONTEXT_KEY}
        context = ToolContext(
            run_id=run.run_id, call_id=d.id, tool_name=tool.name, metadata=metadata
        )
    try:
        reason = tool.approval_reason(checked, context)
    except Exception as exc:
        return Err(
            error=ErrorEnvelope.make(
                TOOL_ERROR,
                f"the requires_approval predicate of tool {tool.name!r} raised "
                f"{type(exc).__name__}: {exc}; the call was not made",
                {"tool": tool.name, "exception": type(exc).__name__},
                retryable=False,
            )
        )
    if reason is None:
        return None
    expires = None
    if tool.approval_timeout is not None:
        at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=tool.approval_timeout)
        expires = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    pending = PendingCall(
        call_id=d.id,
        tool=tool.name,
        arguments=arguments,
        kind="deferred" if tool.deferred else "approval",
        reason=reason,
        agent=run.path,
        run_id=run.run_id,
        expires_at=expires,
    )
    ctx.run.emit(ctx, APPROVAL_REQUESTED, ApprovalRequestedData(pending=pending))
    tel = run.executor.telemetry
    if tel is not None and ctx.span is not None:
        tel.approval_requested(ctx.span, pending)
    return Parked((pending,))


def _resolved(ctx: DirectiveContext, data: ApprovalResolvedData) -> None:
    """``ai.approval.resolved``, and the decision on the call's span."""
    ctx.run.emit(ctx, APPROVAL_RESOLVED, data)
    tel = ctx.run.executor.telemetry
    if tel is not None and ctx.span is not None:
        tel.approval_resolved(ctx.span, data.decision, data.reason)


def apply_decision(ctx: DirectiveContext, decision: Any) -> Ok[Any] | Err | None:
    """Apply the decision on the call of ``ctx`` (``None``: approved, perform it)."""
    d: Any = ctx.directive
    name = d.tool_name
    if isinstance(decision, Approve):
        _resolved(ctx, ApprovalResolvedData(tool=name, decision="approve"))
        return None
    if isinstance(decision, Deny):
        _resolved(ctx, ApprovalResolvedData(tool=name, decision="deny", reason=decision.reason))
        said = f": {decision.reason}" if decision.reason else ""
        return Err(
            error=ErrorEnvelope.make(
                APPROVAL_DENIED,
                f"the call of tool {name!r} was denied{said}",
                {"tool": name, "reason": decision.reason},
                retryable=False,
            )
        )
    if isinstance(decision, Supply):
        _resolved(ctx, ApprovalResolvedData(tool=name, decision="supply"))
        return journal_safe(Ok(payload=decision.value))
    _resolved(ctx, ApprovalResolvedData(tool=name, decision="expired"))
    return expired(name)


def expired(name: str) -> Err:
    """The error of a call whose ``approval_timeout`` passed before its decision."""
    return Err(
        error=ErrorEnvelope.make(
            APPROVAL_EXPIRED,
            f"the call of tool {name!r} waited longer than its approval_timeout; it was not made",
            {"tool": name},
            retryable=False,
        )
    )
