"""Agents as tools: ``SubAgent.as_tool`` (the spec's ``SubAgentTool``).

The tool's function is an :class:`AgentCall`, a :class:`~ptcflow.runtime.ChildTool`: when a
run calls the tool, the runtime checks the arguments against the agent's input signature
and runs the agent as a child run of the caller (``plan_child`` describes it; the model
comes by the spec's order: the agent's own, the one bound here, the caller's). The child's
Step becomes the call's result (``child_result``): its value, or a tool error carrying its
fail reason and message, which the calling model can react to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ptcflow.agent._mission import MAX_DEPTH_EXCEEDED, Lineage, Mission, MissionLimits
from ptcflow.agent._model import model_kind
from ptcflow.agent._plan import AgentOptions, SubAgentError, build, resolve_context
from ptcflow.errors import UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime import ParentRun, RunPlan, Step
from ptcflow.signals import VALIDATION, Err, ErrorEnvelope, Ok, json_safe
from ptcflow.signature import parse, redact_firewalled, to_plain
from ptcflow.tools import Tool

if TYPE_CHECKING:
    from ptcflow.agent._subagent import SubAgent

__all__ = ("AgentCall", "agent_tool", "call_result")


class AgentCall:
    """The function of an agent's tool: runs the agent as a child run of its caller.

    Inside a run, the runtime calls :meth:`plan_child` and :meth:`child_result` (the
    :class:`~ptcflow.runtime.ChildTool` protocol). Called directly (``await
    tool.fn(**arguments)``, or through :func:`ptcflow.tools.dispatch` outside a run) it
    runs the agent on a Runtime of its own with its own or the bound model.

    Attributes:
        agent: the :class:`~ptcflow.SubAgent`.
        llm: the model bound at ``as_tool`` (``None``: inherit the caller's).
        tool_name: the tool's name.
    """

    __slots__ = ("agent", "llm", "tool_name")

    def __init__(self, agent: SubAgent, llm: Any, tool_name: str) -> None:
        self.agent = agent
        self.llm = llm
        self.tool_name = tool_name

    def __repr__(self) -> str:
        return f"AgentCall({self.agent.name!r}, tool={self.tool_name!r})"

    async def __call__(self, **arguments: Any) -> Any:
        """Run the agent outside any run (no caller to inherit from); return its value.

        Raises:
            SubAgentError: the agent failed.
            UsageError: neither the agent nor the tool has a model.
        """
        llm = self.agent.llm if self.agent.llm is not None else self.llm
        step = await self.agent.run(llm=llm, context=arguments)
        if not step.ok:
            raise SubAgentError(step)
        return to_plain(step.value)  # an output_type's instance goes back to plain data

    def plan_child(self, parent: ParentRun, arguments: dict[str, Any]) -> RunPlan | Err:
        """The child run of this agent for a call from ``parent``, or the call's error.

        The model: the agent's own, else the one bound at ``as_tool``, else the one the
        caller uses (inherited through every level). The mission: the caller's (a new one
        when the caller is no agent). A call past the mission's ``max_depth`` is refused.
        """
        agent = self.agent
        up = parent.inherit if isinstance(parent.inherit, Lineage) else None
        root = up is None
        if up is not None:
            mission, depth, inherited = up.mission, up.depth + 1, up.llm
            base, options = up.base, up.options
        else:  # called by a plain strategy (ReAct ...): it is the mission's root
            mission, depth, options = Mission(MissionLimits()), 1, {}
            base, inherited = ModelSource.of(parent.llm), parent.model
        limit = mission.limits.max_depth
        if depth > limit:
            return _error(
                MAX_DEPTH_EXCEEDED,
                f"agent {agent.name!r} (tool {self.tool_name!r}, called by {parent.name!r}) "
                f"would run at nesting depth {depth}, past the mission's max_depth of {limit}; "
                "solve this part without calling it, or raise MissionLimits(max_depth=...) "
                "on the mission's first agent",
                {"agent": agent.name, "depth": depth, "max_depth": limit},
            )
        chosen = next((m for m in (agent.llm, self.llm, inherited) if m is not None), None)
        if isinstance(chosen, str) and base is None:
            return _error(
                VALIDATION,
                f"SubAgent({agent.name!r}) (tool {self.tool_name!r}) names the model "
                f"{chosen!r}, but its mission has no provider or model registry to resolve it: "
                "run the mission on a Runtime(llm=ModelRegistry...) or give it a provider",
                {"agent": agent.name, "model": chosen},
            )
        if chosen is None and base is None:
            return _error(
                VALIDATION,
                f"SubAgent({agent.name!r}) (tool {self.tool_name!r}) has no LLM: set "
                "SubAgent(llm=...), bind one with as_tool(llm=...), or give its caller one",
                {"agent": agent.name},
            )
        try:
            ctx, _ = resolve_context(arguments, None)
            lineage = Lineage(
                mission,
                agent=agent.name,
                depth=depth,
                llm=chosen,
                base=base,
                options=options,
                root=root,
            )
            opts = AgentOptions(**options)
            return build(agent, ctx, None, opts, chosen=chosen, base=base, lineage=lineage)
        except UsageError as exc:
            return _error(VALIDATION, f"tool {self.tool_name!r}: {exc}", {"agent": agent.name})

    def child_result(self, parent: ParentRun, step: Step) -> Ok[Any] | Err:
        """The call's result: the child's value, or a tool error with its fail reason.

        A value going to a model (a native tool call, not a program's) loses its
        firewalled (``_``) fields; a program gets them all.
        """
        up = parent.inherit
        if isinstance(up, Lineage) and step.trace is not None:
            up.children[parent.call_id] = step
        return call_result(self.agent.name, step, from_program=parent.from_program)


def call_result(agent: str, step: Step, *, from_program: bool) -> Ok[Any] | Err:
    """The result of a call of agent ``agent`` used as a tool, from its run's Step: its
    value (without firewalled fields when it goes to a model, not a program), or a tool
    error with its fail reason (:meth:`AgentCall.child_result`; a Temporal workflow gives
    its child workflows' Steps).

    Example:
        >>> call_result("finder", Step(run_id="r", ok=True, value={"id": 1}), from_program=True)
        Ok(payload={'id': 1})
    """
    if step.ok:
        value = json_safe(step.value)
        if not from_program:
            value = redact_firewalled(value, "parent")
        return Ok(payload=value)
    fail, error = step.fail, step.error
    reason = fail.reason if fail is not None else error.type if error is not None else "failed"
    message = fail.message if fail is not None else error.message if error is not None else ""
    details: dict[str, Any] = {
        "agent": agent,
        "reason": reason,
        "message": message,
        "run_id": step.run_id,
        "turns": step.turns,
    }
    if fail is not None and fail.op:
        details["op"] = fail.op
    if fail is not None and fail.details:
        details["details"] = redact_firewalled(fail.details, "parent")
    return _error(reason, f"agent {agent!r} failed ({reason}): {message}", details)


def _error(kind: str, message: str, details: dict[str, Any]) -> Err:
    return Err(error=ErrorEnvelope.make(kind, message, details, retryable=False))


def agent_tool(
    agent: SubAgent,
    *,
    llm: Any = None,
    name: str | None = None,
    description: str | None = None,
) -> Tool:
    """The tool that runs ``agent`` (:meth:`SubAgent.as_tool`).

    Raises:
        UsageError: an invalid tool name, or an ``llm`` of the wrong type.
    """
    if llm is not None and model_kind(llm) is None:
        raise UsageError(
            f"as_tool(llm=...) takes a provider, a model name or alias, or a function, got "
            f"{type(llm).__name__}"
        )
    tool_name = agent.name if name is None else name
    signature = parse(agent.signature) if agent.signature is not None else None
    if signature is not None:
        signature = signature.with_name(tool_name) if _plain_name(tool_name) else signature
    text = agent.description if description is None else description
    return Tool(
        tool_name,
        AgentCall(agent, llm, tool_name),
        description=text or f"Runs the agent {agent.name!r}: {agent.prompt}",
        signature=signature,
        calls_model=True,
    )


def _plain_name(name: str) -> bool:
    return name.replace("_", "a").replace("-", "a").isalnum() and not name[0].isdigit()
