"""Input filters of handoffs: what part of a conversation the next agent sees."""

from __future__ import annotations

from collections.abc import Sequence

from ptcflow.signals import Message

__all__ = ("remove_all_tools",)


def remove_all_tools(messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` without tool calls and their results: the ``tool`` messages dropped,
    the tool calls of assistant messages dropped, and an assistant message left with no
    text dropped too (as the OpenAI Agents SDK's ``handoff_filters.remove_all_tools``).

    An input filter for ``ptcflow.handoff(agent, input_filter=remove_all_tools)``: the next
    agent sees what was said, not which tools were called (the handoff call included).

    Example:
        >>> from ptcflow.signals import ToolCall
        >>> msgs = [
        ...     Message(role="user", content="Refund order 7"),
        ...     Message(role="assistant", content="", tool_calls=(
        ...         ToolCall(id="c1", name="lookup", input={"id": 7}),)),
        ...     Message(role="tool", content="{...}", tool_call_id="c1", name="lookup"),
        ...     Message(role="assistant", content="Order 7 is paid."),
        ... ]
        >>> [m.content for m in remove_all_tools(msgs)]
        ['Refund order 7', 'Order 7 is paid.']
    """
    out: list[Message] = []
    for message in messages:
        if message.role == "tool":
            continue
        if message.tool_calls:
            if not message.content:
                continue
            message = Message(role=message.role, content=message.content, name=message.name)
        out.append(message)
    return tuple(out)
