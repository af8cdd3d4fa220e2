"""Continue-as-new: a run carried from one workflow execution to the next (see ``_drive``).

A long run continues as new at a quiet moment (no activity in flight), carrying the
strategy's state, the directives it asked for that had not started, the core's counters,
the latest signals for observers, and its mission's count and its agents' Steps
(:class:`~ptcflow.temporal._spec.Checkpoint`). Workflow code: ``temporalio.workflow`` only.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from ptcflow.core import Flight, RunCore
from ptcflow.directives import Directive
from ptcflow.temporal._options import TemporalOptions
from ptcflow.temporal._spec import Checkpoint, Typed, decode_lines, encode_lines

__all__ = ("checkpoint_of", "resume", "should_continue")


def should_continue(options: TemporalOptions) -> bool:
    """True when the workflow's history is long enough to continue as new."""
    info = workflow.info()
    limit = options.continue_as_new_events
    if limit is not None:
        return info.get_current_history_length() >= limit
    return info.is_continue_as_new_suggested()


def checkpoint_of(
    core: RunCore[Flight], pending: list[Flight], owner: Any, family: Any, tail: int
) -> Checkpoint:
    """What the next execution needs of ``core`` (with ``pending`` not started yet), of
    the workflow's observers (``owner``: its latest ``tail`` signals, its children) and of
    the run's :class:`~ptcflow.temporal._family.Family`."""
    return Checkpoint(
        state=Typed.of(core.state),
        pending=tuple(Typed.of(f.directive) for f in pending),
        seq=core.seq,
        usage=core.usage,
        turns=core.turns,
        tool_calls=core.tool_calls,
        started_at=core.started_at,
        signals=tuple(owner.tail(tail)),
        recorded=encode_lines(core.recorded) if core.recorded is not None else (),
        children=owner.children,
        turns_used=family.turns_used,
        steps=dict(family.steps),
        usage_used=family.usage_now(),
    )


def resume(core: RunCore[Flight], checkpoint: Checkpoint, now: float) -> None:
    """Start ``core`` where the previous execution left it."""
    if core.recorded is not None:
        core.recorded.extend(decode_lines(checkpoint.recorded))
    pending: list[Directive] = [p.value() for p in checkpoint.pending]
    core.resume(
        now,
        state=checkpoint.state.value(),
        directives=pending,
        seq=checkpoint.seq,
        usage=checkpoint.usage,
        turns=checkpoint.turns,
        tool_calls=checkpoint.tool_calls,
        started_at=checkpoint.started_at,
    )
