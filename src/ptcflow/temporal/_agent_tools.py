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

from collections.abc import Mapping
from typing import Any

import msgspec

from ptcflow.agent import AgentCall
from ptcflow.agent.lowlevel import Lineage, past_max_handoffs, unknown_agent
from ptcflow.errors import UsageError
from ptcflow.runtime import ParentRun, RunPlan, Unset
from ptcflow.runtime.lowlevel import Toolbox
from ptcflow.sessions import remove_all_tools
from ptcflow.signals import Err
from ptcflow.temporal._agents import WORKERS_MODEL, workers_model
from ptcflow.temporal._refs import agent_ref, path_of, tool_ref
from ptcflow.temporal._spec import AgentTool, MissionBudget
from ptcflow.tools import Tool, render_tool_signature

__all__ = ("mission_of", "plan_tools")


def mission_of(inherit: Any) -> MissionBudget | None:
    """The turn budget of the mission a run starts (its plan's ``inherit``), if any."""
    if isinstance(inherit, Lineage):
        return MissionBudget(turn_budget=inherit.mission.limits.turn_budget)
    return None


def plan_tools(
    toolbox: Toolbox,
    *,
    caller: str,
    model: str | None,
    inherit: Any,
    agents: Mapping[str, Any] | None = None,
    chain: tuple[str, ...] = (),
    max_handoffs: int = 8,
) -> tuple[tuple[Any, ...], tuple[AgentTool, ...]]:
    """The references of ``toolbox``'s tools, and the plans of its agents used as tools.

    Args:
        toolbox: a run's tools.
        caller: the calling run's agent name.
        model: the model name the caller's strategy asks for (a ReAct caller's).
        inherit: the caller's ``RunPlan.inherit`` (a SubAgent's lineage), or ``None``.
        agents: the run's ``agents=``, where a handoff naming its agent finds it.
        chain: the handoffs planned to reach ``caller`` (a chain of SubAgents handing on
            to each other is planned up to ``max_handoffs`` deep).
        max_handoffs: ``TemporalOptions.max_handoffs``.

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
    everyone = dict(agents or {})
    planned = tuple(
        _handoff(t, parent, everyone, chain, max_handoffs)
        if getattr(t.fn, "handoff_agent", "")
        else _plan(t, parent, everyone, chain, max_handoffs)
        for n, t in toolbox.tools.items()
        if n in toolbox.child_names
    )
    return refs, planned


def _handoff(
    tool: Tool,
    parent: ParentRun,
    agents: dict[str, Any],
    chain: tuple[str, ...],
    max_handoffs: int,
) -> AgentTool:
    """The plan of a handoff tool: the next agent (found in ``agents`` when named), its
    tools (the caller's unless given), its input filter by name."""
    fn: Any = tool.fn
    name: str = fn.handoff_agent
    filter_name, filter_path = _filter_of(tool.name, fn.input_filter)
    target = fn.target
    if isinstance(target, str):
        if target not in agents:
            refused = unknown_agent(tool.name, parent.name, target, agents)
            return AgentTool(name=tool.name, agent=name, handoff=name, error=refused.error)
        target = agents[target]
    reached = (*chain, parent.name)
    too_deep = past_max_handoffs(
        tool.name,
        parent.name,
        reached,
        name,
        max_handoffs,
        setting="TemporalOptions.max_handoffs",
        raise_it="TemporalRuntime(options=TemporalOptions(max_handoffs=...))",
    )
    if too_deep is not None:
        return AgentTool(name=tool.name, agent=name, handoff=name, error=too_deep.error)
    if getattr(type(target), "plan_run", None) is not None:  # a SubAgent
        planned = _plan(
            Tool(tool.name, AgentCall(target, None, tool.name), signature=tool.signature),
            parent,
            agents,
            reached,
            max_handoffs,
        )
        return msgspec.structs.replace(
            planned, handoff=name, input_filter=filter_name, filter_path=filter_path
        )
    if not callable(getattr(target, "conversation", None)):
        raise UsageError(
            f"handoff {tool.name!r}: agents[{fn.target!r}] is {type(target).__name__}, which "
            "keeps no conversation; hand off to a ReAct or a SubAgent"
        )
    own = fn.tools
    refs: tuple[Any, ...] = ()
    specs: tuple[Any, ...] = ()
    nested: tuple[AgentTool, ...] = ()
    if own is not None:
        box = Toolbox.build(own)
        specs = box.specs
        refs, nested = plan_tools(
            box,
            caller=name,
            model=getattr(target, "model", None) or None,
            inherit=None,
            agents=agents,
            chain=reached,
            max_handoffs=max_handoffs,
        )
    return AgentTool(
        name=tool.name,
        agent=name,
        strategy=agent_ref(target),
        run_name=str(getattr(target, "name", "") or type(target).__name__),
        tools=refs,
        tool_specs=specs,
        agent_tools=nested,
        handoff=name,
        input_filter=filter_name,
        filter_path=filter_path,
        continues=True,
        caller_tools=own is None,
    )


def _filter_of(tool_name: str, input_filter: Any) -> tuple[str, str]:
    """A handoff's input filter as a workflow runs it: ``("remove_all_tools", "")`` for
    the built-in one (pure: the workflow runs it), ``("", path)`` for one of your own (a
    worker imports it by path and runs it), ``("", "")`` for none.

    Raises:
        UsageError: a filter a worker cannot import by name (a lambda, a closure).
    """
    if input_filter is None:
        return "", ""
    if input_filter is remove_all_tools:
        return "remove_all_tools", ""
    return "", path_of(input_filter, f"the input filter of handoff {tool_name!r}")


def _plan(
    tool: Tool,
    parent: ParentRun,
    agents: dict[str, Any],
    chain: tuple[str, ...],
    max_handoffs: int,
) -> AgentTool:
    fn: Any = tool.fn
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
        box,
        caller=name,
        model=getattr(strategy, "model", None) or None,
        inherit=planned.inherit,
        agents=agents,
        chain=chain,
        max_handoffs=max_handoffs,
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
