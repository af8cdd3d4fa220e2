"""The SubAgent loop without PTC-Lisp, for models that cannot write it (``output="json"``).

The model answers with one JSON value validated against the signature; the output's JSON
Schema goes with every call as the provider's structured-output request. With tools, the
model calls them natively (the ReAct loop does the calling: ``ToolExec`` per call, results
in call order) and ends with the JSON answer. An answer that is not JSON or does not match
the signature is fed back while turns remain. Only ``LLMGenerate`` and ``ToolExec``
directives are emitted.

States: ``running`` (the wrapped ReAct state says what is in flight), ``completed``,
``failed``; a signal that does not apply returns the very same state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, Literal

import msgspec

from ptcflow.core import Outcome, RunInfo, StepFail
from ptcflow.directives import Directive, LLMGenerate
from ptcflow.errors import ConfigError
from ptcflow.signals import (
    CANCELLED,
    LLM_RESPONSE,
    REQUEST_FAILED,
    REQUEST_STARTED,
    USAGE,
    VALIDATION,
    Err,
    ErrorEnvelope,
    Message,
    Ok,
    ProgramError,
    RequestEndData,
    RequestStartedData,
    Signal,
    Summary,
    Usage,
    UsageData,
)
from ptcflow.signature import (
    Signature,
    SignatureError,
    Template,
    parse as parse_signature,
    redact_firewalled,
    render_type,
)
from ptcflow.strategies._subagent import (
    check_return,
    ended_outcome,
    failed,
    header,
    keeps_trace,
    span_ms,
)
from ptcflow.strategies.json_agent._trace import JsonCall, json_trace
from ptcflow.strategies.react import ReAct, ReActState

_OWN_REASONS: Final = frozenset((CANCELLED, "turn_budget_exceeded"))
"""Model-call error types that are the run's reason themselves (else ``llm_error``)."""

__all__ = ("JsonAgent", "JsonState")

_NONE: tuple[Directive, ...] = ()
_replace = msgspec.structs.replace
_FENCE: Final = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_INPUT_CHARS: Final = 20_000


class JsonState(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The state of one JSON-mode run.

    Attributes:
        run_id: the run.
        status: ``running``, ``completed`` or ``failed``.
        react: the wrapped ReAct state (the conversation, tool calls in flight).
        system: the system prompt.
        expanded_prompt: the task prompt with its placeholders filled in.
        calls: one record per model call (for the trace).
        value: the answer once completed.
        fail: why it failed.
        error: the run's error envelope once failed.
        reason: why it ended (``returned``, ``max_turns_exceeded``, ``llm_error``, ...).
        usage: tokens summed over the run.
        first_time: the time of the first signal folded in.
        last_time: the time of the last one.
    """

    describes_step: ClassVar[bool] = True
    """The runtime copies the outcome's ``fail``, ``trace`` and ``signature`` to the Step."""

    run_id: str
    status: Literal["running", "completed", "failed"] = "running"
    react: ReActState | None = None
    system: str = ""
    expanded_prompt: str = ""
    calls: tuple[JsonCall, ...] = ()
    value: Any = None
    fail: StepFail | None = None
    error: ErrorEnvelope | None = None
    reason: str = ""
    usage: Usage = Usage()
    first_time: str = ""
    last_time: str = ""


class JsonAgent(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """A SubAgent that answers in JSON, with native tool calls (a :class:`Strategy`).

    The run's input is the context (a mapping); its values are shown to the model as
    JSON (firewalled fields hidden). Usually built by ``SubAgent(..., output="json")``.

    Args:
        prompt: the task template (``{{placeholders}}`` filled from the context).
        signature: the agent's signature; the answer must match its output.
        max_turns: model calls allowed in the whole run.
        signature_validation: ``enabled``, ``warn_only``, ``disabled`` or ``strict``.
        model: a model or alias for every call; ``model_alias``: an alias.
        llm_options: provider options of every call.
        llm_timeout_ms: deadline of each model call.
        llm_max_retries: retries of a model call that failed with a retryable error.
        llm_retry_backoff_ms: base of the backoff between those retries.
        tool_timeout_ms: deadline of each tool call.
        tool_max_retries: retries of each tool call.
        trace: keep the turn trace: ``True``, ``False`` or ``"on_error"``.
        debug: also keep the context in the trace.
        name: the agent's name.
        output_type: the ``module:qualname`` of the Python type the answer must also fit
            (set by ``SubAgent(output_type=...)``; imported where the run is checked).

    Raises:
        ConfigError: an option is out of range.
        SignatureError: ``signature`` does not parse.

    Example:
        >>> agent = JsonAgent(prompt="Rate {{text}}", signature="(text :string) -> {score :int}")
        >>> state, (ask,) = agent.init(RunInfo(run_id="r1", input={"text": "great"}))
        >>> ask.response_schema["required"]
        ['score']
    """

    prompt: str
    signature: str | None = None
    max_turns: int = 5
    signature_validation: str = "enabled"
    model: str | None = None
    model_alias: str | None = None
    llm_options: dict[str, Any] = msgspec.field(default_factory=dict)
    llm_timeout_ms: int | None = None
    llm_max_retries: int = 2
    llm_retry_backoff_ms: int = 200
    tool_timeout_ms: int | None = None
    tool_max_retries: int = 0
    trace: bool | str = True
    debug: bool = False
    name: str = "subagent"
    output_type: str | None = None

    describes_step: ClassVar[bool] = True
    """The runtime copies ``fail``, ``trace`` and ``signature`` of the outcome to the Step."""
    turn_spans: ClassVar[bool] = True
    """Its directives' ``iteration`` is the turn: with tracing on, the runtime nests each
    turn's directives under a ``turn {n}`` span."""

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ConfigError(f"JsonAgent({self.name!r}): max_turns must be >= 1")
        if self.trace not in (True, False, "on_error"):
            raise ConfigError(f'JsonAgent({self.name!r}): trace must be True, False or "on_error"')
        # parsed once, where it is checked, and kept beside the fields (not encoded,
        # compared or hashed), as PTC does
        sig = parse_signature(self.signature) if self.signature is not None else None
        self.__dict__["_signature"] = sig

    def _sig(self) -> Signature | None:
        if "_signature" not in self.__dict__:  # a copy made without __post_init__
            self.__post_init__()
        sig: Signature | None = self.__dict__["_signature"]
        return sig

    def _react(self, system: str) -> ReAct:
        sig = self._sig()
        schema = sig.output_schema() if sig is not None else None
        return ReAct(
            system_prompt=system,
            max_iterations=self.max_turns,
            model=self.model,
            model_alias=self.model_alias,
            llm_timeout_ms=self.llm_timeout_ms,
            llm_max_retries=self.llm_max_retries,
            llm_retry_backoff_ms=self.llm_retry_backoff_ms,
            tool_timeout_ms=self.tool_timeout_ms,
            tool_max_retries=self.tool_max_retries,
            response_schema=schema,
            llm_options=self.llm_options,
            name=self.name,
        )

    # -- the Strategy protocol -------------------------------------------------------

    def init(self, run: RunInfo) -> tuple[JsonState, Sequence[Directive]]:
        """Start a run on the context ``run.input`` (a mapping)."""
        state = JsonState(run_id=run.run_id)
        raw = {} if run.input is None else run.input
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
            message = f"the context of {self.name!r} must be a mapping with string keys"
            return failed(state, "invalid_input", message, VALIDATION), _NONE
        try:
            expanded = Template(self.prompt).render(dict(raw))
        except SignatureError as exc:
            return failed(state, "missing_context", str(exc), VALIDATION), _NONE
        system = self._system(raw, has_tools=bool(run.tools))
        react = self._react(system)
        first = RunInfo(
            run_id=run.run_id,
            input=expanded,
            request_id=run.request_id,
            tools=run.tools,
            history=run.history,
            compaction=run.compaction,
            summary=run.summary,
        )
        react_state, out = react.init(first)
        # while the history is summarized first, the task's first call is not made yet
        calls = (
            ()
            if react_state.status == "compacting"
            else (JsonCall(sent=len(react_state.messages)),)
        )
        state = _replace(
            state, react=react_state, system=system, expanded_prompt=expanded, calls=calls
        )
        return state, out

    def conversation(self, state: JsonState) -> tuple[Message, ...]:
        """The conversation so far: the run's history, then its own messages (the task
        with its context, the model's answers, tool results, feedback); the system prompt
        left out; the whole history, even when a compaction sent less of it)."""
        react = state.react
        return () if react is None else react.conversation

    def compaction_summary(self, state: JsonState) -> Summary | None:
        """The summary this run's compaction sent in place of the history's older
        messages (made or reused), else ``None``."""
        react = state.react
        return None if react is None else react.summary

    def _system(self, ctx: Mapping[str, Any], *, has_tools: bool) -> str:
        sig = self._sig()
        shown = render_type(sig.output, "prompt") if sig is not None else ":any"
        lines = [
            "Answer with one JSON value that matches the expected output, and nothing else.",
        ]
        if has_tools:
            lines.append("Call the tools when you need data; then answer with the JSON value.")
        lines += ["", "## Expected output", shown]
        if ctx:
            data = json.dumps(redact_firewalled(dict(ctx)), ensure_ascii=False, default=str)
            if len(data) > _INPUT_CHARS:
                data = data[:_INPUT_CHARS] + " ... (truncated)"
            lines += ["", "## Input", data]
        return "\n".join(lines)

    def handle(self, state: JsonState, signal: Signal) -> tuple[JsonState, Sequence[Directive]]:
        """Fold one signal in (through the wrapped ReAct loop)."""
        react_state = state.react
        if state.status != "running" or react_state is None:
            return state, _NONE
        kind = signal.type
        if kind == REQUEST_FAILED:
            return self._on_requestfailed(state, signal), _NONE
        react = self._react(state.system)
        new, out = react.handle(react_state, signal)
        if new is react_state:
            return state, _NONE
        times = {"first_time": state.first_time or signal.time, "last_time": signal.time}
        if react_state.status == "compacting":
            # the summarizing call (its usage is in the ReAct state): once it answered,
            # the task's first model call is in flight
            if new.status == "compacting":
                return _replace(state, react=new, **times), out
            if new.status == "failed":
                state = _replace(state, react=new, usage=new.usage, **times)
                error = new.error or ErrorEnvelope.make("internal", "the summarizing call failed")
                reason = error.type if error.type in _OWN_REASONS else "llm_error"
                return failed(
                    state, reason, error.message, error.type, error=error, op="llm"
                ), _NONE
            call = JsonCall(sent=len(new.messages), started=signal.time)
            return _replace(state, react=new, calls=(call,), usage=new.usage, **times), out
        calls = state.calls
        usage = state.usage
        if kind == USAGE and isinstance(signal.data, UsageData):
            calls = (*calls[:-1], _replace(calls[-1], usage=calls[-1].usage + signal.data.usage))
            usage = usage + signal.data.usage
        elif kind == LLM_RESPONSE:
            data: Any = signal.data
            result = data.result
            response_usage = result.payload.usage if isinstance(result, Ok) else Usage()
            if calls[-1].usage == Usage() and response_usage != Usage():
                calls = (*calls[:-1], _replace(calls[-1], usage=response_usage))
                usage = usage + response_usage
            last = calls[-1]
            started = last.started or (state.last_time or signal.time)
            calls = (
                *calls[:-1],
                _replace(
                    last, started=started, timestamp=signal.time, answered=len(new.messages) - 1
                ),
            )
        state = _replace(state, react=new, calls=calls, usage=usage, **times)
        if new.status == "failed":
            error = new.error or ErrorEnvelope.make("internal", "the model call failed")
            if new.reason == "handoff_failed":  # the agent handed to failed: so does this run
                return failed(
                    state, error.type, error.message, error.type, error=error, op="handoff"
                ), _NONE
            reason = error.type if error.type in _OWN_REASONS else "llm_error"
            return failed(state, reason, error.message, error.type, error=error, op="llm"), _NONE
        if new.status == "completed" and new.agent:  # handed over: the next agent answered
            return _replace(state, status="completed", value=new.value, reason="handoff"), _NONE
        if new.status == "completed":
            return self._answer(react, state, new, signal)
        asks = [d for d in out if isinstance(d, LLMGenerate)]
        if asks and len(state.calls) >= self.max_turns:
            return self._out_of_turns(state, None), _NONE
        if asks:
            state = _replace(
                state, calls=(*state.calls, JsonCall(sent=len(new.messages), started=signal.time))
            )
        return state, out

    def _answer(
        self, react: ReAct, state: JsonState, done: ReActState, signal: Signal
    ) -> tuple[JsonState, Sequence[Directive]]:
        if done.reason == "max_iterations":
            return self._out_of_turns(state, None), _NONE
        value, problem = _decode(done.text)
        if problem is None:
            problem, _ = check_return(
                self._sig(), value, self.signature_validation, self.output_type
            )
        calls = (*state.calls[:-1], _replace(state.calls[-1], value=value, problem=problem))
        state = _replace(state, calls=calls)
        if problem is None:
            return _replace(state, status="completed", value=value, reason="returned"), _NONE
        if len(state.calls) >= self.max_turns:
            return self._out_of_turns(state, problem), _NONE
        n = len(state.calls) + 1
        note = f"{header(n, self.max_turns)}\n\n{problem.message}"
        request = Signal(
            type=REQUEST_STARTED,
            source="ptcflow.strategies.json",
            id=f"{state.run_id}/feedback/{n}",
            time=signal.time,
            data=RequestStartedData(input=note),
            run_id=state.run_id,
            request_id=done.request_id,
        )
        new, out = react.handle(done, request)
        call = JsonCall(sent=len(new.messages), started=signal.time)
        return _replace(state, react=new, calls=(*state.calls, call)), out

    def _out_of_turns(self, state: JsonState, problem: ProgramError | None) -> JsonState:
        message = f"no valid answer after {self.max_turns} model calls"
        if problem is not None:
            message += f"; the last answer: {problem.message}"
        return failed(
            state, "max_turns_exceeded", message, "max_turns_exceeded",
            details={"max_turns": self.max_turns},
        )  # fmt: skip

    def _on_requestfailed(self, state: JsonState, signal: Signal) -> JsonState:
        data = signal.data
        if isinstance(data, RequestEndData) and isinstance(data.result, Err):
            error = data.result.error
        else:
            error = ErrorEnvelope.make(CANCELLED, f"run {state.run_id} was cancelled")
        reason = "cancelled" if error.type == CANCELLED else error.type
        state = _replace(state, last_time=signal.time, first_time=state.first_time or signal.time)
        return failed(state, reason, error.message, error.type, error=error)

    def outcome(self, state: JsonState) -> Outcome | None:
        """The outcome once completed or failed."""
        if state.status == "running":
            return None
        keep = keeps_trace(self.trace, state.status == "completed")
        trace = json_trace(state.react, state.calls, state.system, state.expanded_prompt,
                           total_ms=span_ms(state.first_time, state.last_time),
                           usage=state.usage) if keep else None  # fmt: skip
        return ended_outcome(state, trace, self.signature)

    def answered_by(self, state: JsonState) -> str | None:
        """The agent that answered, when the run handed its conversation on (a handoff
        tool); ``None``: this run's own agent."""
        react = state.react
        return react.agent or None if react is not None else None

    def snapshot(self, state: JsonState) -> Any:
        """The state as plain JSON data."""
        return msgspec.to_builtins(state)


def _decode(text: str) -> tuple[Any, ProgramError | None]:
    """The JSON value of an answer (a ```json fence is accepted), or the problem."""
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    try:
        return msgspec.json.decode(body), None
    except msgspec.DecodeError as exc:
        message = (
            f"your answer is not valid JSON ({exc}); answer with only the JSON value that "
            "matches the expected output"
        )
        return None, ProgramError(category="validation", message=message)
