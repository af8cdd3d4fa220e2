"""The SubAgent loop (programmatic tool calling) as a pure state machine.

One turn: ask the model (``LLMGenerate``; ``LLMStream`` with ``stream=True``: the program
text arrives as ``ai.llm.delta`` while the model writes it); take the one program from
its whole response (a stream that breaks off is a failed call: its half-written program
never runs); run
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
    any state before the end ──ai.request.started (a second request)──▶ the same, plus an
                                EmitRequestError ``busy`` ({run_id}/reject/n)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Final

import msgspec

from ptcflow.core import Outcome, RunInfo
from ptcflow.directives import Directive, EmitRequestError, LLMGenerate, LLMStream, RunProgram
from ptcflow.errors import ConfigError
from ptcflow.lisp import LispError, extract_code, parse
from ptcflow.sessions import CompactionPlan, plan_compaction
from ptcflow.signals import (
    BUSY,
    CANCELLED,
    LLM_RESPONSE,
    PROGRAM_RESULT,
    PROVIDER_ERROR,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    USAGE,
    VALIDATION,
    Err,
    ErrorEnvelope,
    LLMResponse,
    LLMResponseData,
    Message,
    Ok,
    ProgramError,
    ProgramMemory,
    RequestEndData,
    Signal,
    Summary,
    UsageData,
)
from ptcflow.signature import (
    Signature,
    SignatureError,
    Template,
    parse as parse_signature,
    render_type,
)
from ptcflow.strategies._subagent import coercible_inputs
from ptcflow.strategies.ptc._feedback import PromptLimit
from ptcflow.strategies.ptc._history import conversation_of, with_earlier_turns, with_kept_memory
from ptcflow.strategies.ptc._outcome import ptc_outcome
from ptcflow.strategies.ptc._prompt import data_inventory, static_prompt, tool_info_from_spec
from ptcflow.strategies.ptc._state import PtcState, PtcTurn
from ptcflow.strategies.ptc._turns import (
    INFRA_REASONS,
    failed,
    next_turn,
    program_result,
    timed,
)

__all__ = ("PTC",)

_NONE: tuple[Directive, ...] = ()
_replace = msgspec.structs.replace
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_ENDED: Final = frozenset(("completed", "failed"))
_MODES: Final = frozenset(("enabled", "warn_only", "disabled", "strict"))
_SYSTEM_TOOLS: Final = frozenset(("return", "fail"))


class PTC(msgspec.Struct, frozen=True, kw_only=True, dict=True):
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
        output_type: the ``module:qualname`` of the Python type the returned value must
            also fit (set by ``SubAgent(output_type=...)``; imported where the run is
            checked: on Temporal, the worker).
        stream: stream each turn: the model call is an ``LLMStream`` (the program text as
            ``ai.llm.delta`` while it is written; only the whole response is run) and the
            program publishes its output as it prints it (``ai.program.print``).

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
    output_type: str | None = None
    stream: bool = False

    describes_step: ClassVar[bool] = True
    """The runtime copies ``fail``, ``trace`` and ``signature`` of the outcome to the Step."""
    turn_spans: ClassVar[bool] = True
    """Its directives' ``iteration`` is the turn: with tracing on, the runtime nests each
    turn's directives under a ``turn {n}`` span."""

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
        # Parsed once, here, where they are checked, and kept beside the fields (in the
        # instance's ``__dict__``: not encoded, compared or hashed): the signature and the
        # types of the context's keys (the context signature's, then the parameters'), as
        # the data inventory shows them.
        sig = parse_signature(self.signature) if self.signature is not None else None
        types: dict[str, str] = {}
        params = () if sig is None else sig.params
        if self.context_signature is not None:
            params = (*parse_signature(self.context_signature).params, *params)
        for p in params:
            types[p.name] = render_type(p.type, "prompt")
        self.__dict__["_signatures"] = (sig, types)

    # -- the Strategy protocol -------------------------------------------------------

    def init(self, run: RunInfo) -> tuple[PtcState, Sequence[Directive]]:
        """Start a run on the context ``run.input`` (a mapping; ``None`` is empty)."""
        tool_names = tuple(s.name for s in run.tools if s.name not in _SYSTEM_TOOLS)
        judgment = not tool_names and self.max_turns == 1
        state = PtcState(
            run_id=run.run_id,
            request_id=run.request_id,
            judgment=judgment,
            tool_names=tool_names,
            tool_inputs=coercible_inputs(s for s in run.tools if s.name not in _SYSTEM_TOOLS),
        )
        raw = {} if run.input is None else run.input
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
            kind = type(raw).__name__
            message = f"the context of {self.name!r} must be a mapping with string keys, got {kind}"
            return failed(state, "invalid_input", message, VALIDATION), _NONE
        ctx = dict(raw)
        try:
            expanded = Template(self.prompt).render(ctx)
        except SignatureError as exc:
            return failed(state, "missing_context", str(exc), VALIDATION), _NONE
        sig, types = self._parsed()
        if self.system_prompt is not None:
            head, tail = self.system_prompt
        else:
            infos = [tool_info_from_spec(s) for s in run.tools if s.name not in _SYSTEM_TOOLS]
            head, tail = static_prompt(
                tools=infos, signature=sig, max_turns=self.max_turns, judgment=judgment
            )
        inventory = data_inventory(ctx, types=types, sample_chars=self.prompt_limit.sample_chars)
        system = f"{head}\n\n{inventory}\n\n{tail}"
        kept = run.memory
        state = _replace(
            state,
            system=system,
            expanded_prompt=expanded,
            ctx=ctx,
            history=run.history,
            memory=state.memory if kept is None else dict(kept.values),
            functions=state.functions if kept is None else dict(kept.functions),
            keep_memory=kept is not None,
        )
        shown, summary = run.history, None
        if run.history and run.compaction is not None:
            plan = plan_compaction(run.history, run.compaction, run.summary)
            if plan is not None and plan.needs_summary:
                return self._compact(run, state, plan)
            if plan is not None:
                shown, summary = plan.kept, plan.summary
        return self._first_call(state, shown, summary)

    def _first_call(
        self, state: PtcState, shown: tuple[Message, ...], summary: Summary | None
    ) -> tuple[PtcState, Sequence[Directive]]:
        """The run's first model call: the task, after the earlier turns ``shown`` (and
        the ``summary`` of those before them), and the names the conversation's earlier
        programs kept (``RunInfo.memory``, already in ``state.memory``/``functions``)."""
        expanded = state.expanded_prompt
        task = with_earlier_turns(shown, expanded, summary) if shown or summary else expanded
        if state.keep_memory and (state.memory or state.functions):
            kept = ProgramMemory(values=dict(state.memory), functions=dict(state.functions))
            task = with_kept_memory(kept, task)
        messages = (
            Message(role="system", content=state.system),
            Message(role="user", content=task),
        )
        directive = self.llm_directive(state.run_id, 1, state.request_id, messages)
        state = _replace(
            state,
            status="awaiting_llm",
            messages=messages,
            llm_call_id=directive.id,
            turns=(PtcTurn(turn=1, sent=len(messages)),),
            summary=summary,
            compacting=None,
            usage_seen=False,
        )
        return state, (directive,)

    def _compact(
        self, run: RunInfo, state: PtcState, plan: CompactionPlan
    ) -> tuple[PtcState, Sequence[Directive]]:
        """Summarize the history's older part first (``{run_id}/compact``); the run's
        first turn follows the answer."""
        compaction = run.compaction
        summary_model = compaction.summary_model if compaction is not None else None
        directive = LLMGenerate(
            id=run.run_id + "/compact",
            request_id=run.request_id,
            iteration=0,
            messages=plan.request,
            model=summary_model or self.model,
            model_alias=None if summary_model else self.model_alias,
            options=self.llm_options,
            timeout_ms=self.llm_timeout_ms,
            max_retries=self.llm_max_retries,
            retry_backoff_ms=self.llm_retry_backoff_ms,
            metadata={
                "operation": "compaction",
                "summarized_messages": plan.start - plan.base,
                "kept_messages": len(plan.kept),
            },
        )
        compacting = _replace(state, status="compacting", llm_call_id=directive.id, compacting=plan)
        return compacting, (directive,)

    def _on_summary(self, state: PtcState, signal: Signal) -> tuple[PtcState, Sequence[Directive]]:
        """The summarizing call answered: the first turn, with the summary in its task."""
        plan = state.compacting
        data = signal.data
        if plan is None or not isinstance(data, LLMResponseData):
            return state, _NONE
        changes = timed(state, signal)
        result = data.result
        response: Any = result.payload if isinstance(result, Ok) else None
        if isinstance(result, Err) or not isinstance(response, LLMResponse):
            error = (
                result.error
                if isinstance(result, Err)
                else ErrorEnvelope.make(
                    PROVIDER_ERROR,
                    f"ai.llm.response for {signal.call_id!r} carries a "
                    f"{type(response).__name__}, not an LLMResponse",
                )
            )
            reason = INFRA_REASONS.get(error.type, "llm_error")
            return failed(
                state, reason, error.message, error.type, op="llm", error=error,
                usage_seen=False, **changes,
            ), _NONE  # fmt: skip
        usage = state.usage if state.usage_seen else state.usage + response.usage
        summary = Summary(text=response.text.strip(), covers=plan.start, digest=plan.digest)
        state = _replace(state, usage=usage, **changes)
        return self._first_call(state, plan.kept, summary)

    def compaction_summary(self, state: PtcState) -> Summary | None:
        """The summary of the history's older messages this run's task showed (made or
        reused by its compaction), else ``None``."""
        return state.summary

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

    def conversation(self, state: PtcState) -> tuple[Message, ...]:
        """The conversation after this run: its history, the task, and the returned value
        as JSON once completed (the programs and their results stay in the trace)."""
        completed = state.status == "completed"
        return conversation_of(state.history, state.expanded_prompt, completed, state.value)

    def kept_memory(self, state: PtcState) -> ProgramMemory | None:
        """What the run's programs kept by its end (their ``def``s and ``defn``s), when the
        run was given a memory (``RunInfo.memory``: a session, ``memory=``); else ``None``."""
        if not state.keep_memory:
            return None
        return ProgramMemory(values=state.memory, functions=state.functions)

    def snapshot(self, state: PtcState) -> Any:
        """The state as plain JSON data."""
        return _decode(_encode(state))

    # -- helpers ---------------------------------------------------------------------

    def parsed_signature(self) -> Signature | None:
        """The parsed :attr:`signature` (``None`` when there is none), parsed once."""
        return self._parsed()[0]

    def _parsed(self) -> tuple[Signature | None, dict[str, str]]:
        """The signature and the context's types parsed by ``__post_init__`` (a copy made
        without it, ``copy.copy``, parses them again)."""
        parsed: tuple[Signature | None, dict[str, str]] | None = self.__dict__.get("_signatures")
        if parsed is None:
            self.__post_init__()
            parsed = self.__dict__["_signatures"]
        return parsed

    def llm_directive(
        self, run_id: str, n: int, request_id: str | None, messages: tuple[Message, ...]
    ) -> LLMGenerate:
        """The run's ``n``-th model call (id ``{run_id}/llm/{n}``): an ``LLMStream`` when
        the strategy streams."""
        return (LLMStream if self.stream else LLMGenerate)(
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

    # -- transitions -----------------------------------------------------------------

    def _on_usage(self, state: PtcState, signal: Signal) -> tuple[PtcState, Sequence[Directive]]:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, UsageData):
            return state, _NONE
        if state.status == "compacting":  # the summarizing call: the run's, no turn's
            return _replace(
                state, usage=state.usage + data.usage, usage_seen=True, **timed(state, signal)
            ), _NONE
        changes = timed(state, signal)
        turn = state.turns[-1]
        turn = _replace(turn, usage=turn.usage + data.usage, started=turn.started or signal.time)
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
        if state.status == "compacting":
            return self._on_summary(state, signal)
        changes = timed(state, signal)
        turn = state.turns[-1]
        turn = _replace(turn, started=turn.started or signal.time, timestamp=signal.time)
        result = data.result
        if isinstance(result, Err):
            reason = INFRA_REASONS.get(result.error.type, "llm_error")
            ended = failed(
                state, reason, result.error.message, result.error.type, op="llm",
                error=result.error, turns=(*state.turns[:-1], _replace(turn, ended=signal.time)),
                usage_seen=False, **changes,
            )  # fmt: skip
            return ended, _NONE
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
            return next_turn(self, state, _replace(turn, ended=signal.time), problem, None)
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
            memory_limit_bytes=self.memory_limit_bytes,
            timeout_ms=self.program_timeout_ms,
            # a return the executor can tell ends the run writes no memory; with debug the
            # memory is written after every program (the trace shows it), and so it is
            # with an output_type: whether the value fits the type is the strategy's own
            # check (check_return), which the executor's answer (validate_return) lacks; and
            # in a conversation that keeps memory, whose next run reads the last memory
            return_signature=self.signature or None,
            return_validation=(
                None
                if self.debug or self.output_type or state.keep_memory
                else self.signature_validation
            ),
            stream=self.stream,
        )
        state = _replace(
            state,
            status="awaiting_program",
            messages=(*state.messages, said),
            program_call_id=program.id,
            turns=(*state.turns[:-1], _replace(turn, source=source)),
        )
        return state, (program,)

    def _on_request_started(
        self, state: PtcState, signal: Signal
    ) -> tuple[PtcState, Sequence[Directive]]:
        """A second request reaching the run while it works: rejected as ``busy``."""
        n = state.rejected + 1
        error = ErrorEnvelope.make(
            BUSY,
            f"run {state.run_id} is busy ({state.status}); a SubAgent run serves one "
            "request: start another run for another task",
            {"status": state.status, "request_id": signal.request_id},
        )
        reject = EmitRequestError(
            id=f"{state.run_id}/reject/{n}",
            request_id=signal.request_id,
            iteration=state.turn,
            error=error,
            reason="busy",
        )
        return _replace(state, rejected=n), (reject,)

    def _on_request_failed(
        self, state: PtcState, signal: Signal
    ) -> tuple[PtcState, Sequence[Directive]]:
        data = signal.data
        if isinstance(data, RequestEndData) and isinstance(data.result, Err):
            error = data.result.error
        else:
            error = ErrorEnvelope.make(CANCELLED, f"run {state.run_id} was cancelled")
        reason = "cancelled" if error.type == CANCELLED else error.type
        changes = timed(state, signal)
        return failed(state, reason, error.message, error.type, error=error, **changes), _NONE


def _ast(source: str) -> str | None:
    try:
        return repr(list(parse(source)))
    except LispError:
        return None


_On = Callable[[PTC, PtcState, Signal], tuple[PtcState, Sequence[Directive]]]
_ON: Final[dict[str, _On]] = {
    USAGE: PTC._on_usage,
    LLM_RESPONSE: PTC._on_llm_response,
    PROGRAM_RESULT: program_result,
    TOOL_RESULT: program_result,
    REQUEST_FAILED: PTC._on_request_failed,
    REQUEST_STARTED: PTC._on_request_started,
}
"""The signal types PTC folds. The program's end is its ``ai.program.result`` (the runtime's
program kind); an ``ai.tool.result`` for the program directive's own id counts too (a handler
registered with ``Runtime(handlers={RunProgram: ...})`` ends so); the program's sub-calls
(``{id}/tool/{n}``) are ignored: their results are in the ProgramOutput."""
