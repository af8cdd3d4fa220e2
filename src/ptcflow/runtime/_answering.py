"""Which agent takes a session's next turn: the one that answered last.

A run on a session whose earlier turns handed the conversation on (a handoff tool: see
``ptcflow.handoff``) starts with the agent that answered last, not with the one given:
the stored conversation says who it is (each handoff call answered by its transfer note),
and the handoff tools of the given agent, then of each agent handed to, say which agent
(and tools) that is. No schema, no extra column: the conversation is the record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ptcflow.runtime._toolbox import Toolbox
from ptcflow.signals import Message

__all__ = ("answering_agent",)


def answering_agent(
    strategy: Any, tools: Toolbox, agents: Mapping[str, Any], messages: Sequence[Message]
) -> tuple[Any, Toolbox]:
    """The strategy (and its tools) that answered last in ``messages``, starting from
    ``strategy`` with ``tools``: each tool message answering a handoff tool of the agent
    in charge with its transfer note passes the conversation to the tool's agent.

    The walk stops at an agent that plans its own runs (a SubAgent: its task comes from
    its input signature, which the next user message does not fill) or that is unknown:
    the last strategy reached takes the turn.
    """
    current, box = strategy, tools
    for message in messages:
        if message.role != "tool" or not message.name:
            continue
        tool = box.tools.get(message.name)
        fn = tool.fn if tool is not None else None
        if not getattr(fn, "handoff_agent", "") or message.content != getattr(fn, "note", None):
            continue
        target = getattr(fn, "target", None)
        if isinstance(target, str):
            target = agents.get(target)
        if target is None or hasattr(type(target), "plan_run"):
            break  # a SubAgent (or an agent gone): the walk ends with the last strategy
        own = getattr(fn, "tools", None)
        current, box = target, box if own is None else Toolbox.build(own)
    return current, box
