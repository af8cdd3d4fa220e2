"""Handoffs: an agent hands the conversation to another agent (as the OpenAI Agents SDK's
``handoff()`` does).

:func:`handoff` makes a tool (``transfer_to_<agent>``) whose function is a
:class:`HandoffCall`, a :class:`~ptcflow.runtime.ChildTool` like an agent used as a tool:
when the model calls it, the runtime runs the next agent as a child run of the caller
(nested in the call, its spans under the call's span, within the caller's deadline and
budget). What differs from an agent tool:

* the next agent gets the **conversation** (the caller's, as it stands when the call is
  made, the call answered by a transfer note), passed through the handoff's
  ``input_filter`` as its history; a ReAct continues it without a new user message, a
  SubAgent gets the task the model wrote as the call's arguments;
* its answer ends the caller's run: the strategy (ReAct) decides that, purely, from the
  tool's spec (``ToolSpec.handoff``) and the call's result (the agent that answered, its
  value, the messages it added), and ``Step.agent`` names who answered;
* the runtime publishes ``ai.handoff`` before the next agent starts;
* a chain of handoffs is bounded by ``Limits.max_handoffs``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from ptcflow.agent._as_tool import AgentCall, call_result
from ptcflow.errors import UsageError
from ptcflow.runtime import ParentRun, RunPlan, Step
from ptcflow.runtime.lowlevel import typed_finish
from ptcflow.sessions import check_history
from ptcflow.signals import VALIDATION, Err, ErrorEnvelope, Message, Ok, json_safe
from ptcflow.signature import parse, to_plain
from ptcflow.tools import Tool, for_agent

__all__ = (
    "MAX_HANDOFFS_EXCEEDED",
    "UNKNOWN_AGENT",
    "HandoffCall",
    "InputFilter",
    "filtered_history",
    "handoff",
    "handoff_history",
    "handoff_result",
    "past_max_handoffs",
    "transfer_note",
    "unknown_agent",
)

MAX_HANDOFFS_EXCEEDED: Final = "max_handoffs_exceeded"
"""The error type of a run whose conversation was to be handed on past
``Limits.max_handoffs`` (a cycle of handoffs ends there)."""
UNKNOWN_AGENT: Final = "unknown_agent"
"""The error type of a handoff naming an agent (by a string) the run does not have."""

InputFilter = Callable[[tuple[Message, ...]], Sequence[Message]]
"""What the next agent sees: called with the conversation (the handoff call answered last),
returns the history the next agent continues (``ptcflow.sessions.remove_all_tools``)."""

_CONTINUE: Final = {"continue": True}
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")


class HandoffCall:
    """The function of a handoff tool: runs the next agent on the conversation.

    Inside a run, the runtime calls :meth:`plan_child` and :meth:`child_result` (the
    :class:`~ptcflow.runtime.ChildTool` protocol) and reads :attr:`handoff_agent` (the
    tool's ``ToolSpec.handoff``). Called directly it refuses: a handoff needs a run whose
    conversation it hands on.

    Attributes:
        target: the next agent: a strategy that keeps a conversation (a ``ReAct``), a
            :class:`~ptcflow.SubAgent`, or the name of one in the run's ``agents=``.
        tools: the tools of a strategy target (``None``: the caller's tools).
        input_filter: what the next agent sees (``None``: the whole conversation).
        tool_name: the tool's name (``transfer_to_<agent>``).
        handoff_agent: the next agent's name.
    """

    __slots__ = ("handoff_agent", "input_filter", "target", "tool_name", "tools")

    def __init__(
        self,
        target: Any,
        *,
        tools: Any,
        input_filter: InputFilter | None,
        tool_name: str,
        agent_name: str,
    ) -> None:
        self.target = target
        self.tools = tools
        self.input_filter = input_filter
        self.tool_name = tool_name
        self.handoff_agent = agent_name

    def __repr__(self) -> str:
        return f"HandoffCall({self.handoff_agent!r}, tool={self.tool_name!r})"

    async def __call__(self, **arguments: Any) -> Any:
        """Refuse: a handoff hands on a run's conversation, so it runs inside a run.

        Raises:
            UsageError: always.
        """
        raise UsageError(
            f"the handoff tool {self.tool_name!r} was called outside a run: give it to an "
            "agent's tools (rt.run(ReAct(), ..., tools=[handoff(...)]) or SubAgent(tools=...)), "
            "whose model calls it"
        )

    @property
    def note(self) -> str:
        """What answers the handoff call in the conversation: ``{"assistant": <agent>}``."""
        return transfer_note(self.handoff_agent)

    def plan_child(self, parent: ParentRun, arguments: dict[str, Any]) -> RunPlan | Err:
        """The next agent's run on the conversation of ``parent``, or the call's error
        (past ``max_handoffs``, an unknown agent, a filter's bad history)."""
        chain = (*parent.handoffs, parent.name)
        name = self.handoff_agent
        refused = past_max_handoffs(self.tool_name, parent.name, chain, name, parent.max_handoffs)
        if refused is not None:
            return refused
        target = self.target
        if isinstance(target, str):
            agents = parent.agents if isinstance(parent.agents, Mapping) else {}
            if target not in agents:
                return unknown_agent(self.tool_name, parent.name, target, agents)
            target = agents[target]
            problem = _not_an_agent(target)
            if problem is not None:
                return _error(
                    VALIDATION,
                    f"handoff {self.tool_name!r}: agents[{self.target!r}] is {problem}",
                    {"agent": self.target},
                )
        history = filtered_history(
            parent.conversation,
            call_id=parent.call_id,
            tool_name=self.tool_name,
            agent=name,
            input_filter=self.input_filter,
        )
        if isinstance(history, Err):
            return history
        if _is_subagent(target):
            planned = AgentCall(target, None, self.tool_name).plan_child(parent, arguments)
            if isinstance(planned, Err):
                return planned
        else:
            tools = parent.tools if self.tools is None else self.tools
            planned = RunPlan(
                strategy=target,
                input=dict(_CONTINUE),
                tools=tools,
                llm=parent.llm,
                name=str(getattr(target, "name", "") or type(target).__name__),
                inherit=parent.inherit,
                finish=typed_finish(target),
            )
        parent.notes["sent"] = len(history)
        return dataclasses.replace(planned, history=history, handoffs=chain)

    def child_result(self, parent: ParentRun, step: Step) -> Ok[Any] | Err:
        """The call's result: the agent that answered, its value, the messages it added
        and the transfer note (what a strategy ends its run with); or the next agent's
        error, as it is (a program calling the tool gets the value alone, as from an agent
        used as a tool)."""
        size = parent.notes.get("sent")
        if size is None:  # pragma: no cover - planned by this object, always recorded
            size = len(self._history(parent))
        return handoff_result(self.handoff_agent, step, sent=size, from_program=parent.from_program)

    def _history(self, parent: ParentRun) -> tuple[Message, ...]:
        """The conversation as the next agent sees it (see :func:`handoff_history`)."""
        return handoff_history(
            parent.conversation, parent.call_id, self.tool_name, self.note, self.input_filter
        )


def unknown_agent(tool_name: str, caller: str, agent: str, agents: Mapping[str, Any]) -> Err:
    """The ``unknown_agent`` error of a handoff naming an agent the run does not have."""
    known = ", ".join(sorted(agents)) or "none"
    return _error(
        UNKNOWN_AGENT,
        f"handoff {tool_name!r} (called by {caller!r}) names agent "
        f"{agent!r}, which this run does not have (agents: {known}); pass "
        f"agents={{{agent!r}: ...}} to rt.run or Runtime, or hand off to the "
        "agent itself: handoff(agent)",
        {"agent": agent, "available": sorted(agents)},
    )


def transfer_note(agent: str) -> str:
    """What answers a handoff call in the conversation: ``{"assistant": <agent>}``.

    Example:
        >>> transfer_note("billing")
        '{"assistant": "billing"}'
    """
    return json.dumps({"assistant": agent})


def past_max_handoffs(
    tool_name: str,
    caller: str,
    chain: tuple[str, ...],
    agent: str,
    max_handoffs: int,
    *,
    setting: str = "Limits.max_handoffs",
    raise_it: str = "Runtime(limits=Limits(max_handoffs=...))",
) -> Err | None:
    """The ``max_handoffs_exceeded`` error of handing the conversation from ``caller``
    (reached through ``chain``, ``caller`` last) on to ``agent``, or ``None`` within the
    limit; ``setting`` and ``raise_it`` name the limit and how to raise it."""
    if len(chain) <= max_handoffs:
        return None
    shown = " → ".join((*chain, agent))
    return _error(
        MAX_HANDOFFS_EXCEEDED,
        f"handoff {tool_name!r} (called by {caller!r}) would hand the "
        f"conversation on a {_ordinal(len(chain))} time, past {setting}="
        f"{max_handoffs}: {shown}. If the agents hand it back and forth (a "
        "cycle), tell them when to answer themselves, or drop the handoff back; "
        f"else raise {raise_it}",
        {"agent": agent, "chain": list(chain), "max_handoffs": max_handoffs},
    )


def handoff_history(
    conversation: tuple[Message, ...],
    call_id: str,
    tool_name: str,
    note: str,
    input_filter: InputFilter | None,
) -> tuple[Message, ...]:
    """The conversation as the next agent sees it: ``conversation``, the handoff call (the
    only call kept of its assistant message: the others have no result yet) answered by
    the transfer ``note``, through ``input_filter``; checked.

    Raises:
        UsageError: the filter returned a history that breaks tool-call pairing (or
            something that is not messages).
    """
    messages = conversation
    last = messages[-1] if messages else None
    if last is not None and any(c.id == call_id for c in last.tool_calls):
        kept = tuple([c for c in last.tool_calls if c.id == call_id])
        call = msgspec.structs.replace(last, tool_calls=kept)
        answer = Message(role="tool", content=note, tool_call_id=call_id, name=tool_name)
        messages = (*messages[:-1], call, answer)
    if input_filter is not None:
        filtered = input_filter(messages)
        if isinstance(filtered, str | bytes | Mapping) or filtered is None:
            raise UsageError(f"it returned {type(filtered).__name__}, not a list of messages")
        messages = tuple(filtered)
    return check_history(messages)


def filtered_history(
    conversation: tuple[Message, ...],
    *,
    call_id: str,
    tool_name: str,
    agent: str,
    input_filter: InputFilter | None,
) -> tuple[Message, ...] | Err:
    """:func:`handoff_history`, or the handoff's ``validation`` error naming the filter
    (a bad history, or the filter raised)."""
    try:
        return handoff_history(conversation, call_id, tool_name, transfer_note(agent), input_filter)
    except UsageError as exc:
        return _error(
            VALIDATION,
            f"handoff {tool_name!r} (to {agent!r}): the input filter "
            f"{_label(input_filter)} returned a history the next agent cannot "
            f"continue: {exc}. Keep every tool call with its result (or drop both)",
            {"agent": agent},
        )
    except Exception as exc:  # the filter is the user's code
        return _error(
            VALIDATION,
            f"handoff {tool_name!r} (to {agent!r}): the input filter "
            f"{_label(input_filter)} raised {type(exc).__name__}: {exc}",
            {"agent": agent, "exception": type(exc).__name__},
        )


def handoff_result(agent: str, step: Step, *, sent: int, from_program: bool) -> Ok[Any] | Err:
    """A handoff call's result from the next agent's Step (``agent``: its name; ``sent``:
    how many messages it was given): the agent that answered, its value, the messages it
    added and the transfer note (what a strategy ends its run with); or its error, as it
    is (a program calling the tool gets the value alone, as from an agent used as a
    tool)."""
    if from_program or not step.ok:
        if not step.ok and step.error is not None and step.fail is None:
            return Err(error=step.error)
        return call_result(agent, step, from_program=from_program)
    return Ok(
        payload={
            "agent": step.agent or agent,
            "value": json_safe(to_plain(step.value)),
            "messages": msgspec.to_builtins(step.messages[sent:]),
            "note": transfer_note(agent),
        }
    )


def handoff(
    agent: Any,
    *,
    input_filter: InputFilter | None = None,
    tools: Any = None,
    name: str | None = None,
    description: str | None = None,
) -> Tool:
    """A tool that hands the conversation to ``agent`` (``transfer_to_<agent>``).

    Give it to an agent's tools; when its model calls it, the runtime runs ``agent`` on
    the conversation so far (``input_filter`` decides what it sees), and ``agent``'s answer
    is the run's answer: ``step.value``, ``step.messages`` (the whole conversation, the
    next agent's messages included) and ``step.agent`` (its name). See
    docs/conversations.md, "Handoffs".

    Args:
        agent: the next agent: a ``ReAct`` (or another strategy that keeps a
            conversation), a :class:`~ptcflow.SubAgent` (the model fills its input
            signature as the tool's arguments), or the name of one given to the run as
            ``agents={name: agent}`` (for agents that hand back and forth).
        input_filter: ``messages -> messages``: what the next agent sees (default: the
            whole conversation; ``ptcflow.sessions.remove_all_tools`` drops tool calls).
        tools: the tools of a strategy ``agent`` (default: the caller's tools); a
            SubAgent has its own.
        name: the tool's name (default ``transfer_to_<agent name>``).
        description: the tool's description (default: says whom it hands to, and the
            agent's description if it has one).

    Raises:
        UsageError: ``agent`` is not an agent (a function, a strategy that keeps no
            conversation, ...), ``input_filter`` is not callable, or ``tools`` is given
            for a SubAgent.

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> handoff(ReAct(name="billing")).name
        'transfer_to_billing'
    """
    if isinstance(agent, str):
        if not agent:
            raise UsageError("handoff() got an empty agent name; name an agent of agents=")
        agent_name = agent
    else:
        problem = _not_an_agent(agent)
        if problem is not None:
            raise UsageError(f"handoff() takes an agent, but got {problem}")
        agent_name = str(getattr(agent, "name", "") or type(agent).__name__)
    if input_filter is not None and not callable(input_filter):
        raise UsageError(
            f"handoff({agent_name!r}): input_filter must be a function messages -> messages "
            f"(such as ptcflow.sessions.remove_all_tools), got {type(input_filter).__name__}"
        )
    if tools is not None:
        if _is_subagent(agent):
            raise UsageError(
                f"handoff({agent_name!r}): a SubAgent brings its own tools; set "
                "SubAgent(tools=...) instead of handoff(tools=...)"
            )
        tools = for_agent(tools)
    tool_name = name or "transfer_to_" + (_NOT_NAME.sub("_", agent_name).strip("_") or "agent")
    text = description
    if text is None:
        about = getattr(agent, "description", None)
        text = f"Hand the conversation to the agent {agent_name!r}, which answers from then on."
        if isinstance(about, str) and about:
            text += f" {about}"
    signature = None
    if _is_subagent(agent) and agent.signature is not None:
        signature = parse(agent.signature)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", tool_name):
            signature = signature.with_name(tool_name)
    return Tool(
        tool_name,
        HandoffCall(
            agent,
            tools=tools,
            input_filter=input_filter,
            tool_name=tool_name,
            agent_name=agent_name,
        ),
        description=text,
        signature=signature,
        calls_model=True,
    )


def _is_subagent(agent: Any) -> bool:
    from ptcflow.agent._subagent import SubAgent

    return isinstance(agent, SubAgent)


def _not_an_agent(agent: Any) -> str | None:
    """What is wrong with ``agent`` as a handoff's target (``None``: nothing)."""
    if _is_subagent(agent):
        return None
    kind = type(agent).__name__
    if isinstance(agent, type):
        return f"the class {agent.__name__}; pass an instance (ReAct(name=...))"
    if callable(getattr(agent, "init", None)) and callable(getattr(agent, "handle", None)):
        if callable(getattr(agent, "conversation", None)):
            return None
        return (
            f"the strategy {kind}, which keeps no conversation, so it cannot take one "
            "over; hand off to a ReAct or a SubAgent"
        )
    if isinstance(agent, Tool) or callable(agent):
        return (
            f"{kind} {getattr(agent, 'name', None) or getattr(agent, '__name__', '')!r}, not "
            "an agent; give a function to the agent as a tool, and hand off to a ReAct or a "
            "SubAgent (or the name of one in agents=)"
        )
    return (
        f"{agent!r:.60} (type {kind}), not an agent; hand off to a ReAct or a SubAgent (or "
        "the name of one in agents=)"
    )


def _ordinal(n: int) -> str:
    if n % 100 in (11, 12, 13):
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def _label(fn: Any) -> str:
    return repr(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _error(kind: str, message: str, details: dict[str, Any]) -> Err:
    return Err(error=ErrorEnvelope.make(kind, message, details, retryable=False))
