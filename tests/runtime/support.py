"""Small local fakes for the runtime tests: a probe strategy and a programmable provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import msgspec

from ptcflow.directives import Directive
from ptcflow.runtime import EmbedRequest, LLMRequest
from ptcflow.signals import (
    REQUEST_FAILED,
    TERMINAL_TYPES,
    EmbedResponse,
    Err,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    Message,
    Ok,
    Signal,
    Usage,
)
from ptcflow.strategies import Outcome, RunInfo

MSGS = (Message(role="user", content="hi"),)


class ProbeState(msgspec.Struct, frozen=True, kw_only=True):
    """Which directives still wait for their terminal signal, and what was seen."""

    pending: tuple[str, ...] = ()
    seen: tuple[str, ...] = ()
    results: tuple[Any, ...] = ()
    failed: ErrorEnvelope | None = None
    steps: int = 0


class Probe:
    """A strategy that emits given directives and completes once each has its terminal.

    ``then`` maps a terminal signal to follow-up directives (so tests can chain work);
    ``fail_on`` makes ``handle`` raise on a signal type (a crashing strategy).
    """

    def __init__(
        self,
        directives: Sequence[Directive] | Callable[[RunInfo], Sequence[Directive]] = (),
        *,
        then: Callable[[Signal], Sequence[Directive]] | None = None,
        fail_on: str | None = None,
        name: str = "probe",
    ) -> None:
        self._directives = directives
        self._then = then
        self._fail_on = fail_on
        self.name = name
        self.infos: list[RunInfo] = []
        self.received: list[Signal] = []

    def init(self, run: RunInfo) -> tuple[ProbeState, Sequence[Directive]]:
        self.infos.append(run)
        ds = self._directives(run) if callable(self._directives) else self._directives
        return ProbeState(pending=tuple(d.id for d in ds)), ds

    def handle(self, state: ProbeState, signal: Signal) -> tuple[ProbeState, Sequence[Directive]]:
        self.received.append(signal)
        if self._fail_on is not None and signal.type == self._fail_on:
            raise ValueError(f"probe refuses {signal.type}")
        seen = (*state.seen, signal.type)
        out: Sequence[Directive] = ()
        if signal.type == REQUEST_FAILED:
            return msgspec.structs.replace(
                state, seen=seen, failed=signal.data.result.error, steps=state.steps + 1
            ), ()
        pending = state.pending
        results = state.results
        if signal.type in TERMINAL_TYPES and signal.call_id in pending:
            pending = tuple(p for p in pending if p != signal.call_id)
            results = (*results, getattr(signal.data, "result", None))
            if self._then is not None:
                out = self._then(signal)
                pending = (*pending, *(d.id for d in out))
        return ProbeState(
            pending=pending, seen=seen, results=results, failed=state.failed, steps=state.steps + 1
        ), out

    def outcome(self, state: ProbeState) -> Outcome | None:
        if state.failed is not None:
            return Outcome(result=Err(error=state.failed), reason="failed")
        if state.pending:
            return None
        payload = [
            r.payload if isinstance(r, Ok) else {"error": r.error.type} if isinstance(r, Err) else r
            for r in state.results
        ]
        return Outcome(result=Ok(payload=payload), reason="done")

    def snapshot(self, state: ProbeState) -> Any:
        return {"steps": state.steps, "pending": list(state.pending)}


Behaviour = Any  # an LLMResponse, an exception, or an async callable (request) -> LLMResponse


class FakeLLM:
    """A provider whose answers are behaviours taken in order (the last one repeats).

    A behaviour is an ``LLMResponse`` (returned), an exception (raised), or an async
    function of the request (awaited). ``calls`` counts requests; ``in_flight`` and
    ``max_in_flight`` observe concurrency.
    """

    def __init__(
        self,
        *behaviours: Behaviour,
        name: str = "fake",
        model: str = "fake-1",
        chunks: Sequence[LLMChunk] = (),
    ) -> None:
        self.name = name
        self.model = model
        self._behaviours = list(behaviours) or [LLMResponse(text="ok")]
        self._chunks = chunks
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.times: list[float] = []
        self.requests: list[Any] = []

    async def _answer(self, request: Any) -> Any:
        self.calls += 1
        self.times.append(anyio.current_time())
        self.requests.append(request)
        b = self._behaviours[min(self.calls, len(self._behaviours)) - 1]
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if isinstance(b, BaseException):
                raise b
            if callable(b):
                return await b(request)
            await anyio.lowlevel.checkpoint()
            return b
        finally:
            self.in_flight -= 1

    async def generate(self, request: LLMRequest) -> LLMResponse:
        result: LLMResponse = await self._answer(request)
        return result

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        await self._answer(request)
        for chunk in self._chunks:
            await anyio.lowlevel.checkpoint()
            yield chunk

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        await self._answer(request)
        return EmbedResponse(
            vectors=tuple((float(len(t)),) for t in request.inputs),
            usage=Usage(input_tokens=len(request.inputs)),
            model=request.model,
        )


def hang_until(event: anyio.Event) -> Callable[[Any], Awaitable[LLMResponse]]:
    """A behaviour that waits for ``event`` (or cancellation)."""

    async def behaviour(request: Any) -> LLMResponse:
        await event.wait()
        return LLMResponse(text="late")

    return behaviour


def terminals(signals: Sequence[Signal], call_id: str) -> list[Signal]:
    """The terminal signals of one directive."""
    return [s for s in signals if s.call_id == call_id and s.type in TERMINAL_TYPES]


def types_of(signals: Sequence[Signal], call_id: str) -> list[str]:
    """The signal types of one directive, in order."""
    return [s.type for s in signals if s.call_id == call_id]
