"""ReAct's side of a handoff: the model calls a handoff tool (``ToolSpec.handoff`` set), the
runtime runs the next agent on the conversation, and its answer ends this run.

Pure, as the rest of ReAct: which call hands the conversation over is decided here (the
first handoff call of an answer; any other one in the same answer is refused with a tool
error, so one answer never hands the conversation to two agents), and the run ends with
what the handoff call's result holds: the agent that answered, its value, the messages it
added and the note that answers the handoff call in the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ptcflow.directives import Directive, EmitToolError
from ptcflow.signals import VALIDATION, ErrorEnvelope, Message, ToolCall
from ptcflow.strategies.react._state import ReActState

__all__ = ("handoff_answer", "handoff_directives")

_replace = msgspec.structs.replace


def handoff_directives(
    state: ReActState, calls: tuple[ToolCall, ...], directives: tuple[Directive, ...]
) -> tuple[ReActState, tuple[Directive, ...]]:
    """The directives of an answer's tool calls when the run has handoff tools: the first
    handoff call is performed (and remembered as :attr:`ReActState.handoff`); a second one
    in the same answer gets a ``validation`` tool error instead. Other calls run as usual."""
    names = state.handoff_tools
    chosen: ToolCall | None = None
    out: list[Directive] = []
    for call, directive in zip(calls, directives, strict=True):
        if call.name not in names:
            out.append(directive)
        elif chosen is None:
            chosen = call
            out.append(directive)
        else:
            error = ErrorEnvelope.make(
                VALIDATION,
                f"only one handoff per answer: the conversation goes to {chosen.name!r} "
                f"(call {chosen.id!r}), so {call.name!r} was not called",
                {"tool": call.name, "handoff": chosen.name},
                retryable=False,
            )
            out.append(
                EmitToolError(
                    id=call.id,
                    request_id=state.request_id,
                    iteration=state.iteration,
                    tool_name=call.name,
                    error=error,
                )
            )
    if chosen is None:
        return state, directives
    return _replace(state, handoff=chosen.id), tuple(out)


def handoff_answer(
    state: ReActState, messages: tuple[Message, ...], payload: Any
) -> ReActState | None:
    """The completed state of a run whose handoff call returned ``payload`` (a mapping
    with ``agent``, ``value``, ``messages``, ``note``; ``None`` when it is not one):
    the handoff call answered by its note, the next agent's messages appended, its value
    the run's."""
    if not isinstance(payload, Mapping) or not {"agent", "value", "messages", "note"} <= set(
        payload
    ):
        return None
    agent, note = payload["agent"], payload["note"]
    if not isinstance(agent, str) or not isinstance(note, str):
        return None
    try:
        added = msgspec.convert(payload["messages"], tuple[Message, ...])
    except msgspec.ValidationError:
        return None
    call_id = state.handoff
    answered = tuple(
        [
            Message(role="tool", content=note, tool_call_id=m.tool_call_id, name=m.name)
            if m.role == "tool" and m.tool_call_id == call_id
            else m
            for m in messages
        ]
    )
    value = payload["value"]
    text = value if isinstance(value, str) else _last_text(added)
    return _replace(
        state,
        status="completed",
        messages=answered + added,
        pending=(),
        handoff=None,
        value=value,
        text=text,
        agent=agent,
        reason="handoff",
    )


def _last_text(messages: tuple[Message, ...]) -> str:
    for message in reversed(messages):
        if message.role == "assistant" and message.content:
            return message.content
    return ""
