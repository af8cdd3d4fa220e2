"""ReAct with native tool calling, as a pure state machine.

The loop: ask the model (``LLMGenerate`` / ``LLMStream``) with the run's tools; when it
answers with tool calls, run them all in parallel (one ``ToolExec`` each, or an
``EmitToolError`` for a tool that does not exist); once every result is in, append them to
the conversation in the order the model asked and ask again; an answer without tool calls
ends the run. Nothing here awaits, reads a clock or draws random numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ptcflow.directives import (
    Directive,
    EmitRequestError,
    LLMGenerate,
    LLMStream,
)
from ptcflow.errors import ConfigError
from ptcflow.signals import (
    BUSY,
    CANCELLED,
    LLM_DELTA,
    LLM_RESPONSE,
    PROVIDER_ERROR,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    USAGE,
    VALIDATION,
    Err,
    ErrorEnvelope,
    LLMDeltaData,
    LLMResponse,
    LLMResponseData,
    Message,
    Ok,
    RequestEndData,
    RequestStartedData,
    Signal,
    ToolResultData,
    UsageData,
    tool_result_content,
)
from ptcflow.strategies._protocol import Outcome, RunInfo
from ptcflow.strategies._react_state import PendingCall, ReActState
from ptcflow.strategies._react_tools import tool_directives, unique_calls

__all__ = ("ReAct",)

_NONE: tuple[Directive, ...] = ()
_replace = msgspec.structs.replace
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class ReAct(msgspec.Struct, frozen=True, kw_only=True):
    """A ReAct agent loop with native tool calling (a :class:`Strategy`).

    Args:
        system_prompt: the system message that opens the conversation, if any.
        max_iterations: model calls per request; when the last allowed call asks for
            tools, they run and the run completes with reason ``max_iterations`` and the
            model's last text.
        model: a concrete model for every call (``openai:gpt-4.1-mini``); ``None`` uses the
            run's model.
        model_alias: a model alias instead (``fast``); not together with ``model``.
        stream: emit ``LLMStream`` instead of ``LLMGenerate`` (text arrives as
            ``ai.llm.delta`` and is accumulated in :attr:`ReActState.streamed`).
        llm_timeout_ms: deadline of each model call (all attempts); ``None`` inherits.
        llm_max_retries: extra attempts for retryable model failures.
        tool_timeout_ms: deadline of each tool call; ``None`` inherits.
        tool_max_retries: extra attempts for retryable tool failures.
        name: the strategy's name (telemetry, logs).

    Raises:
        ConfigError: when a limit is out of range or both ``model`` and ``model_alias``
            are set.

    Example:
        >>> react = ReAct(system_prompt="Be brief.", max_iterations=3)
        >>> state, directives = react.init(RunInfo(run_id="r1", input="hi"))
        >>> state.status, directives[0].id
        ('awaiting_llm', 'r1/llm/1')
    """

    system_prompt: str | None = None
    max_iterations: int = 10
    model: str | None = None
    model_alias: str | None = None
    stream: bool = False
    llm_timeout_ms: int | None = None
    llm_max_retries: int = 2
    tool_timeout_ms: int | None = None
    tool_max_retries: int = 0
    name: str = "react"

    def __post_init__(self) -> None:
        problems = []
        if self.max_iterations < 1:
            problems.append(f"max_iterations must be >= 1, got {self.max_iterations}")
        for field in ("llm_timeout_ms", "tool_timeout_ms"):
            value = getattr(self, field)
            if value is not None and value <= 0:
                problems.append(f"{field} must be positive or None, got {value}")
        for field in ("llm_max_retries", "tool_max_retries"):
            if getattr(self, field) < 0:
                problems.append(f"{field} must be >= 0, got {getattr(self, field)}")
        if self.model and self.model_alias:
            problems.append("set model or model_alias, not both")
        if problems:
            raise ConfigError(f"ReAct({self.name!r}): " + "; ".join(problems))

    # -- the Strategy protocol -------------------------------------------------------

    def init(self, run: RunInfo) -> tuple[ReActState, Sequence[Directive]]:
        """Start a run: ask the model about ``run.input`` (``str`` or ``{"prompt": str}``).

        With ``run.input=None`` the run waits (``idle``) for an ``ai.request.started``
        that a host delivers (``Runtime.run`` cannot: it ends such a run as ``stalled``).
        Invalid input ends the run at once as failed (``validation``).
        """
        messages: tuple[Message, ...] = ()
        if self.system_prompt:
            messages = (Message(role="system", content=self.system_prompt),)
        state = ReActState(
            run_id=run.run_id, request_id=run.request_id, messages=messages, tools=run.tools
        )
        if run.input is None:
            return state, _NONE
        return self._start(state, run.input, run.request_id)

    def handle(self, state: ReActState, signal: Signal) -> tuple[ReActState, Sequence[Directive]]:
        """Fold one signal into the state; signals that do not apply are ignored."""
        kind = signal.type
        if kind == USAGE:
            return self._on_usage(state, signal), _NONE
        if kind == LLM_RESPONSE:
            return self._on_llm_response(state, signal)
        if kind == TOOL_RESULT:
            return self._on_tool_result(state, signal)
        if kind == LLM_DELTA:
            return self._on_delta(state, signal), _NONE
        if kind == REQUEST_STARTED:
            return self._on_request(state, signal)
        if kind == REQUEST_FAILED:
            return self._on_request_failed(state, signal), _NONE
        return state, _NONE

    def outcome(self, state: ReActState) -> Outcome | None:
        """Return the outcome once completed (``Ok(text)``) or failed (``Err(error)``)."""
        if state.status == "completed":
            return Outcome(result=Ok(payload=state.text), usage=state.usage, reason=state.reason)
        if state.status == "failed":
            error = state.error or ErrorEnvelope.make("internal", "run failed without an error")
            return Outcome(result=Err(error=error), usage=state.usage, reason=state.reason)
        return None

    def snapshot(self, state: ReActState) -> Any:
        """Return the state as plain JSON data (dicts, lists, strings, numbers)."""
        return _decode(_encode(state))

    # -- transitions -----------------------------------------------------------------

    def _start(
        self, state: ReActState, raw_input: Any, request_id: str | None
    ) -> tuple[ReActState, Sequence[Directive]]:
        prompt = _prompt_of(raw_input)
        if prompt is None:
            error = ErrorEnvelope.make(
                VALIDATION,
                f"ReAct({self.name!r}) input must be a string or a mapping with a string "
                f"'prompt', got {type(raw_input).__name__}",
                {"input_type": type(raw_input).__name__},
            )
            failed = _replace(
                state, status="failed", request_id=request_id, error=error, reason="invalid_input"
            )
            return failed, _NONE
        messages = (*state.messages, Message(role="user", content=prompt))
        directive = self._directive(state, messages, request_id, 1)
        state = _replace(
            state,
            request_id=request_id,
            messages=messages,
            text="",
            error=None,
            reason="",
            status="awaiting_llm",
            iteration=1,
            llm_count=state.llm_count + 1,
            llm_call_id=directive.id,
            usage_seen=False,
            streamed="",
            pending=(),
        )
        return state, (directive,)

    def _ask(
        self, state: ReActState, messages: tuple[Message, ...]
    ) -> tuple[ReActState, Sequence[Directive]]:
        """Ask the model again, with ``messages``, in the next iteration."""
        iteration = state.iteration + 1
        directive = self._directive(state, messages, state.request_id, iteration)
        state = _replace(
            state,
            messages=messages,
            status="awaiting_llm",
            iteration=iteration,
            llm_count=state.llm_count + 1,
            llm_call_id=directive.id,
            usage_seen=False,
            streamed="",
            pending=(),
        )
        return state, (directive,)

    def _directive(
        self,
        state: ReActState,
        messages: tuple[Message, ...],
        request_id: str | None,
        iteration: int,
    ) -> LLMGenerate:
        kind = LLMStream if self.stream else LLMGenerate
        return kind(
            id=f"{state.run_id}/llm/{state.llm_count + 1}",
            request_id=request_id,
            iteration=iteration,
            messages=messages,
            tools=state.tools,
            model=self.model,
            model_alias=self.model_alias,
            timeout_ms=self.llm_timeout_ms,
            max_retries=self.llm_max_retries,
        )

    def _on_delta(self, state: ReActState, signal: Signal) -> ReActState:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, LLMDeltaData):
            return state
        if not data.chunk.text:
            return state
        return _replace(state, streamed=state.streamed + data.chunk.text)

    def _on_usage(self, state: ReActState, signal: Signal) -> ReActState:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, UsageData):
            return state
        return _replace(state, usage=state.usage + data.usage, usage_seen=True)

    def _on_llm_response(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        if (
            signal.call_id is None
            or signal.call_id != state.llm_call_id
            or state.status != "awaiting_llm"
            or not isinstance(data, LLMResponseData)
        ):
            return state, _NONE
        result = data.result
        if isinstance(result, Err):
            reason = "cancelled" if result.error.type == CANCELLED else "llm_error"
            failed = _replace(
                state, status="failed", llm_call_id=None, error=result.error, reason=reason
            )
            return failed, _NONE
        response: Any = result.payload  # typed, but a custom handler may send anything
        if not isinstance(response, LLMResponse):
            error = ErrorEnvelope.make(
                PROVIDER_ERROR,
                f"ai.llm.response for {signal.call_id!r} carries a "
                f"{type(response).__name__}, not an LLMResponse; a custom LLM handler must "
                "publish Ok(payload=LLMResponse(...))",
                {"payload_type": type(response).__name__},
            )
            failed = _replace(
                state, status="failed", llm_call_id=None, error=error, reason="llm_error"
            )
            return failed, _NONE
        usage = state.usage if state.usage_seen else state.usage + response.usage
        text = response.text or state.streamed
        if not response.tool_calls:
            message = Message(role="assistant", content=text)
            done = _replace(
                state,
                status="completed",
                messages=(*state.messages, message),
                llm_call_id=None,
                usage=usage,
                text=text,
                reason="final_answer",
            )
            return done, _NONE
        calls, call_ids = unique_calls(state, response.tool_calls)
        message = Message(role="assistant", content=text, tool_calls=calls)
        pending = tuple(PendingCall(id=c.id, name=c.name) for c in calls)
        state = _replace(
            state,
            status="awaiting_tool",
            messages=(*state.messages, message),
            llm_call_id=None,
            usage=usage,
            text=text,
            pending=pending,
            call_ids=call_ids,
        )
        return state, tool_directives(
            state, calls, timeout_ms=self.tool_timeout_ms, max_retries=self.tool_max_retries
        )

    def _on_tool_result(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        if state.status != "awaiting_tool" or not isinstance(data, ToolResultData):
            return state, _NONE
        call_id = signal.call_id
        pending = state.pending
        for index, call in enumerate(pending):
            if call.id == call_id:
                if call.result is not None:
                    return state, _NONE  # a duplicate result: the first one stands
                updated = PendingCall(id=call.id, name=call.name, result=data.result)
                pending = (*pending[:index], updated, *pending[index + 1 :])
                break
        else:
            return state, _NONE  # stale or unknown call id
        for call in pending:
            if call.result is None:
                return _replace(state, pending=pending), _NONE
        return self._apply_results(state, pending)

    def _apply_results(
        self, state: ReActState, pending: tuple[PendingCall, ...]
    ) -> tuple[ReActState, Sequence[Directive]]:
        answers: list[Message] = []
        cancelled: ErrorEnvelope | None = None
        for call in pending:
            result = call.result
            if result is None:  # pragma: no cover - callers apply complete batches only
                continue
            if cancelled is None and isinstance(result, Err) and result.error.type == CANCELLED:
                cancelled = result.error
            answers.append(
                Message(
                    role="tool",
                    content=tool_result_content(result),
                    tool_call_id=call.id,
                    name=call.name,
                )
            )
        messages = (*state.messages, *answers)
        if cancelled is not None:
            failed = _replace(
                state,
                messages=messages,
                pending=(),
                status="failed",
                error=cancelled,
                reason="cancelled",
            )
            return failed, _NONE
        if state.iteration >= self.max_iterations:
            done = _replace(
                state, messages=messages, pending=(), status="completed", reason="max_iterations"
            )
            return done, _NONE
        return self._ask(state, messages)

    def _on_request(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        raw_input = data.input if isinstance(data, RequestStartedData) else None
        if state.busy:
            n = state.reject_count + 1
            error = ErrorEnvelope.make(
                BUSY,
                f"run {state.run_id} is busy ({state.status}); wait for "
                "ai.request.completed or ai.request.failed before sending another request",
                {"status": state.status, "request_id": signal.request_id},
            )
            reject = EmitRequestError(
                id=f"{state.run_id}/reject/{n}",
                request_id=signal.request_id,
                iteration=state.iteration,
                error=error,
                reason="busy",
            )
            return _replace(state, reject_count=n), (reject,)
        return self._start(state, raw_input, signal.request_id)

    def _on_request_failed(self, state: ReActState, signal: Signal) -> ReActState:
        if state.status == "completed" or state.status == "failed":
            return state
        data = signal.data
        if isinstance(data, RequestEndData) and isinstance(data.result, Err):
            error = data.result.error
        else:
            error = ErrorEnvelope.make(CANCELLED, f"run {state.run_id} was cancelled")
        reason = "cancelled" if error.type == CANCELLED else error.type
        return _replace(
            state, status="failed", llm_call_id=None, pending=(), error=error, reason=reason
        )


def _prompt_of(raw_input: Any) -> str | None:
    if isinstance(raw_input, str):
        return raw_input
    if isinstance(raw_input, Mapping):
        prompt = raw_input.get("prompt")
        if isinstance(prompt, str):
            return prompt
    return None
