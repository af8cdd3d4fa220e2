"""Why a run core ends a run or refuses a directive: the error envelopes it publishes.

Each function builds the ``Err`` of one case, with a message that says what happened and
what to change; :class:`~ptcflow.core._core.RunCore` decides when each applies.
"""

from __future__ import annotations

from typing import Any

from ptcflow.directives import Directive
from ptcflow.signals import INTERNAL, TIMEOUT, VALIDATION, Err, ErrorEnvelope

__all__ = (
    "bad_outcome",
    "invalid_directive",
    "not_a_directive",
    "run_timed_out",
    "stalled",
    "strategy_crashed",
)


def run_timed_out(run_id: str, name: str) -> Err:
    """The run's deadline passed."""
    return Err(
        error=ErrorEnvelope.make(
            TIMEOUT,
            f"run {run_id} ({name}) exceeded its time budget",
            {"scope": "mission"},
            retryable=False,
        )
    )


def invalid_directive(directive: Directive, problems: list[str]) -> Err:
    """A directive whose fields are wrong (``Directive.problems``): it is never performed."""
    kind = type(directive).__name__
    return Err(
        error=ErrorEnvelope.make(
            VALIDATION,
            f"invalid {kind} directive {directive.id!r}: {'; '.join(problems)}",
            {"problems": problems, "kind": kind},
        )
    )


def not_a_directive(value: Any) -> TypeError:
    """The strategy returned something else among its directives."""
    return TypeError(
        f"it returned {type(value).__name__} {value!r:.80} among its directives; "
        "init/handle must return (state, [Directive, ...])"
    )


def bad_outcome(name: str, result: Any) -> Err:
    """The strategy's outcome carries a result that is neither ``Ok`` nor ``Err``."""
    return Err(
        error=ErrorEnvelope.make(
            INTERNAL,
            f"strategy {name!r} returned an outcome whose result is "
            f"{type(result).__name__}, not Ok or Err",
        )
    )


def stalled(name: str, state: Any) -> Err:
    """Nothing is in flight and the strategy has no outcome: the run cannot progress."""
    return Err(
        error=ErrorEnvelope.make(
            INTERNAL,
            f"strategy {name!r} stopped asking for work before reaching an outcome "
            f"(state {type(state).__name__}, nothing in flight): the run cannot "
            "progress. A strategy must emit a directive or return an outcome from "
            "outcome() after every init/handle.",
            {"strategy": name, "state": type(state).__name__},
            retryable=False,
        )
    )


def strategy_crashed(name: str, exc: Exception, where: str) -> Err:
    """The strategy raised ``exc`` ``where`` (e.g. "handling signal ai.llm.response")."""
    return Err(
        error=ErrorEnvelope.make(
            INTERNAL,
            f"strategy {name!r} raised {type(exc).__name__} while {where}: {exc}",
            {"strategy": name, "exception": type(exc).__name__, "where": where},
            retryable=False,
        )
    )
