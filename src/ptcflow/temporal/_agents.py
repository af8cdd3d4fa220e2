"""Agents on Temporal: what :meth:`TemporalRuntime.run` does with a
:class:`~ptcflow.runtime.Plannable` (a :class:`ptcflow.SubAgent`) instead of a strategy.

As ``Runtime.run`` does, the runtime asks the agent for its :class:`RunPlan`
(``agent.plan_run(rt, input, options)``) and runs the plan's strategy, on its input, with
its tools, name and deadline. What cannot cross to a worker is refused before the run
starts, with the fix: a model object of this process (on Temporal the workers make the
model calls with their own model; a model *name* travels with the strategy). A mission
(agents as tools, ``LLMTool``, ``mission_limits``) keeps its lineage (``Planned.inherit``):
the client plans its agents used as tools from it (``_agent_tools``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ptcflow.agent.lowlevel import BudgetedLLM
from ptcflow.errors import UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime import RunOptions, Unset
from ptcflow.runtime.lowlevel import plan_of

if TYPE_CHECKING:
    from ptcflow.runtime import Step

__all__ = ("WORKERS_MODEL", "Planned", "WorkersModel", "plan_on_temporal", "workers_model")


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


def workers_model(llm: Any) -> bool:
    """True when ``llm`` (a plan's model) is the workers' model, counted by a mission's
    budget or not: nothing of the client's process to send.

    Example:
        >>> workers_model(None), workers_model(WORKERS_MODEL), workers_model(object())
        (True, True, False)
    """
    return _origin(llm) is None or _origin(llm) is WORKERS_MODEL


def _origin(llm: Any) -> Any:
    """The model object of a plan's ``llm``, under a mission's budget (which is kept on the
    workers' model: a mission's budget is counted by the workflow)."""
    if isinstance(llm, ModelSource):
        llm = llm.given if llm.provider is None else llm.provider
    return llm.inner if isinstance(llm, BudgetedLLM) else llm


@dataclass(frozen=True, kw_only=True, slots=True)
class Planned:
    """A run's arguments after its agent planned it (or as given, for a strategy)."""

    strategy: Any
    input: Any
    tools: Any
    timeout: float | None
    name: str | None
    finish: Callable[[Step], Step] | None = None
    inherit: Any = None
    """The agent's lineage when it starts a mission (``RunPlan.inherit``)."""


def plan_on_temporal(rt: Any, target: Any, input: Any, options: RunOptions) -> Planned:
    """The run of ``target`` on the TemporalRuntime ``rt`` for ``options``: a strategy as
    it is, an agent by its plan.

    Raises:
        UsageError: options for a strategy, what the agent's ``plan_run`` raises, or a
            model object of this process.
    """
    timeout = options.timeout
    if (
        not options.agent_options
        and options.llm is None
        and getattr(type(target), "plan_run", None) is None
    ):
        return Planned(
            strategy=target,
            input=input,
            tools=options.tools,
            timeout=None if isinstance(timeout, Unset) else timeout,
            name=options.name,
        )
    if options.llm is not None and getattr(type(target), "plan_run", None) is None:
        # a strategy's model on Temporal is the workers': llm= is an agent's option there
        given = {**options.agent_options, "llm": options.llm}
        options = msgspec.structs.replace(options, llm=None, agent_options=given)
    plan = plan_of(rt, target, input, options)
    who = f"{type(target).__name__}({plan.name!r})" if plan.name else type(target).__name__
    if not workers_model(plan.llm):
        given_llm = _origin(options.llm if options.llm is not None else plan.llm)
        raise UsageError(
            f"{who} brings its own model object ({type(given_llm).__name__}), which cannot "
            "travel to a Temporal worker: there the workers make the model calls with their "
            "model (ptcflow worker --llm ...). Give the agent a model name instead "
            '(SubAgent(llm="gpt-4.1-mini"), sent with every call) or none'
        )
    return Planned(
        strategy=plan.strategy,
        input=plan.input,
        tools=options.tools if plan.tools is None else plan.tools,
        timeout=None if isinstance(plan.timeout, Unset) else plan.timeout,
        name=plan.name,
        finish=plan.finish,
        inherit=plan.inherit,
    )
