"""The turn trace of a JSON-mode run, read back from its conversation."""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.core import (
    ExecutionTrace,
    ProgramTrace,
    PromptTrace,
    TokenCounts,
    ToolCallTrace,
    Trace,
    TurnTrace,
)
from ptcflow.signals import ProgramError, Usage
from ptcflow.strategies._subagent import span_ms
from ptcflow.strategies.react import ReActState

__all__ = ("JsonCall", "json_trace")


class JsonCall(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One model call of a JSON-mode run.

    Attributes:
        sent: how many messages of the conversation the model was sent.
        answered: the index of the assistant message that answered (``-1`` until then).
        started: when the call started (RFC 3339; ``""`` unknown).
        timestamp: when the answer arrived.
        usage: its tokens.
        value: the decoded answer, when it was the final one.
        problem: what was wrong with the answer, if anything.
    """

    sent: int
    answered: int = -1
    started: str = ""
    timestamp: str = ""
    usage: Usage = Usage()
    value: Any = None
    problem: ProgramError | None = None


def json_trace(
    react: ReActState | None,
    calls: tuple[JsonCall, ...],
    system: str,
    expanded: str,
    *,
    total_ms: float,
    usage: Usage,
) -> Trace:
    """One :class:`TurnTrace` per answered model call (its tool calls included)."""
    messages = react.messages if react is not None else ()
    turns = []
    for n, call in enumerate(calls, 1):
        if call.answered < 0 or call.answered >= len(messages):
            continue
        answer = messages[call.answered]
        results = {
            m.tool_call_id: m.content
            for m in messages[call.answered + 1 :]
            if m.role == "tool" and m.tool_call_id
        }
        tool_calls = tuple(
            _tool_call(i, c.name, c.input, results.get(c.id))
            for i, c in enumerate(answer.tool_calls)
        )
        turns.append(
            TurnTrace(
                turn=n,
                timestamp=call.timestamp,
                duration_ms=span_ms(call.started, call.timestamp),
                prompt=PromptTrace(
                    system=system, messages=messages[: call.sent], expanded_template=expanded
                ),
                llm_response=answer.content,
                program=ProgramTrace(),
                execution=ExecutionTrace(
                    result=call.value, tool_calls=tool_calls, error=call.problem
                ),
                tokens=TokenCounts(input=call.usage.input_tokens, output=call.usage.output_tokens),
            )
        )
    return Trace(
        turns=tuple(turns),
        total_duration_ms=total_ms,
        total_tokens=TokenCounts(input=usage.input_tokens, output=usage.output_tokens),
    )


def _tool_call(index: int, name: str, args: dict[str, Any], content: str | None) -> ToolCallTrace:
    body: Any = None
    if content is not None:
        try:
            body = msgspec.json.decode(content)
        except msgspec.DecodeError:
            body = {"ok": True, "result": content}
    if isinstance(body, dict) and body.get("ok") is False:
        err = body.get("error") or {}
        error = ProgramError(
            category=str(err.get("type", "tool_error")), message=str(err.get("message", ""))
        )
        return ToolCallTrace(name=name, args=args, error=error, index=index)
    result = body.get("result") if isinstance(body, dict) else body
    return ToolCallTrace(name=name, args=args, result=result, index=index)
