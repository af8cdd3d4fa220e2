"""Requests-per-minute and tokens-per-minute limits per provider or model: :class:`RateLimit`.

``Runtime(rate_limits={"openai": RateLimit(requests_per_minute=500),
"anthropic:claude-sonnet-4-5": RateLimit(tokens_per_minute=80_000)})``: every run on the
Runtime shares one bucket per key (a model's key, ``provider:model``, wins over its
provider's). The limit wraps the providers of each run's model (``ModelSource.wrapped``)
and waits with ``anyio.sleep``, so it works on asyncio and trio, counts against the call's
deadline (a wait that would pass it fails the call at once: nothing hangs on the limiter)
and shows as a ``ptcflow.rate_limit.wait`` event on the call's span.

Tokens are reserved before a call from an estimate of its prompt (4 characters a token),
then corrected by the usage the provider reports.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import anyio
import msgspec
from opentelemetry import trace

from ptcflow.errors import ConfigError
from ptcflow.providers import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import (
    RATE_LIMITED,
    EmbedResponse,
    Err,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    Usage,
)

__all__ = ("RateLimit", "RateLimitedLLM", "RateLimiter", "Reservation")

RATE_LIMIT_TOO_LOW: Final = "rate_limit_too_low"
_NO_KEY: Final[Any] = object()


class RateLimit(msgspec.Struct, frozen=True, kw_only=True, repr_omit_defaults=True):
    """How many requests and tokens a provider or model may take per minute.

    Args:
        requests_per_minute: model calls per minute (``None``: not limited).
        tokens_per_minute: input plus output tokens per minute (``None``: not limited).

    Raises:
        ConfigError: a limit that is not an int >= 1, or neither given.

    Example:
        >>> RateLimit(requests_per_minute=60)
        RateLimit(requests_per_minute=60)
    """

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ConfigError(f"RateLimit.{field} must be an int >= 1 or None, got {value!r}")
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ConfigError("RateLimit needs requests_per_minute=, tokens_per_minute= or both")


class Reservation:
    """The buckets of one limit key of a :class:`RateLimiter` (requests and tokens, each
    refilled continuously: ``per_minute`` a minute, at most that many), updated together:
    a call takes from both in one :meth:`take`. :meth:`RateLimiter.plan` resolves a
    provider and model to it once; a model call then takes (:meth:`take`), waits when it
    must (:meth:`hold`) and corrects the tokens with the usage (:meth:`settle`).

    Levels may go below zero (later callers wait longer, in order); floats only, so no
    int/float comparisons. The bucket of a limit not set is never touched.

    Attributes:
        key: the limit's key.
    """

    __slots__ = (
        "clock",
        "key",
        "limiter",
        "requests_level",
        "requests_per_minute",
        "requests_rate",
        "t",
        "tokens_level",
        "tokens_per_minute",
        "tokens_rate",
    )

    def __init__(self, limiter: RateLimiter, key: str, limit: RateLimit, now: float) -> None:
        self.limiter = limiter
        self.clock = limiter._clock
        self.key = key
        self.t = now
        requests = limit.requests_per_minute
        tokens = limit.tokens_per_minute
        self.requests_per_minute = self.requests_level = float(requests or 0)
        self.requests_rate = (requests or 0) / 60.0
        self.tokens_per_minute = self.tokens_level = float(tokens or 0)
        self.tokens_rate = (tokens or 0) / 60.0

    def give(self, tokens: float) -> None:
        """Correct a token reservation by ``tokens`` (negative: more was used)."""
        if self.tokens_rate:
            level = self.tokens_level + tokens
            top = self.tokens_per_minute
            self.tokens_level = top if level > top else level

    def undo(self, tokens: float) -> None:
        """Give back a whole reservation (one request and ``tokens``): its call was not sent."""
        self.give(tokens)
        if self.requests_rate:
            level = self.requests_level + 1.0
            top = self.requests_per_minute
            self.requests_level = top if level > top else level

    def __repr__(self) -> str:
        return f"<Reservation {self.key!r}>"

    def take(self, request: LLMRequest | None, tokens: int = 0) -> tuple[int, float] | Err:
        """Reserve one request and tokens (``request``'s estimate, :func:`estimate_tokens`,
        or ``tokens`` without one; none when the key limits no tokens), refilling both
        buckets first: ``(tokens reserved, seconds to wait)`` (the longer of the two waits;
        then :meth:`hold` when it is not zero), or the ``rate_limit_too_low`` error of a
        request no minute could carry."""
        rate = self.tokens_rate
        if rate:
            if request is not None:
                chars = 0  # estimate_tokens, in this frame
                for m in request.messages:
                    chars += len(m.content)
                tokens = chars // 4 + 1
            if tokens > self.tokens_per_minute:
                return _too_low(self.key, tokens, int(self.tokens_per_minute))
        else:
            tokens = 0
        now = self.clock()
        elapsed = now - self.t
        self.t = now
        wait = 0.0
        if rate:
            level = self.tokens_level + elapsed * rate
            if level > self.tokens_per_minute:  # full: a minute's worth at most
                level = self.tokens_per_minute
            self.tokens_level = level = level - tokens
            if level < 0.0:
                wait = -level / rate
        rate = self.requests_rate
        if rate:
            level = self.requests_level + elapsed * rate
            if level > self.requests_per_minute:
                level = self.requests_per_minute
            self.requests_level = level = level - 1.0
            if level < 0.0 and -level / rate > wait:
                wait = -level / rate
        return tokens, wait

    async def hold(self, wait: float, tokens: int) -> None:
        """Wait ``wait`` seconds for a reservation of :meth:`take` (see
        :meth:`RateLimiter.hold`)."""
        await self.limiter.hold(self.key, wait, self, tokens)

    def settle(self, reserved: int, usage: Usage) -> None:
        """Correct the tokens reserved with those the response used (:meth:`give`, in
        this frame)."""
        if self.tokens_rate:
            level = self.tokens_level + (reserved - usage.input_tokens - usage.output_tokens)
            top = self.tokens_per_minute
            self.tokens_level = top if level > top else level


class RateLimiter:
    """The buckets of a Runtime's :class:`RateLimit` s (see the module docstring).

    Args:
        limits: ``{provider or "provider:model": RateLimit}``.
        clock: seconds, for the buckets' refill (default: ``time.monotonic``; the
            deadline check uses the event loop's clock).
        sleep: waits (default: ``anyio.sleep``).

    Raises:
        ConfigError: a key that is not a non-empty string, or a value not a RateLimit.
    """

    def __init__(
        self,
        limits: Mapping[str, RateLimit],
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        for key, value in limits.items():
            if not isinstance(key, str) or not key:
                raise ConfigError(f"rate_limits keys are provider or model names, got {key!r}")
            if not isinstance(value, RateLimit):
                raise ConfigError(
                    f"rate_limits[{key!r}] must be a RateLimit(...), got {type(value).__name__}"
                )
        self.limits = dict(limits)
        self._clock = clock or time.monotonic
        self._sleep = sleep or anyio.sleep
        self._windows: dict[str, Reservation] = {}
        self._wrappers: dict[int, RateLimitedLLM] = {}
        self._keys: dict[tuple[int, str], str | None] = {}
        self._plans: dict[int, dict[str, Reservation | None]] = {}
        self._memo: tuple[Any, str, Reservation | None] = (_NO_KEY, "", None)

    def __repr__(self) -> str:
        return f"RateLimiter({self.limits!r})"

    def wrap(self, provider: Any) -> Any:
        """``provider`` under these limits (once: a provider already under them is kept;
        the wrapper of a provider is made once and reused by every run)."""
        found = self._wrappers.get(id(provider))
        if found is not None and found.inner is provider:
            return found
        inner = provider
        while inner is not None:
            if isinstance(inner, RateLimitedLLM) and inner.limiter is self:
                return provider
            inner = getattr(inner, "inner", None)
        wrapper = RateLimitedLLM(provider, self)
        if len(self._wrappers) < 1024:  # bounded: a Runtime's providers are few
            self._wrappers[id(provider)] = wrapper
        return wrapper

    def key_of(self, provider: Any, model: str) -> str | None:
        """The limit that applies to ``model`` of ``provider`` (``None``: none)."""
        cache_key = (id(provider), model)
        found: Any = self._keys.get(cache_key, _NO_KEY)
        if found is not _NO_KEY:
            return None if found is None else str(found)
        name = str(getattr(provider, "name", "") or type(provider).__name__)
        key = next((k for k in (f"{name}:{model}", model, name) if k in self.limits), None)
        if len(self._keys) < 4096:
            self._keys[cache_key] = key
        return key

    def plan(self, provider: Any, model: str) -> Reservation | None:
        """The buckets a call of ``model`` on ``provider`` takes from (``None``: no limit
        applies, or ``provider`` is under these limits already). Made once per provider
        and model, so a call costs two bucket updates and no lookups of keys."""
        memo = self._memo  # the last plan found (a Runtime has few models)
        if memo[0] is provider and memo[1] == model:
            return memo[2]
        plans = self._plans.get(id(provider))  # by provider, then model: no key tuple
        if plans is not None:
            found: Any = plans.get(model, _NO_KEY)
            if found is not _NO_KEY:
                self._memo = (provider, model, found)
                return found  # type: ignore[no-any-return]
        inner = provider
        while inner is not None:  # a provider wrapped by these limits already
            if isinstance(inner, RateLimitedLLM) and inner.limiter is self:
                break
            inner = getattr(inner, "inner", None)
        key = None if inner is not None else self.key_of(provider, model)
        plan = None if key is None else self._window(key)
        if plans is None and len(self._plans) < 1024:
            plans = self._plans[id(provider)] = {}
        if plans is not None and len(plans) < 1024:
            plans[model] = plan
        self._memo = (provider, model, plan)
        return plan

    def _window(self, key: str) -> Reservation:
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = Reservation(self, key, self.limits[key], self._clock())
        return window

    async def acquire(self, key: str, tokens: int) -> tuple[Reservation, int]:
        """Wait for one request and ``tokens`` under ``key``'s limit; the key's buckets
        and the tokens reserved (to correct with the real usage: ``Reservation.give``).

        Raises:
            ProviderError: see :meth:`take`.
        """
        window, wait = self.take(key, tokens)
        if wait > 0:
            await self.hold(key, wait, window, tokens)
        return window, tokens

    def take(self, key: str, tokens: int) -> tuple[Reservation, float]:
        """Reserve one request and ``tokens`` under ``key``'s limit, without waiting: the
        key's buckets and the seconds to wait (:meth:`hold`) before sending.

        Raises:
            ProviderError: ``rate_limit_too_low`` (one request needs more tokens than a
                minute allows).
        """
        window = self._window(key)
        taken = window.take(None, tokens)
        if isinstance(taken, Err):
            raise ProviderError(taken.error)
        return window, taken[1]

    async def hold(self, key: str, wait: float, window: Reservation, tokens: int) -> None:
        """Wait ``wait`` seconds for a reservation of :meth:`take` (given back when the
        wait is cancelled or would pass the deadline).

        Raises:
            ProviderError: ``rate_limited`` when the wait would pass the deadline.
        """
        if wait > 0:
            deadline = anyio.current_effective_deadline()
            if anyio.current_time() + wait > deadline:
                window.undo(tokens)
                raise ProviderError(
                    ErrorEnvelope.make(
                        RATE_LIMITED,
                        f"the rate limit of {key!r} would hold this call {wait:.2f}s, past "
                        "its deadline",
                        {"key": key, "wait_s": round(wait, 3)},
                        retryable=False,
                    )
                )
            span = trace.get_current_span()
            if span.is_recording():
                span.add_event("ptcflow.rate_limit.wait", {"key": key, "wait_s": wait})
            try:
                await self._sleep(wait)
            except BaseException:
                window.undo(tokens)
                raise


def _too_low(key: str, tokens: int, per_minute: int) -> Err:
    return Err(
        error=ErrorEnvelope.make(
            RATE_LIMIT_TOO_LOW,
            f"this request needs about {tokens} tokens but the rate limit of "
            f"{key!r} allows {per_minute} tokens per minute: it could "
            "never be sent. Raise RateLimit(tokens_per_minute=...) or send less",
            {"key": key, "tokens": tokens, "tokens_per_minute": per_minute},
            retryable=False,
        )
    )


def estimate_tokens(request: LLMRequest) -> int:
    """About how many input tokens ``request`` sends (4 characters a token)."""
    chars = 0  # a loop: faster than map() over an attrgetter on these Structs
    for m in request.messages:
        chars += len(m.content)
    return chars // 4 + 1


class RateLimitedLLM:
    """A provider whose calls wait for a :class:`RateLimiter` (see the module docstring)."""

    def __init__(self, inner: Any, limiter: RateLimiter) -> None:
        self.inner = inner
        self.limiter = limiter
        self.name = getattr(inner, "name", "llm")
        self.model = getattr(inner, "model", None)

    def __repr__(self) -> str:
        return f"RateLimitedLLM({self.inner!r})"

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Wait for the limit, then generate; the reservation is corrected by the usage."""
        key = self.limiter.key_of(self.inner, request.model)
        if key is None:
            response: LLMResponse = await self.inner.generate(request)
            return response
        limiter = self.limiter
        tokens = 0 if limiter.limits[key].tokens_per_minute is None else estimate_tokens(request)
        window, wait = limiter.take(key, tokens)
        if wait > 0:
            await limiter.hold(key, wait, window, tokens)
        response = await self.inner.generate(request)
        window.settle(tokens, response.usage)
        return response

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Wait for the limit, then stream."""
        key = self.limiter.key_of(self.inner, request.model)
        window, reserved = (None, 0)
        if key is not None:
            window, reserved = await self.limiter.acquire(key, estimate_tokens(request))
        used = 0
        async for chunk in self.inner.stream(request):
            if chunk.usage is not None:
                used = chunk.usage.total_tokens
            yield chunk
        if window is not None and used:
            window.give(reserved - used)

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Embed (not limited)."""
        result: EmbedResponse = await self.inner.embed(request)
        return result
