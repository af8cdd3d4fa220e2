"""Drive a strategy as a plain function: build the signals a runtime would send, fold them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from ptcflow.core import Folds
from ptcflow.directives import Directive
from ptcflow.errors import UsageError
from ptcflow.signals import (
    CANCELLED,
    LLM_DELTA,
    LLM_RESPONSE,
    PROGRAM_RESULT,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    Err,
    ErrorEnvelope,
    LLMChunk,
    LLMDeltaData,
    LLMResponse,
    LLMResponseData,
    Ok,
    ProgramOutput,
    ProgramResultData,
    RequestEndData,
    RequestStartedData,
    Signal,
    ToolCall,
    ToolResultData,
    ToolSpec,
    ToolStartedData,
    Usage,
    UsageData,
    normalize_result,
)
from ptcflow.strategies import RunInfo

__all__ = ("SignalFactory", "run_strategy")

S = TypeVar("S")
_EPOCH = "2026-01-01T00:00:00Z"


def _call_id(call: str | Directive) -> str:
    return call if isinstance(call, str) else call.id


class SignalFactory:
    """Build the signals the runtime publishes for one run, correlated and numbered.

    Every signal gets the run id, the next ``seq``, a deterministic ``id`` and a fixed
    ``time``, so tests are reproducible. Methods taking ``call`` accept a directive (its
    ``id``, ``request_id`` and ``iteration`` are copied) or a call id.

    Args:
        run_id: the run the signals belong to.
        request_id: the default request id.

    Example:
        >>> sig = SignalFactory("r1")
        >>> [s.type for s in sig.llm_reply("r1/llm/1", "hello")]
        ['ai.usage', 'ai.llm.response']
    """

    def __init__(self, run_id: str = "run_test", *, request_id: str | None = None) -> None:
        self.run_id = run_id
        self.request_id = request_id
        self.seq = 0

    def make(
        self, type: str, data: Any = None, *, call: str | Directive | None = None, **fields: Any
    ) -> Signal:
        """Return a signal of ``type`` with ``data``, correlated to ``call`` if given."""
        self.seq += 1
        if isinstance(call, Directive):
            fields.setdefault("request_id", call.request_id)
            fields.setdefault("iteration", call.iteration)
        if call is not None:
            fields.setdefault("call_id", _call_id(call))
            fields.setdefault("causation_id", _call_id(call))
        fields.setdefault("request_id", self.request_id)
        return Signal(
            type=type,
            source="ptcflow.testing",
            id=f"{self.run_id}/signal/{self.seq}",
            time=_EPOCH,
            data=data,
            run_id=self.run_id,
            seq=self.seq,
            **fields,
        )

    def request_started(self, input: Any = None, *, agent: str = "") -> Signal:
        """``ai.request.started`` with ``input``."""
        return self.make(REQUEST_STARTED, RequestStartedData(input=input, agent=agent))

    def request_failed(self, error: ErrorEnvelope | None = None) -> Signal:
        """``ai.request.failed`` (by default: cancelled)."""
        error = error or ErrorEnvelope.make(CANCELLED, f"run {self.run_id} was cancelled")
        return self.make(REQUEST_FAILED, RequestEndData(result=Err(error=error), reason=error.type))

    def delta(self, call: str | Directive, text: str) -> Signal:
        """``ai.llm.delta`` carrying a text fragment."""
        return self.make(LLM_DELTA, LLMDeltaData(chunk=LLMChunk(text=text)), call=call)

    def usage(self, call: str | Directive, usage: Usage) -> Signal:
        """``ai.usage`` for an LLM call."""
        return self.make(USAGE, UsageData(usage=usage), call=call)

    def llm_response(
        self, call: str | Directive, result: LLMResponse | ErrorEnvelope, *, attempts: int = 1
    ) -> Signal:
        """``ai.llm.response`` with ``Ok(response)`` or ``Err(error)``."""
        envelope: Ok[LLMResponse] | Err = (
            Err(error=result) if isinstance(result, ErrorEnvelope) else Ok(payload=result)
        )
        return self.make(
            LLM_RESPONSE, LLMResponseData(result=envelope, attempts=attempts), call=call
        )

    def llm_reply(
        self,
        call: str | Directive,
        text: str = "",
        *,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        deltas: Sequence[str] = (),
    ) -> list[Signal]:
        """The signals of a successful LLM call: ``deltas``, ``ai.usage``, ``ai.llm.response``."""
        usage = usage or Usage(input_tokens=10, output_tokens=5)
        response = LLMResponse(
            text=text,
            tool_calls=tuple(tool_calls),
            usage=usage,
            finish_reason="tool_calls" if tool_calls else "stop",
            model="scripted",
        )
        out = [self.delta(call, piece) for piece in deltas]
        out.append(self.usage(call, usage))
        out.append(self.llm_response(call, response))
        return out

    def tool_started(
        self, call: str | Directive, tool_name: str = "", arguments: dict[str, Any] | None = None
    ) -> Signal:
        """``ai.tool.started``."""
        data = ToolStartedData(tool_name=_tool_name(call, tool_name), arguments=arguments or {})
        return self.make(TOOL_STARTED, data, call=call)

    def tool_result(self, call: str | Directive, result: Any, *, tool_name: str = "") -> Signal:
        """``ai.tool.result``; ``result`` is normalized (an ``ErrorEnvelope`` becomes ``Err``)."""
        data = ToolResultData(
            tool_name=_tool_name(call, tool_name), result=normalize_result(result)
        )
        return self.make(TOOL_RESULT, data, call=call)

    def tool_reply(
        self, call: str | Directive, result: Any, *, tool_name: str = ""
    ) -> list[Signal]:
        """The signals of one tool call: ``ai.tool.started`` then ``ai.tool.result``."""
        return [
            self.tool_started(call, tool_name),
            self.tool_result(call, result, tool_name=tool_name),
        ]

    def program_result(
        self,
        call: str | Directive,
        result: ProgramOutput | ErrorEnvelope,
        *,
        attempts: int = 1,
        duration_ms: float = 0.0,
    ) -> Signal:
        """``ai.program.result`` with ``Ok(output)`` or ``Err(error)`` (a ``RunProgram``'s end).

        Build a realistic output by running the directive's program, for example with
        ``ptcflow.program.perform_program``.
        """
        envelope: Ok[ProgramOutput] | Err = (
            Err(error=result) if isinstance(result, ErrorEnvelope) else Ok(payload=result)
        )
        data = ProgramResultData(result=envelope, attempts=attempts, duration_ms=duration_ms)
        return self.make(PROGRAM_RESULT, data, call=call)


def _tool_name(call: str | Directive, given: str) -> str:
    return given or str(getattr(call, "tool_name", ""))


def run_strategy(
    strategy: Folds[S],
    signals: Iterable[Signal],
    *,
    run: RunInfo | None = None,
    tools: Sequence[ToolSpec] = (),
) -> tuple[S, list[Directive]]:
    """Drive ``strategy`` through ``signals`` without a runtime; no I/O happens.

    The run starts from ``run`` or, when it is ``None``, from the first
    ``ai.request.started`` in ``signals`` (its input, run id and request id). Every other
    signal goes to ``handle`` in the given order.

    Args:
        strategy: the strategy under test.
        signals: the signals to feed (for example built with :class:`SignalFactory`).
        run: how the run starts; default: taken from ``ai.request.started``.
        tools: tool specs for the default :class:`RunInfo`.

    Returns:
        The final state and every directive emitted (by ``init`` and each ``handle``).

    Raises:
        UsageError: when ``run`` is ``None`` and no ``ai.request.started`` is given.

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> sig = SignalFactory("r1")
        >>> start = sig.request_started("hi")
        >>> state, directives = run_strategy(ReAct(), [start, *sig.llm_reply("r1/llm/1", "hey")])
        >>> state.status, state.text, len(directives)
        ('completed', 'hey', 1)
    """
    items = list(signals)
    if run is None:
        start = next((s for s in items if s.type == REQUEST_STARTED), None)
        if start is None:
            raise UsageError(
                "run_strategy(): pass run=RunInfo(...) or include an ai.request.started "
                "signal (SignalFactory.request_started(input))"
            )
        data = start.data
        run = RunInfo(
            run_id=start.run_id,
            input=data.input if isinstance(data, RequestStartedData) else None,
            request_id=start.request_id,
            parent_run_id=start.parent_run_id,
            tools=tuple(tools),
        )
        items = [s for s in items if s is not start]
    state, first = strategy.init(run)
    emitted = list(first)
    for signal in items:
        state, more = strategy.handle(state, signal)
        emitted.extend(more)
    return state, emitted
