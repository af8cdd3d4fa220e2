"""``ScriptedLLM``: a model that answers from a script, for tests, demos and benchmarks."""

from __future__ import annotations

import operator
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal, TypeAlias

import anyio
import msgspec

from ptcflow.errors import UsageError
from ptcflow.runtime._provider import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import (
    AUTH,
    PROVIDER_ERROR,
    RATE_LIMITED,
    TRANSIENT,
    EmbedResponse,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    ToolCall,
    ToolCallDelta,
    Usage,
)

__all__ = ("Fault", "ScriptItem", "ScriptedLLM", "Turn")

FaultKind = Literal["timeout", "hang", "rate_limited", "transient", "auth", "malformed"]


class Fault(msgspec.Struct, frozen=True, kw_only=True):
    """A failure a scripted turn injects instead of answering.

    Kinds: ``timeout`` (raises ``TimeoutError`` as an HTTP client would), ``hang`` (sleeps
    until the caller's deadline or cancellation), ``rate_limited`` (HTTP 429 with
    ``retry_after`` seconds), ``transient`` (HTTP ``status`` 5xx), ``auth`` (HTTP 401), and
    ``malformed`` (output that cannot be parsed: tool-call arguments that are not JSON).
    """

    kind: FaultKind
    retry_after: float | None = None
    status: int | None = None


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One scripted model answer.

    Attributes:
        text: the answer text.
        tool_calls: tool calls to request (ids are filled in when empty).
        chunks: how :meth:`ScriptedLLM.stream` splits ``text``; default: word by word.
        usage: reported token usage; default: a deterministic estimate from the lengths.
        latency: seconds to wait before answering (the model's latency); default: the
            model's ``latency``.
        fault: fail this turn instead of answering (see :class:`Fault`).
        finish_reason: default ``tool_calls`` when there are tool calls, else ``stop``.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    chunks: tuple[str, ...] | None = None
    usage: Usage | None = None
    latency: float | None = None
    fault: Fault | None = None
    finish_reason: str | None = None


ScriptItem: TypeAlias = str | ToolCall | Sequence[ToolCall] | Turn
"""A script entry: text, one tool call, parallel tool calls, or a full :class:`Turn`."""

_WORDS = re.compile(r"\s*\S+\s*|\s+")
_encode = msgspec.json.encode
_content = operator.attrgetter("content")


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
        latency: seconds every answer takes (``anyio.sleep``), unless a turn says otherwise;
            with ``0`` (the default) answers come back without yielding to the event loop.
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
        self._fn: Callable[[LLMRequest], ScriptItem] | None = script if callable(script) else None
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
        number, turn = self._next(request)
        if turn.fault is not None or self.latency > 0 or turn.latency:
            await self._before(number, turn, streaming=False)
        return self._response(number, turn, request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream the next entry: text chunks, one chunk per tool call, then a final chunk
        with usage and finish reason."""
        number, turn = self._next(request)
        await self._before(number, turn, streaming=True)
        response = self._response(number, turn, request)
        pieces = turn.chunks if turn.chunks is not None else tuple(_WORDS.findall(turn.text))
        for piece in pieces:
            yield LLMChunk(text=piece)
        if turn.fault is not None:  # malformed: tool-call arguments that are not JSON
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
        await self._before(0, Turn(), streaming=False)
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

    def _next(self, request: LLMRequest) -> tuple[int, Turn]:
        self.calls = number = self.calls + 1
        if self.record:
            self.requests.append(request)
        if self._fn is not None:
            item = self._fn(request)
        else:
            assert not callable(self._script)
            if number > len(self._script):
                last = request.messages[-1] if request.messages else None
                raise UsageError(
                    f"ScriptedLLM script ran out: request #{number} arrived but the script "
                    f"has {len(self._script)} turn(s); the request ended with a "
                    f"{last.role if last else 'missing'} message {(last.content if last else '')[:80]!r}. "
                    "Add a turn for it (a retry or an extra iteration takes one too)."
                )
            item = self._script[number - 1]
        if type(item) is str:  # the common entries, without a call
            return number, Turn(text=item)
        if type(item) is ToolCall:
            return number, Turn(tool_calls=(item,))
        return number, _as_turn(item, number)

    async def _before(self, number: int, turn: Turn, *, streaming: bool) -> None:
        latency = self.latency if turn.latency is None else turn.latency
        if latency > 0:  # the model's latency; with none, answer at once (no loop cycle)
            await anyio.sleep(latency)
        fault = turn.fault
        if fault is None or (fault.kind == "malformed" and streaming):
            return
        where = f"ScriptedLLM request #{number}"
        if fault.kind == "timeout":
            raise TimeoutError(f"{where}: scripted timeout")
        if fault.kind == "hang":
            await anyio.sleep_forever()
        if fault.kind == "rate_limited":
            raise ProviderError(
                ErrorEnvelope.make(
                    RATE_LIMITED,
                    f"{where}: HTTP 429 Too Many Requests (scripted)",
                    {"status": 429, "retry_after": fault.retry_after},
                ),
                retry_after=fault.retry_after,
            )
        if fault.kind == "transient":
            status = fault.status or 503
            raise ProviderError(
                ErrorEnvelope.make(
                    TRANSIENT, f"{where}: HTTP {status} (scripted)", {"status": status}
                )
            )
        if fault.kind == "auth":
            raise ProviderError(
                ErrorEnvelope.make(
                    AUTH, f"{where}: HTTP 401 Unauthorized (scripted)", {"status": 401}
                )
            )
        raise ProviderError(
            ErrorEnvelope.make(
                PROVIDER_ERROR,
                f"{where}: malformed model output (scripted): tool-call arguments are not JSON",
            )
        )

    def _response(self, number: int, turn: Turn, request: LLMRequest) -> LLMResponse:
        calls = turn.tool_calls
        if calls:
            if len(calls) == 1:  # one call: no generator
                call = calls[0]
                if not call.id:
                    calls = (ToolCall(id=f"call_{number}_0", name=call.name, input=call.input),)
            else:
                calls = tuple(
                    call
                    if call.id
                    else ToolCall(id=f"call_{number}_{i}", name=call.name, input=call.input)
                    for i, call in enumerate(calls)
                )
        usage = turn.usage
        if usage is None:
            messages = request.messages
            usage = Usage(
                input_tokens=sum(map(len, map(_content, messages))) // 4 + len(messages),
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


def _as_turn(item: Any, number: int) -> Turn:
    if isinstance(item, Turn):
        return item
    if isinstance(item, str):
        return Turn(text=item)
    if isinstance(item, ToolCall):
        return Turn(tool_calls=(item,))
    if isinstance(item, Sequence) and all(isinstance(c, ToolCall) for c in item):
        return Turn(tool_calls=tuple(item))
    raise UsageError(
        f"ScriptedLLM entry for request #{number} is a {type(item).__name__}; use text, "
        "ScriptedLLM.tool_call(...), a list of tool calls, or a Turn(...)"
    )
