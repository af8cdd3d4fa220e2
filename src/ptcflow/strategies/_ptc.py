"""The SubAgent loop (programmatic tool calling) as a pure state machine.

One turn: ask the model (``LLMGenerate``); take the one program from its response; run
it (``RunProgram``: the program runs in the sandbox and each of its ``(call ...)`` goes
through the runtime's tool machinery); then ``return`` ends the run (once its value
matches the signature), ``fail`` ends it as failed, and anything else (a plain value, an
error, a value that does not match) becomes the next turn's feedback, until the turns run
out. Nothing here awaits, reads a clock or draws random numbers: times come from the
signals, and directive ids from the run id and the turn number.

States and transitions (a signal that does not apply returns the very same state)::

    init ──(placeholder missing / bad input)──────────────────────────────▶ failed
      │ LLMGenerate llm/1
      ▼
    awaiting_llm ──ai.llm.response Err──────────────────────────────────▶ failed
      │ ai.llm.response Ok
      ├──no program in it (or several)──▶ next turn (feedback) / failed (no turns left)
      │ RunProgram program/n
      ▼
    awaiting_program ──ai.program.result Err─────────────────────────────▶ failed
      │ ai.program.result Ok(output)
      ├──memory over the limit───────────────────────────────────────────▶ failed
      ├──return, value matches (or judgment mode: the value)─────────────▶ completed
      ├──fail with reason and message────────────────────────────────────▶ failed
      └──error / bad return / bad fail / plain value──▶ awaiting_llm (feedback, turn n+1)
                                                        or failed (max_turns_exceeded)
    any state before the end ──ai.request.failed (cancel, mission timeout)──▶ failed
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Final

import msgspec

from ptcflow.directives import Directive, LLMGenerate, RunProgram
from ptcflow.errors import ConfigError
from ptcflow.lisp import LispError, extract_code, parse
from ptcflow.signals import (
    CANCELLED,
    LLM_RESPONSE,
    PROGRAM_RESULT,
    REQUEST_FAILED,
    TOOL_RESULT,
    USAGE,
    VALIDATION,
    Err,
    ErrorEnvelope,
    LLMResponse,
    LLMResponseData,
    Message,
    ProgramError,
    ProgramOutput,
    ProgramResultData,
    RequestEndData,
    Signal,
    ToolResultData,
    UsageData,
)
from ptcflow.signature import Signature, SignatureError, Template, Type, parse as parse_signature
from ptcflow.strategies._agent_checks import check_fail, check_return
from ptcflow.strategies._protocol import Outcome, RunInfo
from ptcflow.strategies._ptc_feedback import PromptLimit, feedback
from ptcflow.strategies._ptc_outcome import ptc_outcome
from ptcflow.strategies._ptc_prompt import data_inventory, static_prompt, tool_info_from_spec
from ptcflow.strategies._ptc_state import PtcState, PtcTurn
from ptcflow.strategies._trace import StepFail

__all__ = ("PTC",)

_NONE: tuple[Directive, ...] = ()
_replace = msgspec.structs.replace
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_ENDED: Final = frozenset(("completed", "failed"))
_MODES: Final = frozenset(("enabled", "warn_only", "disabled", "strict"))
_SYSTEM_TOOLS: Final = frozenset(("return", "fail"))
_INFRA_REASONS: Final = {"cancelled": "cancelled", "timeout": "timeout"}
_JUDGMENT_REASONS: Final = {
    "validation": "invalid_return",
    "no_code": "no_code",
    "fail": "invalid_fail",
}


class PTC(msgspec.Struct, frozen=True, kw_only=True):
    """The SubAgent loop: the model writes one PTC-Lisp program per turn (a :class:`Strategy`).

    The run's input is its context (a mapping, read by programs as ``ctx/key``); the run's
    tools (``RunInfo.tools``) are what programs may call. Usually built by
    :class:`ptcflow.SubAgent`; see docs/subagent.md.

    Args:
        prompt: the task, a template whose ``{{placeholders}}`` are filled from the context.
        signature: the agent's signature text; its output is what ``return`` must match.
        max_turns: model calls allowed; with no tools and ``max_turns == 1`` the run is in
            judgment mode (the program's value is the answer).
        system_prompt: the static system prompt, before and after the data inventory
            (``None``: built from the run's tool specs).
        prompt_limit: how much of values, prints and samples the model sees.
        memory_limit_bytes: the most memory (kept values and functions) a run may hold.
        signature_validation: ``enabled`` (extra fields allowed), ``warn_only``,
            ``disabled`` or ``strict``.
        context_signature: a signature whose parameters type the context's keys in the
            data inventory (set from a Step passed as context).
        program_limits: overrides of :class:`ptcflow.lisp.Limits` for every program.
        program_timeout_ms: the deadline of each program directive (``None``: the
            program's own time limit ends it first, as a program error).
        model: a concrete model or alias name for every call; ``model_alias`` an alias.
        llm_options: provider options of every call (temperature, ...).
        llm_timeout_ms: deadline of each model call (all attempts).
        llm_max_retries: retries of a model call that failed with a retryable error.
        llm_retry_backoff_ms: base of the backoff between those retries.
        trace: keep the turn trace on the Step: ``True``, ``False`` or ``"on_error"``.
        debug: also keep each turn's parsed program, ``ctx/`` and memory in the trace.
        name: the agent's name (telemetry, logs).

    Raises:
        ConfigError: an option is out of range.
        SignatureError: ``signature`` or ``context_signature`` does not parse.

    Example:
        >>> from ptcflow.strategies import RunInfo
        >>> ptc = PTC(prompt="Add {{x}} and {{y}}", signature="(x :int, y :int) -> :int",
        ...           max_turns=1)
        >>> state, (ask,) = ptc.init(RunInfo(run_id="r1", input={"x": 2, "y": 3}))
        >>> state.expanded_prompt, ask.id, state.judgment
        ('Add 2 and 3', 'r1/llm/1', True)
    """

    prompt: str
    signature: str | None = None
    max_turns: int = 5
    system_prompt: tuple[str, str] | None = None
    prompt_limit: PromptLimit = PromptLimit()
    memory_limit_bytes: int = 1_000_000
    signature_validation: str = "enabled"
    context_signature: str | None = None
    program_limits: dict[str, Any] = {}
    program_timeout_ms: int | None = None
    model: str | None = None
    model_alias: str | None = None
    llm_options: dict[str, Any] = {}
    llm_timeout_ms: int | None = None
    llm_max_retries: int = 2
    llm_retry_backoff_ms: int = 200
    trace: bool | str = True
    debug: bool = False
    name: str = "subagent"

    describes_step: ClassVar[bool] = True
    """The runtime copies ``fail``, ``trace`` and ``signature`` of the outcome to the Step."""

    def __post_init__(self) -> None:
        problems = []
        if self.max_turns < 1:
            problems.append(f"max_turns must be >= 1, got {self.max_turns}")
        if self.memory_limit_bytes < 1:
            problems.append(f"memory_limit_bytes must be >= 1, got {self.memory_limit_bytes}")
        if self.signature_validation.lstrip(":") not in _MODES:
            problems.append(
                f"signature_validation must be one of {sorted(_MODES)}, "
                f"got {self.signature_validation!r}"
            )
        if self.trace not in (True, False, "on_error"):
            problems.append(f'trace must be True, False or "on_error", got {self.trace!r}')
        if self.llm_max_retries < 0:
            problems.append(f"llm_max_retries must be >= 0, got {self.llm_max_retries}")
        for field in ("llm_timeout_ms", "program_timeout_ms"):
            value = getattr(self, field)
            if value is not None and value <= 0:
                problems.append(f"{field} must be positive or None, got {value}")
        if self.model and self.model_alias:
            problems.append("set model or model_alias, not both")
        if problems:
            raise ConfigError(f"PTC({self.name!r}): " + "; ".join(problems))
        for text in (self.signature, self.context_signature):
            if text is not None:
                parse_signature(text)

    # -- the Strategy protocol -------------------------------------------------------

    def init(self, run: RunInfo) -> tuple[PtcState, Sequence[Directive]]:
        """Start a run on the context ``run.input`` (a mapping; ``None`` is empty)."""
        tool_names = tuple(s.name for s in run.tools if s.name not in _SYSTEM_TOOLS)
        judgment = not tool_names and self.max_turns == 1
        state = PtcState(
            run_id=run.run_id, request_id=run.request_id, judgment=judgment, tool_names=tool_names
        )
        raw = {} if run.input is None else run.input
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
            kind = type(raw).__name__
            message = f"the context of {self.name!r} must be a mapping with string keys, got {kind}"
            return self._failed(state, "invalid_input", message, VALIDATION), _NONE
        ctx = dict(raw)
        try:
            expanded = Template(self.prompt).render(ctx)
        except SignatureError as exc:
            return self._failed(state, "missing_context", str(exc), VALIDATION), _NONE
        sig = self._signature()
        if self.system_prompt is not None:
            head, tail = self.system_prompt
        else:
            infos = [tool_info_from_spec(s) for s in run.tools if s.name not in _SYSTEM_TOOLS]
            head, tail = static_prompt(
                tools=infos, signature=sig, max_turns=self.max_turns, judgment=judgment
            )
        inventory = data_inventory(
            ctx, types=self._context_types(sig), sample_chars=self.prompt_limit.sample_chars
        )
        system = f"{head}\n\n{inventory}\n\n{tail}"
        messages = (Message(role="system", content=system), Message(role="user", content=expanded))
        directive = self._llm(run.run_id, 1, run.request_id, messages)
        state = _replace(
            state,
            system=system,
            expanded_prompt=expanded,
            messages=messages,
            ctx=ctx,
            llm_call_id=directive.id,
            turns=(PtcTurn(turn=1, sent=len(messages)),),
        )
        return state, (directive,)

    def handle(self, state: PtcState, signal: Signal) -> tuple[PtcState, Sequence[Directive]]:
        """Fold one signal in; signals that do not apply (the program's own tool-call
        signals, stale ids) return the very same state and no directives."""
        on = _ON.get(signal.type)
        if on is None or state.status in _ENDED:
            return state, _NONE
        return on(self, state, signal)

    def outcome(self, state: PtcState) -> Outcome | None:
        """The outcome once completed (``Ok(value)``) or failed (``Err``, with ``fail``)."""
        if state.status not in _ENDED:
            return None
        return ptc_outcome(state, trace=self.trace, debug=self.debug, signature=self.signature)

    def snapshot(self, state: PtcState) -> Any:
        """The state as plain JSON data."""
        return _decode(_encode(state))

    # -- helpers ---------------------------------------------------------------------

    def _signature(self) -> Signature | None:
        return parse_signature(self.signature) if self.signature else None

    def _context_types(self, sig: Signature | None) -> dict[str, Type]:
        types: dict[str, Type] = {}
        for text in (self.context_signature,):
            if text:
                types.update({p.name: p.type for p in parse_signature(text).params})
        if sig is not None:
            types.update({p.name: p.type for p in sig.params})
        return types

    def _llm(
        self, run_id: str, n: int, request_id: str | None, messages: tuple[Message, ...]
    ) -> LLMGenerate:
        return LLMGenerate(
            id=f"{run_id}/llm/{n}",
            request_id=request_id,
            iteration=n,
            messages=messages,
            model=self.model,
            model_alias=self.model_alias,
            options=self.llm_options,
            timeout_ms=self.llm_timeout_ms,
            max_retries=self.llm_max_retries,
            retry_backoff_ms=self.llm_retry_backoff_ms,
        )

    def _failed(
        self,
        state: PtcState,
        reason: str,
        message: str,
        error_type: str,
        *,
        op: str | None = None,
        details: Mapping[str, Any] | None = None,
        error: ErrorEnvelope | None = None,
        **changes: Any,
    ) -> PtcState:
        fail = StepFail(reason=reason, message=message, op=op, details=dict(details or {}))
        envelope = error or ErrorEnvelope.make(error_type, message, details)
        return _replace(
            state,
            status="failed",
            llm_call_id=None,
            program_call_id=None,
            fail=fail,
            error=envelope,
            reason=reason,
            **changes,
        )

    @staticmethod
    def _timed(state: PtcState, signal: Signal) -> dict[str, Any]:
        return {"first_time": state.first_time or signal.time, "last_time": signal.time}

    # -- transitions -----------------------------------------------------------------

    def _on_usage(self, state: PtcState, signal: Signal) -> tuple[PtcState, Sequence[Directive]]:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, UsageData):
            return state, _NONE
        turn = state.turns[-1]
        turn = _replace(turn, usage=turn.usage + data.usage, started=turn.started or signal.time)
        changes = self._timed(state, signal)
        return _replace(
            state,
            usage=state.usage + data.usage,
            usage_seen=True,
            turns=(*state.turns[:-1], turn),
            **changes,
        ), _NONE

    def _on_llm_response(
        self, state: PtcState, signal: Signal
    ) -> tuple[PtcState, Sequence[Directive]]:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, LLMResponseData):
            return state, _NONE
        changes = self._timed(state, signal)
        turn = state.turns[-1]
        turn = _replace(turn, started=turn.started or signal.time, timestamp=signal.time)
        result = data.result
        if isinstance(result, Err):
            reason = _INFRA_REASONS.get(result.error.type, "llm_error")
            failed = self._failed(
                state, reason, result.error.message, result.error.type, op="llm",
                error=result.error, turns=(*state.turns[:-1], _replace(turn, ended=signal.time)),
                usage_seen=False, **changes,
            )  # fmt: skip
            return failed, _NONE
        response: Any = result.payload
        text = response.text if isinstance(response, LLMResponse) else str(response)
        usage = state.usage
        if not state.usage_seen and isinstance(response, LLMResponse):
            usage = usage + response.usage
            turn = _replace(turn, usage=response.usage)
        turn = _replace(turn, response=text)
        state = _replace(state, usage=usage, usage_seen=False, llm_call_id=None, **changes)
        try:
            source = extract_code(text)
        except LispError as exc:
            said = Message(role="assistant", content=text[: self.prompt_limit.value_chars * 2])
            state = _replace(state, messages=(*state.messages, said))
            problem = ProgramError(category="no_code", message=exc.message)
            return self._next(state, _replace(turn, ended=signal.time), problem, None)
        said = Message(role="assistant", content=f"```clojure\n{source}\n```")
        if self.debug:
            turn = _replace(turn, ast=_ast(source), ctx=state.ctx)
        n = state.turn
        program = RunProgram(
            id=f"{state.run_id}/program/{n}",
            request_id=state.request_id,
            iteration=n,
            source=source,
            ctx=state.ctx,
            memory=state.memory,
            functions=state.functions,
            tool_names=state.tool_names,
            limits=self.program_limits,
            timeout_ms=self.program_timeout_ms,
        )
        state = _replace(
            state,
            status="awaiting_program",
            messages=(*state.messages, said),
            program_call_id=program.id,
            turns=(*state.turns[:-1], _replace(turn, source=source)),
        )
        return state, (program,)

    def _on_program_result(
        self, state: PtcState, signal: Signal
    ) -> tuple[PtcState, Sequence[Directive]]:
        data = signal.data
        if signal.call_id != state.program_call_id or not isinstance(
            data, ProgramResultData | ToolResultData
        ):
            return state, _NONE
        changes = self._timed(state, signal)
        turn = _replace(state.turns[-1], ended=signal.time)
        state = _replace(state, program_call_id=None, **changes)
        result = data.result
        if isinstance(result, Err):
            error = result.error
            reason = {"cancelled": "cancelled", "timeout": "timeout"}.get(
                error.type, "program_error"
            )
            turns = (*state.turns[:-1], turn)
            failed = self._failed(
                state, reason, error.message, error.type, op="program", error=error, turns=turns
            )
            return failed, _NONE
        out: Any = result.payload  # typed, but a custom handler may send plain data
        if not isinstance(out, ProgramOutput):
            out = msgspec.convert(out, ProgramOutput)
        turn = _replace(turn, output=out)
        turns = (*state.turns[:-1], turn)
        if out.memory_bytes > self.memory_limit_bytes:
            message = (
                f"the agent's memory holds {out.memory_bytes} bytes, over its limit of "
                f"{self.memory_limit_bytes}"
            )
            details = {"memory_bytes": out.memory_bytes, "limit": self.memory_limit_bytes}
            return self._failed(
                state, "memory_limit", message, "memory_limit", details=details, turns=turns
            ), _NONE
        state = _replace(state, memory=out.memory, functions=out.functions, turns=turns)
        if out.error is not None:
            return self._next(state, turn, out.error, out)
        if out.failed:
            checked = check_fail(out.fail_value)
            if isinstance(checked, StepFail):
                failed = _replace(
                    state,
                    status="failed",
                    fail=checked,
                    error=ErrorEnvelope.make(
                        "fail", checked.message, {"reason": checked.reason, "op": checked.op}
                    ),
                    reason="fail",
                )
                return failed, _NONE
            return self._next(state, turn, checked, out)
        if out.returned or state.judgment:
            problem, warnings = check_return(
                self._signature(), out.value, self.signature_validation
            )
            if problem is None:
                if warnings:
                    note = ProgramError(category="validation_warning", message="; ".join(warnings))
                    turns = (*state.turns[:-1], _replace(turn, problem=note))
                reason = "returned" if out.returned else "answered"
                done = _replace(
                    state, status="completed", value=out.value, reason=reason, turns=turns
                )
                return done, _NONE
            return self._next(state, turn, problem, out)
        if isinstance(out.value, Mapping):
            merged = {**state.ctx, **{k: v for k, v in out.value.items() if k != "fail"}}
            state = _replace(state, ctx=merged)
        return self._next(state, turn, None, out)

    def _next(
        self,
        state: PtcState,
        turn: PtcTurn,
        problem: ProgramError | None,
        output: ProgramOutput | None,
    ) -> tuple[PtcState, Sequence[Directive]]:
        """Feed the turn back and start the next one, or end the run when none is left."""
        turns = (*state.turns[:-1], _replace(turn, problem=problem))
        n = state.turn
        if state.judgment and problem is not None:
            reason = _JUDGMENT_REASONS.get(problem.category, "program_error")
            return self._failed(state, reason, problem.describe(), VALIDATION, turns=turns), _NONE
        if n >= self.max_turns:
            message = f"no (return ...) after {self.max_turns} turns"
            if problem is not None:
                message += f"; the last turn ended with: {problem.describe()}"
            return self._failed(
                state, "max_turns_exceeded", message, "max_turns_exceeded", turns=turns,
                details={"max_turns": self.max_turns},
            ), _NONE  # fmt: skip
        ctx = state.ctx
        if problem is not None:
            ctx = {**ctx, "fail": _fail_value(problem, n)}
        elif "fail" in ctx:
            ctx = {k: v for k, v in ctx.items() if k != "fail"}
        text = feedback(
            next_turn=n + 1,
            max_turns=self.max_turns,
            source=turn.source,
            output=output,
            problem=problem,
            limits=self.prompt_limit,
        )
        messages = (*state.messages, Message(role="user", content=text))
        directive = self._llm(state.run_id, n + 1, state.request_id, messages)
        state = _replace(
            state,
            status="awaiting_llm",
            ctx=ctx,
            messages=messages,
            llm_call_id=directive.id,
            turns=(*turns, PtcTurn(turn=n + 1, sent=len(messages), started=state.last_time)),
        )
        return state, (directive,)

    def _on_request_failed(
        self, state: PtcState, signal: Signal
    ) -> tuple[PtcState, Sequence[Directive]]:
        data = signal.data
        if isinstance(data, RequestEndData) and isinstance(data.result, Err):
            error = data.result.error
        else:
            error = ErrorEnvelope.make(CANCELLED, f"run {state.run_id} was cancelled")
        reason = "cancelled" if error.type == CANCELLED else error.type
        changes = self._timed(state, signal)
        return self._failed(state, reason, error.message, error.type, error=error, **changes), _NONE


def _fail_value(problem: ProgramError, turn: int) -> dict[str, Any]:
    """``ctx/fail``: the previous turn's problem as data."""
    out: dict[str, Any] = {"turn": turn, "category": problem.category, "message": problem.message}
    if problem.line is not None:
        out["line"] = problem.line
        out["column"] = problem.column
    return out


def _ast(source: str) -> str | None:
    try:
        return repr(list(parse(source)))
    except LispError:
        return None


_On = Callable[[PTC, PtcState, Signal], tuple[PtcState, Sequence[Directive]]]
_ON: Final[dict[str, _On]] = {
    USAGE: PTC._on_usage,
    LLM_RESPONSE: PTC._on_llm_response,
    PROGRAM_RESULT: PTC._on_program_result,
    TOOL_RESULT: PTC._on_program_result,
    REQUEST_FAILED: PTC._on_request_failed,
}
"""The signal types PTC folds. ``ai.tool.result`` counts only for the program directive's
own id: a runtime without the program kind answers it so (an error naming the missing
handler), as does a handler registered with ``Runtime(handlers={RunProgram: ...})``
(returning the ProgramOutput); the program's sub-calls (``{id}/tool/{n}``) are ignored."""
