"""Configuration value objects of the runtime: :class:`RetryPolicy`, :class:`Limits`, ``UNSET``.

They are small frozen structs, validated when built (a bad value raises
:class:`~ptcflow.errors.ConfigError` naming the field and the fix) and passed explicitly to
:class:`~ptcflow.runtime.Runtime`; nothing is configured globally.

``None`` means "off" (no limit, no timeout); :data:`UNSET` means "not given, inherit the
default" (the same distinction as httpx's ``USE_CLIENT_DEFAULT``).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec

from ptcflow.errors import ConfigError

__all__ = ("UNSET", "Limits", "RetryPolicy", "Unset", "backoff_delay")


class Unset(enum.Enum):
    """The type of :data:`UNSET`: an argument that was not given (inherit the default)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset.UNSET
"""Marks an argument that was left out: inherit the default. ``None`` means "off"."""


def _positive(owner: str, name: str, value: float | None, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{owner}.{name} must be a number or None, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{owner}.{name} must be {bound} (or None to turn it off), got {value!r}")


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How the executor retries a retryable failure (timeout, rate_limited, transient).

    The number of retries and the base delay come from each directive (``max_retries``,
    ``retry_backoff_ms``); this policy caps and shapes them. The delay before retry ``n``
    (1-based) is ``random() * min(max_backoff_ms, base * multiplier ** (n - 1))`` ("full
    jitter"); when the provider sent ``Retry-After``, the delay is at least that long, up to
    ``max_retry_after_ms``. A delay that would not fit in the directive's remaining budget
    ends the retries instead.

    Args:
        max_backoff_ms: cap of the exponential delay.
        multiplier: growth factor between attempts.
        jitter: ``"full"`` (random in ``[0, delay]``) or ``"none"`` (deterministic).
        honor_retry_after: respect a provider's ``Retry-After``.
        max_retry_after_ms: the longest ``Retry-After`` honoured; longer asks are capped.
        attempt_timeout_ms: deadline of each single attempt (``None``: only the directive's
            deadline applies). An attempt that times out is retried like any timeout.
        max_retries_cap: upper bound on any directive's ``max_retries``.

    Example:
        >>> RetryPolicy(max_backoff_ms=2_000)
        RetryPolicy(max_backoff_ms=2000, multiplier=2.0, jitter='full', honor_retry_after=True, max_retry_after_ms=30000, attempt_timeout_ms=None, max_retries_cap=10)
    """

    max_backoff_ms: int = 10_000
    multiplier: float = 2.0
    jitter: Literal["full", "none"] = "full"
    honor_retry_after: bool = True
    max_retry_after_ms: int = 30_000
    attempt_timeout_ms: int | None = None
    max_retries_cap: int = 10

    def __post_init__(self) -> None:
        _positive("RetryPolicy", "max_backoff_ms", self.max_backoff_ms, allow_zero=True)
        _positive("RetryPolicy", "max_retry_after_ms", self.max_retry_after_ms, allow_zero=True)
        _positive("RetryPolicy", "attempt_timeout_ms", self.attempt_timeout_ms)
        _positive("RetryPolicy", "max_retries_cap", self.max_retries_cap, allow_zero=True)
        if not isinstance(self.multiplier, int | float) or self.multiplier < 1:
            raise ConfigError(f"RetryPolicy.multiplier must be >= 1, got {self.multiplier!r}")
        if self.jitter not in ("full", "none"):
            raise ConfigError(f"RetryPolicy.jitter must be 'full' or 'none', got {self.jitter!r}")


def backoff_delay(
    retry: int,
    base_ms: float,
    policy: RetryPolicy,
    *,
    retry_after_s: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """Return the delay in seconds before retry number ``retry`` (1 for the first retry).

    Pure apart from ``rand`` (inject a fixed function in tests).

    Args:
        retry: which retry this is, starting at 1.
        base_ms: the directive's ``retry_backoff_ms``.
        policy: the cap, multiplier, jitter and Retry-After rules.
        retry_after_s: the provider's ``Retry-After`` in seconds, if it sent one.
        rand: a function returning a float in ``[0, 1)``.

    Example:
        >>> backoff_delay(3, 100, RetryPolicy(), rand=lambda: 0.5)
        0.2
    """
    ceiling = min(float(policy.max_backoff_ms), base_ms * policy.multiplier ** max(0, retry - 1))
    delay_ms = ceiling * rand() if policy.jitter == "full" else ceiling
    if retry_after_s is not None and policy.honor_retry_after and retry_after_s > 0:
        delay_ms = max(delay_ms, min(retry_after_s * 1000.0, float(policy.max_retry_after_ms)))
    return delay_ms / 1000.0


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Concurrency limits and default deadlines of a :class:`~ptcflow.runtime.Runtime`.

    ``None`` turns a limit off. Limits are shared by every run of the Runtime.

    Args:
        max_directives: directives performed at once across all runs (``None``: no limit).
        per_provider: concurrent calls per LLM provider (by ``provider.name``).
        provider_limits: per-provider overrides, ``{"openai": 8}``.
        per_tool: concurrent calls of any one tool (by tool name).
        tool_limits: per-tool overrides, ``{"search": 2}``.
        sync_tool_threads: worker threads for synchronous tool functions.
        mission_timeout_ms: default deadline of a whole run (``None``: none).
        max_handoffs: how many times one request's conversation may be handed from agent
            to agent (``ptcflow.handoff``); the handoff past it fails the run with
            ``max_handoffs_exceeded`` (a cycle A → B → A … ends there).

    Example:
        >>> Limits(per_tool=4, tool_limits={"search": 1}).limit_for_tool("search")
        1
    """

    max_directives: int | None = None
    per_provider: int | None = None
    provider_limits: dict[str, int] = {}
    per_tool: int | None = None
    tool_limits: dict[str, int] = {}
    sync_tool_threads: int = 40
    mission_timeout_ms: int | None = None
    max_handoffs: int = 8

    def __post_init__(self) -> None:
        for name in ("max_directives", "per_provider", "per_tool", "mission_timeout_ms"):
            _positive("Limits", name, getattr(self, name))
        _positive("Limits", "sync_tool_threads", self.sync_tool_threads)
        _positive("Limits", "max_handoffs", self.max_handoffs, allow_zero=True)
        for field, table in (
            ("provider_limits", self.provider_limits),
            ("tool_limits", self.tool_limits),
        ):
            _check_table(field, table)

    def limit_for_provider(self, name: str) -> int | None:
        """Return the concurrency limit of the provider called ``name`` (``None``: no limit)."""
        return self.provider_limits.get(name, self.per_provider)

    def limit_for_tool(self, name: str) -> int | None:
        """Return the concurrency limit of the tool called ``name`` (``None``: no limit)."""
        return self.tool_limits.get(name, self.per_tool)


def _check_table(field: str, table: Mapping[str, Any]) -> None:
    if not isinstance(table, Mapping):
        raise ConfigError(f"Limits.{field} must be a mapping of name to int, got {table!r}")
    for key, value in table.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(
                f"Limits.{field} maps names to positive ints; {key!r}: {value!r} is not one"
            )
        if value <= 0:
            raise ConfigError(f"Limits.{field}[{key!r}] must be > 0, got {value}")
