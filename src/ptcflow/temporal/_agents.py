"""Agents on Temporal: what :meth:`TemporalRuntime.run` does with a
:class:`~ptcflow.runtime.Plannable` (a :class:`ptcflow.SubAgent`) instead of a strategy.

As ``Runtime.run`` does, the runtime asks the agent for its :class:`RunPlan`
(``agent.plan_run(rt, input, options)``) and runs the plan's strategy, on its input, with
its tools, name and deadline. What cannot cross to a worker is refused before the run
starts, with the fix: a model object of this process (on Temporal the workers make the
model calls with their own model; a model *name* travels with the strategy), and a
mission (agents as tools, ``LLMTool``, ``mission_limits``: see docs/temporal.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ptcflow.errors import UsageError
from ptcflow.runtime import Unset
from ptcflow.runtime._plan import plan_of

if TYPE_CHECKING:
    from ptcflow.runtime import Step

__all__ = ("WORKERS_MODEL", "Planned", "WorkersModel", "plan_on_temporal")


class WorkersModel:
    """The model of a run on Temporal: the workers' (``ptcflow worker --llm``).

    It is :attr:`TemporalRuntime.llm`, so an agent planning its run sees that a model
    exists; nothing calls it on the client.

    Example:
        >>> WORKERS_MODEL
        <the Temporal workers' model>
    """

    name = "workers"
    model = None  # names no model itself; the strategy's model name, if any, is sent

    def __repr__(self) -> str:
        return "<the Temporal workers' model>"


WORKERS_MODEL: Final = WorkersModel()


@dataclass(frozen=True, kw_only=True, slots=True)
class Planned:
    """A run's arguments after its agent planned it (or as given, for a strategy)."""

    strategy: Any
    input: Any
    tools: Any
    timeout: float | None
    name: str | None
    finish: Callable[[Step], Step] | None = None


def plan_on_temporal(
    rt: Any,
    target: Any,
    input: Any,
    *,
    tools: Any,
    timeout: float | Unset | None,
    name: str | None,
    options: Mapping[str, Any],
) -> Planned:
    """The run of ``target`` on the TemporalRuntime ``rt``: a strategy as it is, an agent
    by its plan.

    Raises:
        UsageError: options for a strategy, what the agent's ``plan_run`` raises, a
            model object of this process, or a mission.
    """
    if not options and getattr(type(target), "plan_run", None) is None:
        return Planned(
            strategy=target,
            input=input,
            tools=tools,
            timeout=None if isinstance(timeout, Unset) else timeout,
            name=name,
        )
    llm = options.get("llm")
    plan = plan_of(rt, target, input, tools, None, timeout, name, options)
    who = f"{type(target).__name__}({plan.name!r})" if plan.name else type(target).__name__
    if plan.inherit is not None:
        raise UsageError(
            f"{who} starts a mission (agents as tools, an LLMTool, or mission_limits=), "
            "which does not run on Temporal yet: a mission's turn budget and its child "
            "agents live in one process. Run it on a local Runtime, or give each agent its "
            "own run (see docs/temporal.md, Agents as tools)"
        )
    if plan.llm is not None and plan.llm is not WORKERS_MODEL:
        given = llm if llm is not None else plan.llm
        raise UsageError(
            f"{who} brings its own model object ({type(given).__name__}), which cannot "
            "travel to a Temporal worker: there the workers make the model calls with their "
            "model (ptcflow worker --llm ...). Give the agent a model name instead "
            '(SubAgent(llm="gpt-4.1-mini"), sent with every call) or none'
        )
    return Planned(
        strategy=plan.strategy,
        input=plan.input,
        tools=tools if plan.tools is None else plan.tools,
        timeout=None if isinstance(plan.timeout, Unset) else plan.timeout,
        name=plan.name,
        finish=plan.finish,
    )
