"""Agents used as tools on Temporal, planned on the client (:func:`plan_tools`).

A call of an agent's tool (``SubAgent.as_tool``, an ``LLMTool``) is a child workflow. What
that child runs -- its PTC strategy, tools, name and own time limit -- does not depend on
the call's arguments (they become its context), so the client plans it once per tool,
before the run starts, with the agent's own ``plan_child``: the model is resolved exactly
as locally (the agent's own, the one bound at ``as_tool``, the caller's, the run's), the
mission's ``max_depth`` refuses a call too deep the same way, and the mission's options
(``trace``, ``debug``) reach the children. The plans travel in the :class:`RunSpec`
(:class:`AgentTool`, one level per nesting) and the workflow starts each call from them.
"""

from __future__ import annotations

from typing import Any

from ptcflow.agent.lowlevel import Lineage
from ptcflow.errors import UsageError
from ptcflow.runtime import ParentRun, RunPlan, Unset
from ptcflow.runtime.lowlevel import Toolbox
from ptcflow.signals import Err
from ptcflow.temporal._agents import WORKERS_MODEL, workers_model
from ptcflow.temporal._refs import agent_ref, tool_ref
from ptcflow.temporal._spec import AgentTool, MissionBudget
from ptcflow.tools import Tool, render_tool_signature

__all__ = ("mission_of", "plan_tools")


def mission_of(inherit: Any) -> MissionBudget | None:
    """The turn budget of the mission a run starts (its plan's ``inherit``), if any."""
    if isinstance(inherit, Lineage):
        return MissionBudget(turn_budget=inherit.mission.limits.turn_budget)
    return None


def plan_tools(
    toolbox: Toolbox, *, caller: str, model: str | None, inherit: Any
) -> tuple[tuple[Any, ...], tuple[AgentTool, ...]]:
    """The references of ``toolbox``'s tools, and the plans of its agents used as tools.

    Args:
        toolbox: a run's tools.
        caller: the calling run's agent name.
        model: the model name the caller's strategy asks for (a ReAct caller's).
        inherit: the caller's ``RunPlan.inherit`` (a SubAgent's lineage), or ``None``.

    Raises:
        UsageError: a tool that cannot be imported by name, or an agent that brings a
            model object of this process (see :func:`workers_model`).
    """
    refs = tuple(tool_ref(t) for n, t in toolbox.tools.items() if n not in toolbox.child_names)
    parent = ParentRun(
        run_id="",
        name=caller,
        llm=WORKERS_MODEL,
        model=model,
        inherit=inherit,
        from_program=True,
        call_id="",
    )
    agents = tuple(_plan(t, parent) for n, t in toolbox.tools.items() if n in toolbox.child_names)
    return refs, agents


def _plan(tool: Tool, parent: ParentRun) -> AgentTool:
    fn: Any = tool.fn
    if getattr(fn, "handoff_agent", ""):
        raise UsageError(
            f"tool {tool.name!r} hands the conversation to agent {fn.handoff_agent!r} (a "
            f"handoff), and handoffs do not run on Temporal yet: a TemporalRuntime takes no "
            "conversation (history= or session=) to hand on. Run agents that hand off on a "
            "local Runtime, or give the agent as a tool instead (agent.as_tool(): a child "
            "workflow that answers the caller)"
        )
    agent = getattr(getattr(fn, "agent", None), "name", None) or tool.name
    signature = None if tool.signature is None else tool.signature.render()
    expected = render_tool_signature(tool)
    planned = fn.plan_child(parent, {})
    if isinstance(planned, Err):
        return AgentTool(
            name=tool.name,
            agent=agent,
            signature=signature,
            expected=expected,
            error=planned.error,
        )
    if not isinstance(planned, RunPlan):
        raise UsageError(
            f"tool {tool.name!r}: plan_child() returned {type(planned).__name__}, not a RunPlan"
        )
    if not workers_model(planned.llm):
        raise UsageError(
            f"agent {agent!r} (tool {tool.name!r}) brings its own model object, which cannot "
            "travel to a Temporal worker: there the workers make the model calls with their "
            "model (ptcflow worker --llm ...). Give the agent (or as_tool) a model name "
            '(llm="gpt-4.1-mini", sent with every call) or none'
        )
    strategy = planned.strategy
    box = Toolbox.build(planned.tools)
    name = planned.name or agent
    refs, nested = plan_tools(
        box, caller=name, model=getattr(strategy, "model", None) or None, inherit=planned.inherit
    )
    budget = mission_of(planned.inherit)
    return AgentTool(
        name=tool.name,
        agent=agent,
        signature=signature,
        expected=expected,
        strategy=agent_ref(strategy),
        run_name=name,
        tools=refs,
        tool_specs=box.specs,
        agent_tools=nested,
        timeout=None if isinstance(planned.timeout, Unset) else planned.timeout,
        turn_budget=20 if budget is None else budget.turn_budget,
    )
