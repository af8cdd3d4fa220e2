"""Model fallback: :class:`FallbackModel` tries an ordered list of models in turn.

``llm=FallbackModel(primary, secondary)`` is a provider like any other (it goes wherever
``llm=`` goes: ``Runtime``, ``rt.run``, ``SubAgent``): a call goes to the first model
whose circuit is closed; a failure of a kind listed in ``on`` moves to the next model at
once; any other failure is the call's. When every model failed, the last failure is the
call's, and the executor's retries (``RetryPolicy``) retry the whole list.

Each attempt is reported to the observer the runtime installs for the call (a span and an
``ai.llm.fallback`` signal per model that failed); a model that failed ``failures`` times
in a row is skipped for ``cooldown_s`` seconds (a circuit breaker), unless every model is
skipped, when all are tried again.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Final

import msgspec

from ptcflow.errors import ConfigError
from ptcflow.providers._protocol import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import (
    PROVIDER_ERROR,
    RATE_LIMITED,
    TIMEOUT,
    TRANSIENT,
    EmbedResponse,
    LLMChunk,
    LLMResponse,
)

__all__ = (
    "DEFAULT_FALLBACK_ON",
    "FALLBACK_OBSERVER",
    "LLM_FALLBACK",
    "FallbackModel",
    "error_type",
)

LLM_FALLBACK: Final = "ai.llm.fallback"
"""The signal of one attempt of a :class:`FallbackModel` (``data``: ``model``,
``outcome`` ``"failed"`` / ``"skipped"`` / ``"ok"`` (a later model answered),
``error_type``, ``message``)."""

DEFAULT_FALLBACK_ON: Final = (RATE_LIMITED, TRANSIENT, TIMEOUT)
"""The error types that move a call to the next model by default."""

Observer = Callable[[str, str, "BaseException | None"], None]
"""``(model, outcome, error)``: ``outcome`` is ``"ok"``, ``"failed"`` or ``"skipped"``."""

FALLBACK_OBSERVER: contextvars.ContextVar[Observer | None] = contextvars.ContextVar(
    "ptcflow_fallback_observer", default=None
)
"""Set by the runtime around a model call: told of each attempt of a :class:`FallbackModel`."""


def error_type(exc: BaseException) -> str:
    """The error type of a provider failure (``rate_limited``, ``transient``, ...)."""
    if isinstance(exc, ProviderError):
        return str(exc.envelope.type)
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    if isinstance(exc, ConnectionError):
        return TRANSIENT
    return PROVIDER_ERROR


class _Entry:
    """One model of a :class:`FallbackModel` and its circuit (``label``, ``streak``)."""

    __slots__ = ("given", "label", "open_until", "provider", "streak")

    def __init__(self, given: Any) -> None:
        self.given = given
        self.provider: Any = None if isinstance(given, str) else given
        self.label = given if isinstance(given, str) else _label(given)
        self.streak = 0
        self.open_until = float("-inf")


def _label(provider: Any) -> str:
    name = str(getattr(provider, "name", "") or type(provider).__name__)
    model = str(getattr(provider, "model", "") or "")
    return f"{name}:{model}" if model else name


class FallbackModel:
    """Models tried in turn: the next one on a failure of a kind in ``on``.

    Args:
        models: two or more providers or model names (``"openai:gpt-4.1-mini"``,
            resolved with ``registry``), in the order to try them.
        on: the error types that move to the next model (default: ``rate_limited``,
            ``transient``, ``timeout``); others fail the call at once.
        failures: consecutive failures after which a model is skipped (default 3).
        cooldown_s: how long a failing model is skipped, in seconds (default 30).
        clock: the clock of the breaker (default: ``anyio.current_time``).
        registry: resolves model names (default: ``ModelRegistry.from_config()``, built
            at the first call that needs it).

    Raises:
        ConfigError: fewer than two models, an empty ``on``, or a bad breaker setting.

    Example:
        >>> from ptcflow.testing import ScriptedLLM
        >>> FallbackModel(ScriptedLLM(["a"]), ScriptedLLM(["b"])).models
        ('scripted:scripted', 'scripted:scripted')
        >>> FallbackModel(ScriptedLLM(["a"]))
        Traceback (most recent call last):
        ...
        ptcflow.errors.ConfigError: FallbackModel needs two or more models to fall back between, got 1; use the model itself as llm=
    """

    name = "fallback"

    def __init__(
        self,
        *models: Any,
        on: Iterable[str] = DEFAULT_FALLBACK_ON,
        failures: int = 3,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] | None = None,
        registry: Any = None,
    ) -> None:
        if len(models) < 2:
            raise ConfigError(
                f"FallbackModel needs two or more models to fall back between, got "
                f"{len(models)}; use the model itself as llm="
            )
        for m in models:
            if m is None or (isinstance(m, str) and not m.strip()):
                raise ConfigError(f"FallbackModel: {m!r} is not a model (a provider or a name)")
        self.on = frozenset(on)
        if not self.on or not all(isinstance(t, str) for t in self.on):
            raise ConfigError("FallbackModel(on=...) takes one or more error type names")
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ConfigError(f"FallbackModel(failures=...) must be an int >= 1, got {failures!r}")
        if not isinstance(cooldown_s, int | float) or cooldown_s < 0:
            raise ConfigError(f"FallbackModel(cooldown_s=...) must be >= 0, got {cooldown_s!r}")
        self._entries = tuple(_Entry(m) for m in models)
        self.entries = self._entries
        """The models (each with its ``label`` and circuit), in order."""
        self._opened = False
        self.primary: Any = self._entries[0].provider
        """The first model's provider while no circuit was ever opened (``None`` once one
        was, or when the first model is a name to resolve): a call of a named model then
        goes to it as it is (what :meth:`first` says, without working it out)."""
        self.failures = failures
        self.cooldown_s = float(cooldown_s)
        self._clock = clock
        self._registry = registry
        first = models[0]
        self.model = (
            first.split(":", 1)[-1] if isinstance(first, str) else getattr(first, "model", "")
        )

    def __repr__(self) -> str:
        return f"FallbackModel({', '.join(self.models)})"

    @property
    def models(self) -> tuple[str, ...]:
        """The models, in order (``provider:model`` or the name given)."""
        return tuple(e.label for e in self._entries)

    def _now(self) -> float:
        if self._clock is not None:
            return self._clock()
        import anyio

        return anyio.current_time()

    def route(self, entry: _Entry, request_model: str) -> tuple[Any, str]:
        """The provider of ``entry`` (one of :meth:`order`) and the model name to send it
        for a request of ``request_model``."""
        if entry.provider is None:  # a name: through the registry
            registry = self._registry
            if registry is None:
                from ptcflow.providers._registry import ModelRegistry

                registry = self._registry = ModelRegistry.from_config()
            resolved: tuple[Any, str] = registry.resolve(entry.given, None)
            return resolved
        if request_model and entry is self._entries[0]:
            return entry.provider, request_model
        own = str(getattr(entry.provider, "model", "") or "")
        return entry.provider, own or request_model

    def order(self) -> tuple[_Entry, ...]:
        """The models to try, in order: those whose circuit is closed (all of them when
        every circuit is open). Each has a ``label`` (``provider:model``)."""
        if not self._opened:  # no circuit was ever opened: no clock needed
            return self._entries
        now = self._now()
        closed = tuple(e for e in self._entries if e.open_until <= now)
        return closed or self._entries

    def first(self, request_model: str) -> tuple[tuple[_Entry, ...], Any, str, list[str]]:
        """Where a call of ``request_model`` goes first: the models to try (:meth:`order`),
        the first one's provider and model name (:meth:`route`), and the labels of the
        models skipped (their circuit is open)."""
        order = self._entries if not self._opened else self.order()
        entry = order[0]
        if entry.provider is not None and request_model and entry is self._entries[0]:
            provider, model = entry.provider, request_model  # the usual case: no lookups
        else:
            provider, model = self.route(entry, request_model)
        skipped = [] if order is self._entries else self.skipped(order)
        return order, provider, model, skipped

    def skipped(self, order: tuple[_Entry, ...]) -> list[str]:
        """The labels of the models :meth:`order` left out (their circuit is open)."""
        if len(order) == len(self._entries):
            return []
        return [e.label for e in self._entries if e not in order]

    def failed(self, entry: _Entry, exc: BaseException) -> bool:
        """``entry`` failed with ``exc`` (counted by its circuit breaker); whether the
        call goes on to the next model (the error's type is in ``on``)."""
        entry.streak += 1
        if entry.streak >= self.failures:
            entry.open_until = self._now() + self.cooldown_s
            entry.streak = 0
            self._opened = True
            self.primary = None
        return error_type(exc) in self.on

    @staticmethod
    def answered(entry: _Entry) -> None:
        """``entry`` answered: its run of failures is over."""
        entry.streak = 0

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Generate with the first model that answers (see the class)."""
        observe = FALLBACK_OBSERVER.get()
        order = self.order()
        if observe is not None:
            for label in self.skipped(order):
                observe(label, "skipped", None)
        last: BaseException | None = None
        for entry in order:
            provider, model = self.route(entry, request.model)
            sent = (
                request if model == request.model else msgspec.structs.replace(request, model=model)
            )
            try:
                response: LLMResponse = await provider.generate(sent)
            except Exception as exc:
                go_on = self.failed(entry, exc)
                if observe is not None:
                    observe(entry.label, "failed", exc)
                if not go_on:
                    raise
                last = exc
                continue
            entry.streak = 0
            if observe is not None and last is not None:
                observe(entry.label, "ok", None)
            return response
        assert last is not None
        raise last

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream from the first model that starts answering (no fallback once a chunk
        was yielded: the caller has seen it)."""
        observe = FALLBACK_OBSERVER.get()
        last: BaseException | None = None
        for entry in self.order():
            provider, model = self.route(entry, request.model)
            started = False
            try:
                async for chunk in provider.stream(msgspec.structs.replace(request, model=model)):
                    started = True
                    yield chunk
            except Exception as exc:
                go_on = self.failed(entry, exc)
                if observe is not None:
                    observe(entry.label, "failed", exc)
                if started or not go_on:
                    raise
                last = exc
                continue
            entry.streak = 0
            return
        assert last is not None
        raise last

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Embed with the first model (no fallback)."""
        provider, model = self.route(self._entries[0], request.model)
        result: EmbedResponse = await provider.embed(msgspec.structs.replace(request, model=model))
        return result
