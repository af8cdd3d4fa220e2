"""ReAct with native tool calling, as a pure state machine.

The loop: ask the model (``LLMGenerate`` / ``LLMStream``) with the run's tools; when it
answers with tool calls, run them all in parallel (one ``ToolExec`` each, or an
``EmitToolError`` for a tool that does not exist); once every result is in, append them to
the conversation in the order the model asked and ask again; an answer without tool calls
ends the run. Nothing here awaits, reads a clock or draws random numbers.

The runtime calls ``handle`` for every signal of a run and ``outcome`` after each, so both
are kept lean: ``handle`` dispatches on ``signal.type`` through a dict, a transition makes
one ``replace`` of the state, a signal that does not apply returns the very same state
object, and ``outcome`` of a running state is one set lookup. Histories grow with
``history + (new,)``, which builds no intermediate list (hence the ``noqa: RUF005``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from ptcflow.core import Outcome, RunInfo, Step
from ptcflow.directives import (
    Directive,
    EmitRequestError,
    LLMGenerate,
    LLMStream,
)
from ptcflow.errors import ConfigError, UsageError
from ptcflow.sessions import CompactionPlan, compacted_history, plan_compaction
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
    Summary,
    ToolResultData,
    ToolSpec,
    Usage,
    UsageData,
    tool_result_content,
)
from ptcflow.signature import ConversionError, Converter, import_type
from ptcflow.strategies.react._handoff import handoff_answer, handoff_directives
from ptcflow.strategies.react._output import (
    OutputType,
    check_answer,
    describe_output,
    output_prompt,
)
from ptcflow.strategies.react._state import PendingCall, ReActState
from ptcflow.strategies.react._tools import (
    cancelled_error,
    collect_result,
    tool_directives,
    unique_calls,
)

__all__ = ("ReAct",)

_NONE: tuple[Directive, ...] = ()
_replace = msgspec.structs.replace
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_ENDED: Final = frozenset(("completed", "failed"))
_ZERO_USAGE: Final = ReActState(run_id="").usage  # the default: ``zero + u`` is ``u``
_LLM_IDS: Final = tuple(f"/llm/{n}" for n in range(64))  # id suffixes, formatted once


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
        response_schema: a JSON Schema the final answer must follow, sent with every call
            as the provider's structured-output request.
        llm_options: provider options of every call (temperature, ...).
        llm_retry_backoff_ms: base of the backoff between retries of a model call.
        output_type: the final answer as a Python type (a dataclass, ``msgspec.Struct``,
            ``TypedDict``, pydantic model, ``Enum``), or its ``module:qualname``. Kept as
            that path (the field holds the string once built); the system prompt asks for
            the final answer as one JSON value of the type (its compact signature, format
            notes and JSON Schema); an answer that is not JSON or does not fit goes back to
            the model with the path and the problem, and takes another model call (within
            ``max_iterations``). The run's value is the plain JSON value; :meth:`typed`
            builds the instance. See docs/types.md.
        output_spec: what is derived from ``output_type`` when the ReAct is built (its path,
            JSON Schema and compact signature); set by the ReAct itself, never by hand.

    Raises:
        ConfigError: when a limit is out of range, both ``model`` and ``model_alias``
            are set, or ``output_type`` is not a class with a JSON form.

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
    response_schema: dict[str, Any] | None = None
    llm_options: dict[str, Any] = msgspec.field(default_factory=dict)
    llm_retry_backoff_ms: int = 200
    output_type: Any = None
    output_spec: OutputType | None = None

    def __post_init__(self) -> None:
        if self.output_type is None:
            if self.output_spec is not None:
                msgspec.structs.force_setattr(self, "output_spec", None)
        elif not (isinstance(self.output_type, str) and self.output_spec is not None):
            # a class given here (or a path alone): derive the data once; a ReAct decoded
            # from JSON (a Temporal worker) has both already and imports nothing
            output = describe_output(self.output_type, f"ReAct({self.name!r})")
            msgspec.structs.force_setattr(self, "output_type", output.path)
            msgspec.structs.force_setattr(self, "output_spec", output)
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

        ``run.history`` (a conversation so far) goes between the system prompt and the
        new user message; with ``run.compaction``, shrunk first (see
        :class:`~ptcflow.sessions.Compaction`): when a summary of its older part is due,
        the run starts ``compacting`` with the summarizing call (``{run_id}/compact``),
        and its own first call follows the answer. The input ``{"continue": True}`` adds
        no user message: the model answers the history as it stands (how a conversation
        handed over by a handoff is taken on; refused as invalid input without a history).

        With ``run.input=None`` the run waits (``idle``) for an ``ai.request.started``
        that a host delivers (``Runtime.run`` cannot: it ends such a run as ``stalled``).
        Invalid input ends the run at once as failed (``validation``).
        """
        raw_input = run.input
        prompt = raw_input if isinstance(raw_input, str) else _prompt_of(raw_input)
        tools = run.tools
        handoff_tools = _handoff_names(tools) if tools else ()
        system = self.system_prompt
        if self.output_spec is not None:
            typed = output_prompt(self.output_spec)
            system = f"{system}\n\n{typed}" if system else typed
        if system:
            messages: tuple[Message, ...] = (Message(role="system", content=system),)
        else:
            messages = ()
        opening = len(messages)
        history = run.history
        earlier: tuple[Message, ...] = ()
        summary: Summary | None = None
        if history and run.compaction is not None and prompt is not None:
            plan = plan_compaction(history, run.compaction, run.summary)
            if plan is not None and plan.needs_summary:
                return self._compact(run, messages, prompt, plan)
            if plan is not None:
                earlier, summary = history, plan.summary
                history = compacted_history(plan, None)
        if history:
            messages += history
        if prompt is not None:
            messages += (Message(role="user", content=prompt),)
        elif not (history and _continues(raw_input)):
            state = ReActState(
                run_id=run.run_id,
                request_id=run.request_id,
                messages=messages,
                tools=tools,
                opening=opening,
                handoff_tools=handoff_tools,
            )
            if raw_input is None:
                return state, _NONE
            return self._invalid_input(state, raw_input, run.request_id), _NONE
        run_id = run.run_id
        request_id = run.request_id
        directive = self._llm_directive(run_id, 1, request_id, 1, messages, tools)
        call_id = directive.id
        state = ReActState(
            run_id=run_id,
            status="awaiting_llm",
            request_id=request_id,
            messages=messages,
            tools=tools,
            iteration=1,
            llm_count=1,
            llm_call_id=call_id,
            opening=opening,
            earlier=earlier,
            shown=len(history) if earlier else 0,
            summary=summary,
            handoff_tools=handoff_tools,
        )
        return state, (directive,)

    def _compact(
        self, run: RunInfo, opening: tuple[Message, ...], prompt: str, plan: CompactionPlan
    ) -> tuple[ReActState, Sequence[Directive]]:
        """Start a run whose history must be summarized first: the summarizing call
        (``{run_id}/compact``); the run's own first call follows its answer."""
        summary_model = run.compaction.summary_model if run.compaction is not None else None
        directive = LLMGenerate(
            id=run.run_id + "/compact",
            request_id=run.request_id,
            iteration=0,  # before the run's own calls (and outside a turn's span)
            messages=plan.request,
            model=summary_model or self.model,
            model_alias=None if summary_model else self.model_alias,
            timeout_ms=self.llm_timeout_ms,
            max_retries=self.llm_max_retries,
            retry_backoff_ms=self.llm_retry_backoff_ms,
            options=self.llm_options,
            metadata={
                "operation": "compaction",
                "summarized_messages": plan.start - plan.base,
                "kept_messages": len(plan.kept),
            },
        )
        state = ReActState(
            run_id=run.run_id,
            status="compacting",
            request_id=run.request_id,
            messages=opening,
            tools=run.tools,
            llm_call_id=directive.id,
            opening=len(opening),
            earlier=run.history,
            compacting=plan,
            prompt=prompt,
            handoff_tools=_handoff_names(run.tools) if run.tools else (),
        )
        return state, (directive,)

    def _on_summary(
        self, state: ReActState, call_id: str, result: Any
    ) -> tuple[ReActState, Sequence[Directive]]:
        """The summarizing call answered: send the compacted history and the prompt."""
        plan = state.compacting
        assert plan is not None
        if type(result) is not Ok and isinstance(result, Err):
            reason = "cancelled" if result.error.type == CANCELLED else "llm_error"
            failed = _replace(
                state, status="failed", llm_call_id=None, error=result.error, reason=reason
            )
            return failed, _NONE
        response: Any = result.payload
        if not isinstance(response, LLMResponse):
            return self._not_a_response(state, call_id, response), _NONE
        usage = state.usage if state.usage_seen else state.usage + response.usage
        summary = Summary(text=response.text.strip(), covers=plan.start, digest=plan.digest)
        history = compacted_history(plan, summary)
        messages = state.messages + history + (Message(role="user", content=state.prompt),)
        state = _replace(
            state,
            usage=usage,
            shown=len(history),
            summary=summary,
            compacting=None,
            prompt="",
        )
        return self._ask(state, messages, 1)

    def compaction_summary(self, state: ReActState) -> Summary | None:
        """The summary this run sent in place of its history's older messages (made or
        reused by its :class:`~ptcflow.sessions.Compaction`), else ``None``."""
        return state.summary

    def handle(self, state: ReActState, signal: Signal) -> tuple[ReActState, Sequence[Directive]]:
        """Fold one signal into the state; signals that do not apply are ignored.

        An ignored signal returns the very same ``state`` object (and no directives).
        """
        on = _ON.get(signal.type)
        if on is None:
            return state, _NONE
        return on(self, state, signal)

    def outcome(self, state: ReActState) -> Outcome | None:
        """Return the outcome once completed (``Ok(text)``) or failed (``Err(error)``)."""
        if state.status not in _ENDED:
            return None
        if state.status == "completed":
            value = state.text if self.output_spec is None and not state.agent else state.value
            return Outcome(result=Ok(payload=value), usage=state.usage, reason=state.reason)
        error = state.error or ErrorEnvelope.make("internal", "run failed without an error")
        return Outcome(result=Err(error=error), usage=state.usage, reason=state.reason)

    def conversation(self, state: ReActState) -> tuple[Message, ...]:
        """The conversation so far: the run's history, then its own messages (the system
        prompt left out: it belongs to the strategy, not to the conversation); the
        whole history, even when a compaction sent less of it."""
        return state.conversation

    def answered_by(self, state: ReActState) -> str | None:
        """The agent that answered, when the run handed its conversation on (a handoff
        tool): the last agent of the chain; ``None``: this run's own agent."""
        return state.agent or None

    def snapshot(self, state: ReActState) -> Any:
        """Return the state as plain JSON data (dicts, lists, strings, numbers)."""
        return _decode(_encode(state))

    def typed(self, step: Step) -> Step:
        """``step`` with its plain value built into :attr:`output_type` (as it is without
        one, or when the run failed): the edge's typed value. ``rt.run(react, ...)``
        returns the plain value, as for every strategy; call this on its Step (or on one
        recorded, replayed, or returned by a Temporal handle).

        Returns:
            The Step; a failed one (``validation``) when the value does not fit the type.

        Raises:
            UsageError: the type cannot be imported in this process.
        """
        output = self.output_spec
        if output is None or not step.ok:
            return step
        try:
            value = Converter(import_type(output.path)).load(step.value)
        except ConversionError as exc:
            error = ErrorEnvelope.make(
                VALIDATION,
                f"ReAct({self.name!r}): the answer does not fit output_type: {exc}",
                {"where": "output", "errors": [str(exc)]},
                retryable=False,
            )
            return _replace(step, ok=False, error=error, reason="validation")
        return _replace(step, value=value)

    # -- transitions (each makes at most one replace of the state) ---------------------

    def _invalid_input(
        self, state: ReActState, raw_input: Any, request_id: str | None
    ) -> ReActState:
        kind = type(raw_input).__name__
        message = (
            f"ReAct({self.name!r}) input must be a string or a mapping with a string "
            f"'prompt', got {kind}"
        )
        if _continues(raw_input):
            message = (
                f"ReAct({self.name!r}) got {{'continue': True}}, which answers a conversation "
                "as it stands, but the run has no history: pass history= (or session=), or "
                "a prompt"
            )
        error = ErrorEnvelope.make(VALIDATION, message, {"input_type": kind})
        return _replace(
            state, status="failed", request_id=request_id, error=error, reason="invalid_input"
        )

    def _ask(
        self,
        state: ReActState,
        messages: tuple[Message, ...],
        iteration: int,
    ) -> tuple[ReActState, Sequence[Directive]]:
        """Ask the model with ``messages`` (the run's next LLM call, in ``iteration``)."""
        n = state.llm_count + 1
        directive = self._llm_directive(
            state.run_id, n, state.request_id, iteration, messages, state.tools
        )
        call_id = directive.id
        state = _replace(
            state,
            status="awaiting_llm",
            messages=messages,
            iteration=iteration,
            llm_count=n,
            llm_call_id=call_id,
            usage_seen=False,
            streamed="",
            pending=(),
        )
        return state, (directive,)

    def _llm_directive(
        self,
        run_id: str,
        n: int,
        request_id: str | None,
        iteration: int,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
    ) -> LLMGenerate:
        """The run's ``n``-th model call (id ``{run_id}/llm/{n}``)."""
        return (LLMStream if self.stream else LLMGenerate)(
            id=run_id + (_LLM_IDS[n] if n < len(_LLM_IDS) else f"/llm/{n}"),
            request_id=request_id,
            iteration=iteration,
            messages=messages,
            tools=tools,
            model=self.model,
            model_alias=self.model_alias,
            timeout_ms=self.llm_timeout_ms,
            max_retries=self.llm_max_retries,
            retry_backoff_ms=self.llm_retry_backoff_ms,
            response_schema=self.response_schema,
            options=self.llm_options,
        )

    def _on_delta(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, LLMDeltaData):
            return state, _NONE
        text = data.chunk.text
        if not text:
            return state, _NONE
        return _replace(state, streamed=state.streamed + text), _NONE

    def _on_usage(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        if signal.call_id != state.llm_call_id or not isinstance(data, UsageData):
            return state, _NONE
        usage = data.usage
        if state.usage is not _ZERO_USAGE or type(usage) is not Usage:
            usage = state.usage + usage
        return _replace(state, usage_seen=True, usage=usage), _NONE

    def _on_llm_response(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        call_id = signal.call_id
        data = signal.data
        if (
            call_id != state.llm_call_id
            or call_id is None
            or state.status != "awaiting_llm"
            or not isinstance(data, LLMResponseData)
        ):
            if (
                state.status == "compacting"
                and call_id == state.llm_call_id
                and call_id is not None
                and isinstance(data, LLMResponseData)
            ):
                return self._on_summary(state, call_id, data.result)
            return state, _NONE
        result = data.result
        if type(result) is not Ok and isinstance(result, Err):  # (type(): a cheap "is Ok")
            reason = "cancelled" if result.error.type == CANCELLED else "llm_error"
            failed = _replace(
                state, status="failed", llm_call_id=None, error=result.error, reason=reason
            )
            return failed, _NONE
        response: Any = result.payload  # typed, but a custom handler may send anything
        if not isinstance(response, LLMResponse):
            return self._not_a_response(state, call_id, response), _NONE
        usage = state.usage if state.usage_seen else state.usage + response.usage
        text = response.text or state.streamed
        calls = response.tool_calls
        if not calls:
            if self.output_spec is not None:
                return self._final_answer(state, text, usage)
            done = _replace(
                state,
                status="completed",
                messages=state.messages + (Message(role="assistant", content=text),),  # noqa: RUF005
                llm_call_id=None,
                usage=usage,
                text=text,
                reason="final_answer",
            )
            return done, _NONE
        used = state.call_ids
        if len(calls) == 1 and (only := calls[0]).id and only.id not in used:
            call_ids = used + (only.id,)  # noqa: RUF005 - the common case: one call with a fresh id
            pending: tuple[PendingCall, ...] = (PendingCall(id=only.id, name=only.name),)
        else:
            calls, call_ids = unique_calls(state, calls)
            pending = tuple([PendingCall(id=c.id, name=c.name) for c in calls])
        message = Message(role="assistant", content=text, tool_calls=calls)
        state = _replace(
            state,
            status="awaiting_tool",
            messages=state.messages + (message,),  # noqa: RUF005
            llm_call_id=None,
            pending=pending,
            call_ids=call_ids,
            usage=usage,
            text=text,
        )
        directives = tool_directives(
            state, calls, timeout_ms=self.tool_timeout_ms, max_retries=self.tool_max_retries
        )
        if state.handoff_tools:
            return handoff_directives(state, calls, directives)
        return state, directives

    def _final_answer(
        self, state: ReActState, text: str, usage: Usage
    ) -> tuple[ReActState, Sequence[Directive]]:
        """A typed run's answer: completed with its plain value, or fed back (another
        model call), or failed when it was the last call allowed."""
        output = self.output_spec
        assert output is not None
        answer = Message(role="assistant", content=text)
        messages = state.messages + (answer,)  # noqa: RUF005
        try:
            value, problem = check_answer(output, text)
        except UsageError as exc:  # the type is not importable here (a Temporal worker)
            error = ErrorEnvelope.make(VALIDATION, str(exc), {"output_type": output.path})
            failed = _replace(
                state, status="failed", messages=messages, llm_call_id=None, usage=usage,
                text=text, error=error, reason="output_type_unavailable",
            )  # fmt: skip
            return failed, _NONE
        if problem is None:
            done = _replace(
                state, status="completed", messages=messages, llm_call_id=None, usage=usage,
                text=text, value=value, reason="final_answer",
            )  # fmt: skip
            return done, _NONE
        if state.iteration >= self.max_iterations:
            return self._out_of_calls(
                _replace(state, messages=messages, usage=usage, text=text), problem
            ), _NONE
        left = self.max_iterations - state.iteration
        note = f"{problem}\n({left} model call{'s' if left > 1 else ''} left.)"
        feedback = Message(role="user", content=note)
        state = _replace(state, usage=usage, text=text)
        return self._ask(state, messages + (feedback,), state.iteration + 1)  # noqa: RUF005

    def _out_of_calls(self, state: ReActState, problem: str | None) -> ReActState:
        """A typed run that used its last model call without a valid final answer."""
        message = (
            f"ReAct({self.name!r}): no valid final answer after {self.max_iterations} model calls"
        )
        message += f"; the last one: {problem}" if problem else " (the last one asked for tools)"
        error = ErrorEnvelope.make(
            VALIDATION,
            message,
            {"where": "output", "max_iterations": self.max_iterations},
            retryable=False,
        )
        return _replace(
            state, status="failed", llm_call_id=None, pending=(), error=error,
            reason="max_iterations",
        )  # fmt: skip

    def _not_a_response(self, state: ReActState, call_id: str, response: Any) -> ReActState:
        error = ErrorEnvelope.make(
            PROVIDER_ERROR,
            f"ai.llm.response for {call_id!r} carries a {type(response).__name__}, not an "
            "LLMResponse; a custom LLM handler must publish Ok(payload=LLMResponse(...))",
            {"payload_type": type(response).__name__},
        )
        return _replace(state, status="failed", llm_call_id=None, error=error, reason="llm_error")

    def _on_tool_result(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        if state.status != "awaiting_tool" or not isinstance(data, ToolResultData):
            return state, _NONE
        pending = state.pending
        result = data.result
        if len(pending) == 1:  # the common case: one call, whose result completes the batch
            call = pending[0]
            if call.id != signal.call_id or call.result is not None:
                return state, _NONE  # a stale or unknown call id, or a duplicate result
            content = tool_result_content(result)
            message = Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
            messages = state.messages + (message,)  # noqa: RUF005
            cancelled = cancelled_error(result)
        else:
            state, complete, cancelled = collect_result(state, signal.call_id, result)
            if complete is None:
                return state, _NONE  # still waiting (or the result was ignored)
            messages = complete
        # The batch is complete: the next state holds no pending calls.
        if state.handoff is not None and cancelled is None:
            return self._handed_over(state, messages, signal.call_id, result), _NONE
        if cancelled is not None:
            failed = _replace(
                state,
                status="failed",
                messages=messages,
                pending=(),
                error=cancelled,
                reason="cancelled",
            )
            return failed, _NONE
        if state.iteration >= self.max_iterations:
            if self.output_spec is not None:
                return self._out_of_calls(_replace(state, messages=messages), None), _NONE
            done = _replace(
                state, status="completed", messages=messages, pending=(), reason="max_iterations"
            )
            return done, _NONE
        return self._ask(state, messages, state.iteration + 1)

    def _handed_over(
        self,
        state: ReActState,
        messages: tuple[Message, ...],
        last_id: str | None,
        last: Ok[Any] | Err,
    ) -> ReActState:
        """The batch holding the handoff call is complete: the run ends with the answer of
        the agent that took the conversation (its messages appended), or fails with its
        error (the conversation was handed over: this agent does not take it back)."""
        call_id = state.handoff
        result = last if call_id == last_id else None
        if result is None:
            result = next((c.result for c in state.pending if c.id == call_id), None)
        if type(result) is Ok:
            done = handoff_answer(state, messages, result.payload)
            if done is not None:
                return done
            error = ErrorEnvelope.make(
                VALIDATION,
                f"ReAct({self.name!r}): the result of handoff call {call_id!r} is not a "
                "handoff's answer (a mapping with 'agent', 'value', 'messages' and 'note')",
                {"call_id": call_id},
                retryable=False,
            )
        elif isinstance(result, Err):
            error = result.error
        else:  # pragma: no cover - a complete batch holds every result
            error = ErrorEnvelope.make("internal", f"handoff call {call_id!r} has no result")
        return _replace(
            state, status="failed", messages=messages, pending=(), handoff=None, error=error,
            reason="handoff_failed",
        )  # fmt: skip

    def _on_request(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        data = signal.data
        raw_input = data.input if isinstance(data, RequestStartedData) else None
        request_id = signal.request_id
        if state.busy:
            n = state.reject_count + 1
            error = ErrorEnvelope.make(
                BUSY,
                f"run {state.run_id} is busy ({state.status}); wait for "
                "ai.request.completed or ai.request.failed before sending another request",
                {"status": state.status, "request_id": request_id},
            )
            reject = EmitRequestError(
                id=f"{state.run_id}/reject/{n}",
                request_id=request_id,
                iteration=state.iteration,
                error=error,
                reason="busy",
            )
            return _replace(state, reject_count=n), (reject,)
        prompt = _prompt_of(raw_input)
        if prompt is None:
            return self._invalid_input(state, raw_input, request_id), _NONE
        messages = state.messages + (Message(role="user", content=prompt),)  # noqa: RUF005
        # A new request: a clean slate, then the first model call of its first iteration.
        state = _replace(
            state, request_id=request_id, text="", value=None, error=None, reason="", agent=""
        )
        return self._ask(state, messages, 1)

    def _on_request_failed(
        self, state: ReActState, signal: Signal
    ) -> tuple[ReActState, Sequence[Directive]]:
        if state.status in _ENDED:
            return state, _NONE
        data = signal.data
        if isinstance(data, RequestEndData) and isinstance(data.result, Err):
            error = data.result.error
        else:
            error = ErrorEnvelope.make(CANCELLED, f"run {state.run_id} was cancelled")
        reason = "cancelled" if error.type == CANCELLED else error.type
        failed = _replace(
            state, status="failed", llm_call_id=None, pending=(), error=error, reason=reason
        )
        return failed, _NONE


_On = Callable[[ReAct, ReActState, Signal], tuple[ReActState, Sequence[Directive]]]
_ON: Final[dict[str, _On]] = {
    USAGE: ReAct._on_usage,
    LLM_RESPONSE: ReAct._on_llm_response,
    TOOL_RESULT: ReAct._on_tool_result,
    LLM_DELTA: ReAct._on_delta,
    REQUEST_STARTED: ReAct._on_request,
    REQUEST_FAILED: ReAct._on_request_failed,
}
"""The signal types ReAct folds, and how; every other type is ignored."""


def _handoff_names(tools: tuple[ToolSpec, ...]) -> tuple[str, ...]:
    """The names of the handoff tools among ``tools`` (usually none)."""
    names: tuple[str, ...] = ()
    for spec in tools:
        if spec.handoff:
            names += (spec.name,)
    return names


def _continues(raw_input: Any) -> bool:
    """True for the input ``{"continue": True}``: answer the history as it stands."""
    return isinstance(raw_input, Mapping) and raw_input.get("continue") is True


def _prompt_of(raw_input: Any) -> str | None:
    if isinstance(raw_input, str):
        return raw_input
    if isinstance(raw_input, Mapping):
        prompt = raw_input.get("prompt")
        if isinstance(prompt, str):
            return prompt
    return None
