"""The end of a PTC turn: folding the program's result, then the next turn or the end.

Split out of :mod:`ptcflow.strategies.ptc._strategy` (the transitions on the model's side); pure
functions of the strategy's config and state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ptcflow.core import StepFail
from ptcflow.directives import Directive
from ptcflow.signals import (
    VALIDATION,
    Err,
    ErrorEnvelope,
    Message,
    ProgramError,
    ProgramOutput,
    ProgramResultData,
    Signal,
    ToolResultData,
)
from ptcflow.strategies._subagent import check_fail, check_return, failed as ended
from ptcflow.strategies.ptc._feedback import feedback
from ptcflow.strategies.ptc._state import PtcState, PtcTurn

if TYPE_CHECKING:
    from ptcflow.strategies.ptc._strategy import PTC

__all__ = ("INFRA_REASONS", "fail_value", "failed", "next_turn", "program_result", "timed")

Transition = tuple[PtcState, Sequence[Directive]]
_NONE: tuple[Directive, ...] = ()
_replace = msgspec.structs.replace
INFRA_REASONS: Final = {
    "cancelled": "cancelled",
    "timeout": "timeout",
    "turn_budget_exceeded": "turn_budget_exceeded",
}
"""The reason of a run whose model call or program ended with one of these error types."""
JUDGMENT_REASONS: Final = {
    "validation": "invalid_return",
    "no_code": "no_code",
    "fail": "invalid_fail",
}


def failed(state: PtcState, reason: str, message: str, error_type: str, **changes: Any) -> PtcState:
    """:func:`ptcflow.strategies._subagent.failed`, with nothing left in flight."""
    return ended(
        state, reason, message, error_type, llm_call_id=None, program_call_id=None, **changes
    )


def timed(state: PtcState, signal: Signal) -> dict[str, Any]:
    """The state's first and last signal times after ``signal``."""
    return {"first_time": state.first_time or signal.time, "last_time": signal.time}


def program_result(ptc: PTC, state: PtcState, signal: Signal) -> Transition:
    """Fold the program directive's end (``ai.program.result``, or its ``ai.tool.result``)."""
    data = signal.data
    if signal.call_id != state.program_call_id or not isinstance(
        data, ProgramResultData | ToolResultData
    ):
        return state, _NONE
    changes = timed(state, signal)
    turn = _replace(state.turns[-1], ended=signal.time)
    state = _replace(state, program_call_id=None, **changes)
    result = data.result
    if isinstance(result, Err):
        error = result.error
        reason = INFRA_REASONS.get(error.type, "program_error")
        turns = (*state.turns[:-1], turn)
        ended = failed(
            state, reason, error.message, error.type, op="program", error=error, turns=turns
        )
        return ended, _NONE
    out: Any = result.payload  # typed, but a custom handler may send plain data
    if not isinstance(out, ProgramOutput):
        out = msgspec.convert(out, ProgramOutput)
    turn = _replace(turn, output=out)
    turns = (*state.turns[:-1], turn)
    if out.memory_bytes > ptc.memory_limit_bytes:
        message = (
            f"the agent's memory needs at least {out.memory_bytes} bytes, over its limit of "
            f"{ptc.memory_limit_bytes}; keep smaller values (summaries, not whole tool results)"
        )
        details = {"memory_bytes": out.memory_bytes, "limit": ptc.memory_limit_bytes}
        return failed(
            state, "memory_limit", message, "memory_limit", details=details, turns=turns
        ), _NONE
    state = _replace(state, memory=out.memory, functions=out.functions, turns=turns)
    if out.error is not None:
        return next_turn(ptc, state, turn, out.error, out)
    if out.failed:
        checked = check_fail(out.fail_value)
        if isinstance(checked, StepFail):
            ended = _replace(
                state,
                status="failed",
                fail=checked,
                error=ErrorEnvelope.make(
                    "fail", checked.message, {"reason": checked.reason, "op": checked.op}
                ),
                reason="fail",
            )
            return ended, _NONE
        return next_turn(ptc, state, turn, checked, out)
    if out.returned or state.judgment:
        if out.return_ends_run and out.returned:
            # the host checked it as check_return would (the directive asked for this
            # strategy's signature and mode: set only without an output_type)
            problem, warnings = None, list(out.return_warnings)
        else:
            problem, warnings = check_return(
                ptc.parsed_signature(), out.value, ptc.signature_validation, ptc.output_type
            )
        if problem is None:
            if warnings:
                note = ProgramError(category="validation_warning", message="; ".join(warnings))
                turns = (*state.turns[:-1], _replace(turn, problem=note))
            reason = "returned" if out.returned else "answered"
            done = _replace(state, status="completed", value=out.value, reason=reason, turns=turns)
            return done, _NONE
        return next_turn(ptc, state, turn, problem, out)
    if isinstance(out.value, Mapping):
        merged = {**state.ctx, **{k: v for k, v in out.value.items() if k != "fail"}}
        state = _replace(state, ctx=merged)
    return next_turn(ptc, state, turn, None, out)


def next_turn(
    ptc: PTC,
    state: PtcState,
    turn: PtcTurn,
    problem: ProgramError | None,
    output: ProgramOutput | None,
) -> Transition:
    """Feed the turn back and start the next one, or end the run when none is left."""
    turns = (*state.turns[:-1], _replace(turn, problem=problem))
    n = state.turn
    if state.judgment and problem is not None:
        reason = JUDGMENT_REASONS.get(problem.category, "program_error")
        return failed(state, reason, problem.describe(), VALIDATION, turns=turns), _NONE
    if n >= ptc.max_turns:
        message = f"no (return ...) after {ptc.max_turns} turns"
        if problem is not None:
            message += f"; the last turn ended with: {problem.describe()}"
        return failed(
            state, "max_turns_exceeded", message, "max_turns_exceeded", turns=turns,
            details={"max_turns": ptc.max_turns},
        ), _NONE  # fmt: skip
    ctx = state.ctx
    if problem is not None:
        ctx = {**ctx, "fail": fail_value(problem, n)}
    elif "fail" in ctx:
        ctx = {k: v for k, v in ctx.items() if k != "fail"}
    text = feedback(
        next_turn=n + 1,
        max_turns=ptc.max_turns,
        source=turn.source,
        output=output,
        problem=problem,
        limits=ptc.prompt_limit,
        tool_inputs=state.tool_inputs,
    )
    messages = (*state.messages, Message(role="user", content=text))
    directive = ptc.llm_directive(state.run_id, n + 1, state.request_id, messages)
    state = _replace(
        state,
        status="awaiting_llm",
        ctx=ctx,
        messages=messages,
        llm_call_id=directive.id,
        turns=(*turns, PtcTurn(turn=n + 1, sent=len(messages), started=state.last_time)),
    )
    return state, (directive,)


def fail_value(problem: ProgramError, turn: int) -> dict[str, Any]:
    """``ctx/fail``: the previous turn's problem as data."""
    out: dict[str, Any] = {"turn": turn, "category": problem.category, "message": problem.message}
    if problem.line is not None:
        out["line"] = problem.line
        out["column"] = problem.column
    return out
