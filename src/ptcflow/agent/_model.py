"""The SubAgent's LLM: a provider, a model resolver, a model name, or a plain function;
and its retry options.

The four shapes are told apart here only (:func:`model_kind` names one,
:func:`model_source` turns one into the run's :class:`~ptcflow.providers.ModelSource`);
downstream, the runtime holds a source. A plain function is adapted to the
:class:`~ptcflow.runtime.LLMProvider` protocol (:class:`CallbackLLM`), so a run that uses it
keeps every runtime guarantee (retries, deadlines, ``ai.llm.*`` signals, spans).
:class:`LLMRetry` maps the spec's ``llm_retry`` onto the executor's retries; its
``retryable_errors`` filter wraps the source's providers (:class:`RetryFilter`) so that the
other error types are not retried.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Final, Literal

import anyio
import msgspec

from ptcflow.errors import ConfigError, UsageError
from ptcflow.providers import (
    EmbedRequest,
    LLMProvider,
    LLMRequest,
    ModelResolver,
    ModelSource,
    ProviderError,
)
from ptcflow.signals import (
    RETRYABLE_TYPES,
    EmbedResponse,
    Err,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    Usage,
)

__all__ = ("CallbackLLM", "LLMRetry", "RetryFilter", "model_kind", "model_source")

_ALIASES: Final = {"rate_limit": "rate_limited", "timeouts": "timeout", "server_error": "transient"}


class LLMRetry(msgspec.Struct, frozen=True, kw_only=True):
    """How model calls are retried (the spec's ``llm_retry``).

    Only failures of the model call consume these retries; a program that fails, or a
    return that does not match, consumes a turn instead (DD-4).

    Args:
        max_attempts: attempts per model call, the first included (``max_retries =
            max_attempts - 1`` on each model directive).
        backoff: ``"exponential"`` (the default) or ``"linear"``. Linear applies when the
            agent runs in its own Runtime; on a Runtime you pass, its ``RetryPolicy``
            decides the curve.
        base_ms: the first delay (the directive's ``retry_backoff_ms``; full jitter).
        retryable_errors: only these error types are retried (``rate_limited``,
            ``timeout``, ``transient``; the spec's ``rate_limit`` is accepted); ``None``
            retries every retryable type.

    Raises:
        ConfigError: a value is out of range or an error type is unknown.

    Example:
        >>> LLMRetry(max_attempts=3, retryable_errors=("rate_limit",)).retryable_errors
        ('rate_limited',)
    """

    max_attempts: int = 3
    backoff: Literal["exponential", "linear"] = "exponential"
    base_ms: int = 200
    retryable_errors: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigError(f"LLMRetry.max_attempts must be >= 1, got {self.max_attempts!r}")
        if self.backoff not in ("exponential", "linear"):
            raise ConfigError(
                f'LLMRetry.backoff must be "exponential" or "linear", got {self.backoff!r}'
            )
        if not isinstance(self.base_ms, int) or self.base_ms < 0:
            raise ConfigError(f"LLMRetry.base_ms must be >= 0, got {self.base_ms!r}")
        if self.retryable_errors is not None:
            names = tuple(_ALIASES.get(n.lstrip(":"), n.lstrip(":")) for n in self.retryable_errors)
            unknown = sorted(set(names) - RETRYABLE_TYPES)
            if unknown:
                raise ConfigError(
                    f"LLMRetry.retryable_errors has unknown types {unknown}; retryable types "
                    f"are {sorted(RETRYABLE_TYPES)}"
                )
            msgspec.structs.force_setattr(self, "retryable_errors", names)

    @classmethod
    def of(cls, value: LLMRetry | Mapping[str, Any] | None) -> LLMRetry:
        """An :class:`LLMRetry` from itself, a mapping of its fields, or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, LLMRetry):
            return value
        if isinstance(value, Mapping):
            fields = {k.lstrip(":"): v for k, v in value.items()}
            if isinstance(fields.get("backoff"), str):
                fields["backoff"] = fields["backoff"].lstrip(":")
            if fields.get("retryable_errors") is not None:
                fields["retryable_errors"] = tuple(fields["retryable_errors"])
            unknown = sorted(set(fields) - set(cls.__struct_fields__))
            if unknown:
                raise ConfigError(
                    f"llm_retry has unknown keys {unknown}; use {list(cls.__struct_fields__)}"
                )
            return cls(**fields)
        raise ConfigError(f"llm_retry must be an LLMRetry or a mapping, got {type(value).__name__}")


class CallbackLLM:
    """A plain function as an :class:`~ptcflow.runtime.LLMProvider`.

    The function takes the spec's LLM-callback input, a dict with ``system`` (the system
    prompt), ``messages`` (``[{"role": "user" | "assistant" | "tool", "content": ...}]``),
    ``turn`` (1-based), ``prompt`` (the expanded task), ``tool_names``, ``llm_opts`` and
    ``response_schema`` (``None`` unless JSON mode), and returns the response text (or an
    :class:`~ptcflow.signals.LLMResponse`, or ``{"content": text, "tokens": {"input": n,
    "output": m}}``). Async functions are awaited; plain functions run in a worker thread.
    To fail, raise (a :class:`~ptcflow.runtime.ProviderError` to say whether to retry) or
    return an ``Err``.

    Example:
        >>> def llm(inp):
        ...     return "```clojure\\n(return 42)\\n```"
        >>> CallbackLLM(llm).name
        'callback'
    """

    name = "callback"

    def __init__(
        self,
        fn: Callable[[dict[str, Any]], Any],
        *,
        prompt: str = "",
        tool_names: Sequence[str] = (),
        llm_opts: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(fn):
            raise UsageError(f"llm must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.prompt = prompt
        self.tool_names = list(tool_names)
        self.llm_opts = dict(llm_opts or {})
        self.model = getattr(fn, "__name__", "callback")

    def __repr__(self) -> str:
        return f"CallbackLLM({self.model})"

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Call the function with the spec's input; return its answer as a response."""
        system = next((m.content for m in request.messages if m.role == "system"), "")
        messages = [
            {"role": m.role, "content": m.content} for m in request.messages if m.role != "system"
        ]
        turn = 1 + sum(1 for m in request.messages if m.role == "assistant")
        data = {
            "system": system,
            "messages": messages,
            "turn": turn,
            "prompt": self.prompt,
            "tool_names": list(self.tool_names),
            "llm_opts": {**self.llm_opts, **request.options},
            "response_schema": request.response_schema,
        }
        if inspect.iscoroutinefunction(self.fn):
            out = await self.fn(data)
        else:
            out = await anyio.to_thread.run_sync(self.fn, data)
            if inspect.isawaitable(out):
                out = await out
        return _response(out, request.model)

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """One chunk with the whole answer (functions do not stream)."""
        response = await self.generate(request)
        yield LLMChunk(text=response.text, usage=response.usage, finish_reason="stop")

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Not supported: raises a non-retryable :class:`ProviderError`."""
        raise ProviderError(ErrorEnvelope.make("provider_error", "a function LLM cannot embed"))


def _response(out: Any, model: str) -> LLMResponse:
    if isinstance(out, LLMResponse):
        return out
    if isinstance(out, Err):
        raise ProviderError(out.error)
    if isinstance(out, str):
        return LLMResponse(text=out, model=model)
    if isinstance(out, Mapping) and isinstance(out.get("content"), str):
        tokens = out.get("tokens") or {}
        usage = Usage(
            input_tokens=int(tokens.get("input", 0)), output_tokens=int(tokens.get("output", 0))
        )
        return LLMResponse(text=out["content"], usage=usage, model=model)
    raise ProviderError(
        ErrorEnvelope.make(
            "provider_error",
            f"the llm function returned {type(out).__name__}; return the response text (or "
            '{"content": text, "tokens": {...}}, or an LLMResponse)',
        )
    )


def model_kind(llm: Any) -> Literal["name", "source", "function"] | None:
    """Which of an agent's four model choices ``llm`` is: a model name or alias
    (``"name"``), a provider or model resolver (``"source"``; a
    :class:`~ptcflow.providers.ModelSource` too), a function taking the LLM-callback input
    (``"function"``), or none of them (``None``; an agent is none).

    Example:
        >>> model_kind("haiku"), model_kind(lambda inp: "(return 1)"), model_kind(42)
        ('name', 'function', None)
    """
    if isinstance(llm, str):
        return "name"
    if hasattr(llm, "plan_run"):
        return None
    if isinstance(llm, ModelSource | LLMProvider | ModelResolver):
        return "source"
    return "function" if callable(llm) else None


def model_source(
    chosen: Any,
    *,
    prompt: Callable[[], str],
    tool_names: Sequence[str],
    llm_opts: Mapping[str, Any] | None,
) -> ModelSource | None:
    """The source of an agent's model choice ``chosen`` (``None`` for none or a model
    name: the Runtime's, which resolves the name the strategy sends). A function becomes a
    :class:`CallbackLLM` that sees ``prompt()``, ``tool_names`` and ``llm_opts``.

    Raises:
        UsageError: ``chosen`` is none of the four choices.
    """
    kind = model_kind(chosen)
    if kind == "source":
        return ModelSource.of(chosen)
    if chosen is None or kind == "name":
        return None
    # a function (CallbackLLM refuses anything else, saying so)
    callback = CallbackLLM(chosen, prompt=prompt(), tool_names=tool_names, llm_opts=llm_opts)
    return ModelSource.of(callback)


class RetryFilter:
    """Wraps a provider so that only some error types are retried (applied to a run's
    model with ``source.wrapped(RetryFilter.of(allowed))``, whatever the source's shape).

    A failure of another type is re-raised as not retryable; the executor then reports it
    at once instead of retrying.
    """

    @staticmethod
    def of(allowed: Sequence[str]) -> Callable[[Any], RetryFilter]:
        """The wrapper of a provider that retries ``allowed`` error types only."""
        return lambda provider: RetryFilter(provider, allowed)

    def __init__(self, inner: Any, allowed: Sequence[str]) -> None:
        self.inner = inner
        self.allowed = frozenset(allowed)
        self.name = getattr(inner, "name", "llm")
        self.model = getattr(inner, "model", None)

    def __repr__(self) -> str:
        return f"RetryFilter({self.inner!r}, {sorted(self.allowed)})"

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Generate through the wrapped provider, filtering retryable failures."""
        try:
            result: LLMResponse = await self.inner.generate(request)
        except ProviderError as exc:
            if self._passes(exc.envelope):
                raise
            raise self._blocked(exc.envelope) from exc
        except TimeoutError as exc:
            if "timeout" in self.allowed:
                raise
            raise self._blocked(ErrorEnvelope.make("timeout", str(exc) or "timed out")) from exc
        return result

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream through the wrapped provider (failures filtered as for generate)."""
        try:
            async for chunk in self.inner.stream(request):
                yield chunk
        except ProviderError as exc:
            if self._passes(exc.envelope):
                raise
            raise self._blocked(exc.envelope) from exc

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Embed through the wrapped provider."""
        result: EmbedResponse = await self.inner.embed(request)
        return result

    def _passes(self, envelope: ErrorEnvelope) -> bool:
        return not envelope.retryable or envelope.type in self.allowed

    @staticmethod
    def _blocked(envelope: ErrorEnvelope) -> ProviderError:
        return ProviderError(msgspec.structs.replace(envelope, retryable=False))
