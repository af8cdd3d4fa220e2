"""Guardrails on Temporal: each guard runs on a worker, the workflow decides.

A guard is user code, and a workflow runs only deterministic, sandboxed code; so, as a
handoff's input filter (``_filters``), each check is an activity: the workflow sends the
value, the guard's import path and what it is told (a :class:`~ptcflow.runtime.GuardInfo`)
to a worker, whose :func:`run_guard` imports the guard, calls it under its deadline
(``timeout_s``) exactly as the local Runtime does, and answers with the value (rewritten
or not) and the check's record (the ``ai.guardrail`` signal's data). The workflow
publishes the record and, from the verdict, goes on, rewrites or ends the run
(``guardrail_tripped`` / ``guardrail_failed``). The guards of a stage run one after the
other; the input guards run before the run starts (``concurrent_input=True`` is refused).
"""

from __future__ import annotations

import types
from typing import Any

from ptcflow.errors import UsageError
from ptcflow.runtime import GUARDRAIL_FAILED, GuardInfo, Guardrails
from ptcflow.runtime.lowlevel import check_guards
from ptcflow.temporal._refs import load, path_of
from ptcflow.temporal._spec import GuardPlan

__all__ = ("GUARD_TOOL", "plan_guards", "run_guard")

GUARD_TOOL = "ptcflow_guardrail"
"""The name of the tool call that runs one guard on a worker."""

_NO_RUN = types.SimpleNamespace(executor=types.SimpleNamespace(telemetry=None), otel_context=None)


def plan_guards(guards: Guardrails) -> GuardPlan:
    """``guards`` by reference (each guard's import path), for a run on Temporal.

    Raises:
        UsageError: a guard a worker cannot import by name (a lambda, a closure), or
            ``concurrent_input=True`` (on Temporal the input guards run before the run).
    """
    if guards.concurrent_input:
        raise UsageError(
            "Guardrails(concurrent_input=True) is not supported on Temporal: the input "
            "guards run on a worker before the run starts; drop concurrent_input"
        )

    def paths(stage: str) -> tuple[str, ...]:
        return tuple(path_of(g, f"the {stage} guardrail") for g in getattr(guards, stage))

    return GuardPlan(
        input=paths("input"),
        output=paths("output"),
        tool=paths("tool"),
        timeout_s=guards.timeout_s,
    )


async def run_guard(
    guard: str, stage: str, value: Any, info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Run the guard at import path ``guard`` on ``value`` (on a worker): ``{"value":
    value or its rewrite, "record": the check's record}`` (the record's ``verdict`` is
    ``pass``, ``rewrite``, ``guardrail_tripped`` or ``guardrail_failed``)."""
    records: list[dict[str, Any]] = []
    try:
        fn = load(guard)
    except Exception as exc:
        name = guard.rpartition(":")[2]
        reason = f"the worker could not import it: {type(exc).__name__}: {exc}"
        record = {"guard": name, "stage": stage, "verdict": GUARDRAIL_FAILED, "reason": reason}
        return {"value": value, "record": record}
    one = [fn]
    guards = Guardrails(
        input=one if stage == "input" else (),
        output=one if stage == "output" else (),
        tool=one if stage == "tool" else (),
        timeout_s=timeout_s,
    )
    new, _ = await check_guards(guards, stage, value, GuardInfo(**info), _NO_RUN, records)
    return {"value": new, "record": records[0]}
