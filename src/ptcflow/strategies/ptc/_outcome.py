"""The outcome of a finished PTC run: the result, ``fail`` and the turn trace."""

from __future__ import annotations

from typing import Any

from ptcflow.core import (
    ExecutionTrace,
    Outcome,
    ProgramTrace,
    PromptTrace,
    TokenCounts,
    ToolCallTrace,
    Trace,
    TurnTrace,
)
from ptcflow.signals import Err, Ok, ProgramError, Usage
from ptcflow.strategies._subagent import call_warnings, ended_outcome, keeps_trace, span_ms
from ptcflow.strategies.ptc._state import PtcState, PtcTurn

__all__ = ("ptc_outcome", "tokens")


def tokens(usage: Usage) -> TokenCounts:
    """The spec's ``token_counts`` of a :class:`~ptcflow.signals.Usage`."""
    return TokenCounts(input=usage.input_tokens, output=usage.output_tokens)


def ptc_outcome(
    state: PtcState, *, trace: bool | str, debug: bool, signature: str | None
) -> Outcome:
    """The :class:`Outcome` of a completed or failed run (``trace`` as the run asked)."""
    keep = keeps_trace(trace, state.status == "completed")
    return ended_outcome(state, _trace(state, debug) if keep else None, signature)


def _trace(state: PtcState, debug: bool) -> Trace:
    return Trace(
        turns=tuple(_turn(state, t, debug) for t in state.turns if t.timestamp),
        total_duration_ms=span_ms(state.first_time, state.last_time),
        total_tokens=tokens(state.usage),
    )


def _turn(state: PtcState, turn: PtcTurn, debug: bool) -> TurnTrace:
    out = turn.output
    problem = turn.problem
    parse_error = problem.message if problem is not None and problem.category == "no_code" else None
    if problem is None and out is not None and out.error is not None:
        problem = out.error
    calls: tuple[ToolCallTrace, ...] = ()
    if out is not None:
        calls = tuple(
            ToolCallTrace(
                name=c.name,
                args=c.args,
                result=c.result.payload if isinstance(c.result, Ok) else None,
                duration_ms=c.duration_ms,
                error=_tool_error(c.result),
                index=c.index,
                warnings=call_warnings(state.tool_inputs, c.name, c.args)
                if isinstance(c.result, Ok)
                else (),
            )
            for c in out.tool_calls
        )
    result: Any = None
    if out is not None:
        result = out.fail_value if out.failed else out.value
    return TurnTrace(
        turn=turn.turn,
        timestamp=turn.timestamp,
        duration_ms=span_ms(turn.started, turn.ended or turn.timestamp),
        prompt=PromptTrace(
            system=state.system,
            messages=state.messages[: turn.sent],
            expanded_template=state.expanded_prompt,
        ),
        llm_response=turn.response,
        program=ProgramTrace(
            source=turn.source, ast=turn.ast if debug else None, parse_error=parse_error
        ),
        execution=ExecutionTrace(
            result=result,
            tool_calls=calls,
            error=problem,
            context_snapshot=turn.ctx if debug else None,
            prints=out.prints if out is not None else (),
            memory=out.memory if debug and out is not None else None,
        ),
        tokens=tokens(turn.usage),
    )


def _tool_error(result: Ok[Any] | Err) -> ProgramError | None:
    if isinstance(result, Err):
        return ProgramError(category=result.error.type, message=result.error.message)
    return None
