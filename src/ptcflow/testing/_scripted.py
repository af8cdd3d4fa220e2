"""``ScriptedLLM``: a model that answers from a script, for tests, demos and benchmarks."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeAlias

import anyio
import msgspec

from ptcflow.errors import UsageError
from ptcflow.providers import EmbedRequest, LLMRequest
from ptcflow.signals import EmbedResponse, LLMChunk, LLMResponse, ToolCall, ToolCallDelta, Usage
from ptcflow.testing._turns import (
    Fault as Fault,
    ScriptItem as ScriptItem,
    Turn as Turn,
    as_turn,
    fault_error,
    with_ids,
)

__all__ = ("Fault", "ScriptItem", "ScriptedLLM", "Turn")

_WORDS = re.compile(r"\s*\S+\s*|\s+")
_encode = msgspec.json.encode
_Sleep: TypeAlias = Callable[[float], Awaitable[Any]]


def _backend_sleep() -> _Sleep:
    """The running backend's own sleep.

    ``anyio.sleep`` looks the backend up and adds two coroutine frames around the backend's
    sleep on every call; a scripted model sleeping in 10,000 concurrent runs keeps those
    frames alive, so it calls the backend's function (what anyio ends up calling). Trio is
    asked first: in guest mode an asyncio loop runs too, but the task is trio's.
    """
    trio = sys.modules.get("trio")
    if trio is not None and trio.lowlevel.in_trio_task():
        sleep: _Sleep = trio.sleep
        return sleep
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover - a backend anyio adds later
        return anyio.sleep
    return asyncio.sleep


class ScriptedLLM:
    """An :class:`~ptcflow.runtime.LLMProvider` that answers from a script.

    Each request takes the next entry of ``script`` (so a retried request takes the next
    one too: script a fault, then the answer the retry gets). ``script`` may instead be a
    function ``(request) -> entry`` that decides from the request, like pydantic-ai's
    ``FunctionModel``; use it when many runs share one model concurrently. Every request
    is recorded in :attr:`requests`. It also works as a
    :class:`~ptcflow.runtime.ModelResolver` that resolves every model to itself.

    Args:
        script: the entries (see :data:`ScriptItem`), or a function returning one.
        latency: seconds every answer takes (a sleep on the running backend, as
            ``anyio.sleep`` does), unless a turn says otherwise; with ``0`` (the default)
            answers come back without yielding to the event loop.
        model: the model name reported in responses when the request names none.
        record: keep every request in :attr:`requests` (the default, for assertions);
            ``False`` only counts them in :attr:`calls`, so a model shared by thousands of
            runs does not keep their conversations alive.

    Example:
        >>> llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
        >>> llm.remaining
        2
    """

    name = "scripted"

    def __init__(
        self,
        script: Sequence[ScriptItem] | Callable[[LLMRequest], ScriptItem],
        *,
        latency: float = 0.0,
        model: str = "scripted",
        record: bool = True,
    ) -> None:
        if isinstance(script, str) or not (callable(script) or isinstance(script, Sequence)):
            raise UsageError(
                "ScriptedLLM(script): pass a list of turns or a function (request) -> turn, "
                f"got {type(script).__name__}"
            )
        self._script = script
        self._fn: Callable[[LLMRequest], ScriptItem] | None = None
        self._list: Sequence[ScriptItem] = ()
        if callable(script):
            self._fn = script
        else:
            self._list = script
        self.latency = latency
        self.model = model
        self.record = record
        self.requests: list[LLMRequest] = []
        """Every request received, in order (embedding requests excluded); stays empty
        with ``record=False``, for long-lived models shared by many runs."""
        self.calls = 0
        """How many generate/stream requests arrived (counted with or without ``record``)."""

    # -- building scripts ------------------------------------------------------------

    @staticmethod
    def tool_call(name: str, /, **arguments: Any) -> ToolCall:
        """Return a tool call entry: ``ScriptedLLM.tool_call("add", x=2, y=3)``."""
        return ToolCall(id="", name=name, input=arguments)

    @staticmethod
    def timeout(*, hang: bool = False) -> Turn:
        """Return a turn that times out (``hang=True``: never answers, so the caller's
        deadline fires)."""
        return Turn(fault=Fault(kind="hang" if hang else "timeout"))

    @staticmethod
    def rate_limited(retry_after: float = 0.0) -> Turn:
        """Return a turn failing with HTTP 429 and ``Retry-After: retry_after`` seconds."""
        return Turn(fault=Fault(kind="rate_limited", retry_after=retry_after))

    @staticmethod
    def server_error(status: int = 503) -> Turn:
        """Return a turn failing with a transient HTTP ``status`` (5xx)."""
        return Turn(fault=Fault(kind="transient", status=status))

    @staticmethod
    def auth_error() -> Turn:
        """Return a turn failing with HTTP 401 (not retryable)."""
        return Turn(fault=Fault(kind="auth", status=401))

    @staticmethod
    def malformed() -> Turn:
        """Return a turn whose output cannot be parsed (tool-call arguments not JSON)."""
        return Turn(fault=Fault(kind="malformed"))

    @property
    def remaining(self) -> int:
        """Entries not used yet (``-1`` for a function script)."""
        if callable(self._script):
            return -1
        return len(self._script) - self.calls

    # -- the provider protocol -------------------------------------------------------

    def resolve(self, model: str | None, alias: str | None) -> tuple[ScriptedLLM, str]:
        """Resolve any model or alias to this scripted model."""
        return self, model or alias or self.model

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Answer with the next entry (after its latency), or raise its fault."""
        # The hot path of every benchmark and of thousands of concurrent scripted runs, so
        # it is one coroutine: text and single tool-call entries are answered without a
        # Turn, the latency is the backend's own sleep (no anyio.sleep frames alive during
        # it), and a fault is raised from a sync helper. Keep in step with _response.
        self.calls = number = self.calls + 1
        if self.record:
            self.requests.append(request)
        fn = self._fn
        if fn is not None:
            item = fn(request)
        elif number <= len(self._list):
            item = self._list[number - 1]
        else:
            raise self._ran_out(number, request)
        cls = type(item)
        fault: Fault | None = None
        usage: Usage | None = None
        if cls is str:
            text: str = item  # type: ignore[assignment]
            calls: tuple[ToolCall, ...] = ()
            finish = "stop"
            latency = self.latency
        elif cls is ToolCall:
            call: ToolCall = item  # type: ignore[assignment]
            text = ""
            if not call.id:
                call = ToolCall(id=f"call_{number}_0", name=call.name, input=call.input)
            calls = (call,)
            finish = "tool_calls"
            latency = self.latency
        else:
            turn = as_turn(item, number)
            text, usage, fault = turn.text, turn.usage, turn.fault
            calls = with_ids(turn.tool_calls, number)
            finish = turn.finish_reason or ("tool_calls" if calls else "stop")
            latency = self.latency if turn.latency is None else turn.latency
        if latency > 0:  # the model's latency; with none, answer at once (no loop cycle)
            await self._sleep()(latency)
        if fault is not None:
            if fault.kind == "hang":
                await anyio.sleep_forever()
            raise fault_error(fault, number)
        if usage is None:  # an estimate: 4 characters a token, one more per message
            messages = request.messages
            size = 0
            for message in messages:  # a loop: cheaper than sum(map(...)) at these sizes
                size += len(message.content)
            usage = Usage(
                input_tokens=size // 4 + len(messages),
                output_tokens=len(text) // 4 + 1 + 8 * len(calls),
            )
        return LLMResponse(
            text=text,
            tool_calls=calls,
            usage=usage,
            finish_reason=finish,
            model=request.model or self.model,
        )

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream the next entry: text chunks, one chunk per tool call, then a final chunk
        with usage and finish reason."""
        number, turn = self._next(request)
        latency = self.latency if turn.latency is None else turn.latency
        if latency > 0:
            await self._sleep()(latency)
        fault = turn.fault
        if fault is not None and fault.kind != "malformed":  # malformed: streamed below
            if fault.kind == "hang":
                await anyio.sleep_forever()
            raise fault_error(fault, number)
        response = self._response(number, turn, request)
        pieces = turn.chunks if turn.chunks is not None else tuple(_WORDS.findall(turn.text))
        for piece in pieces:
            yield LLMChunk(text=piece)
        if fault is not None:  # malformed: tool-call arguments that are not JSON
            name = response.tool_calls[0].name if response.tool_calls else "unknown"
            bad = ToolCallDelta(index=0, id=f"call_{number}_0", name=name, arguments='{"x": ')
            yield LLMChunk(tool_calls=(bad,))
        else:
            for index, call in enumerate(response.tool_calls):
                args = _encode(call.input).decode()
                delta = ToolCallDelta(index=index, id=call.id, name=call.name, arguments=args)
                yield LLMChunk(tool_calls=(delta,))
        yield LLMChunk(
            usage=response.usage, finish_reason=response.finish_reason, model=response.model
        )

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Return a small deterministic vector per input (length, checksum, vowels)."""
        if self.latency > 0:
            await self._sleep()(self.latency)
        vectors = tuple(
            (
                float(len(t)),
                float(sum(map(ord, t)) % 1000) / 1000,
                float(sum(t.count(v) for v in "aeiou")),
            )
            for t in request.inputs
        )
        usage = Usage(input_tokens=sum(len(t) // 4 + 1 for t in request.inputs))
        return EmbedResponse(vectors=vectors, usage=usage, model=request.model or self.model)

    # -- internals -------------------------------------------------------------------

    def _sleep(self) -> _Sleep:
        """The running backend's own sleep (no anyio frames alive while it waits)."""
        return _backend_sleep()

    def _next(self, request: LLMRequest) -> tuple[int, Turn]:
        self.calls = number = self.calls + 1
        if self.record:
            self.requests.append(request)
        if self._fn is not None:
            item = self._fn(request)
        elif number <= len(self._list):
            item = self._list[number - 1]
        else:
            raise self._ran_out(number, request)
        return number, as_turn(item, number)

    def _ran_out(self, number: int, request: LLMRequest) -> UsageError:
        last = request.messages[-1] if request.messages else None
        return UsageError(
            f"ScriptedLLM script ran out: request #{number} arrived but the script "
            f"has {len(self._list)} turn(s); the request ended with a "
            f"{last.role if last else 'missing'} message {(last.content if last else '')[:80]!r}. "
            "Add a turn for it (a retry or an extra iteration takes one too)."
        )

    def _response(self, number: int, turn: Turn, request: LLMRequest) -> LLMResponse:
        calls = with_ids(turn.tool_calls, number)
        usage = turn.usage
        if usage is None:  # the estimate generate makes
            messages = request.messages
            usage = Usage(
                input_tokens=sum(len(m.content) for m in messages) // 4 + len(messages),
                output_tokens=len(turn.text) // 4 + 1 + 8 * len(calls),
            )
        finish = turn.finish_reason or ("tool_calls" if calls else "stop")
        return LLMResponse(
            text=turn.text,
            tool_calls=calls,
            usage=usage,
            finish_reason=finish,
            model=request.model or self.model,
        )
