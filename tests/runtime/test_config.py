"""RetryPolicy, Limits, UNSET and the pure backoff function."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ptcflow.errors import ConfigError
from ptcflow.runtime import UNSET, Limits, RetryPolicy, backoff_delay


def test_unset_is_falsy_and_reads_well() -> None:
    assert not UNSET
    assert repr(UNSET) == "UNSET"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_backoff_ms": -1}, "max_backoff_ms must be >= 0"),
        ({"multiplier": 0.5}, "multiplier must be >= 1"),
        ({"jitter": "half"}, "jitter must be 'full' or 'none'"),
        ({"attempt_timeout_ms": 0}, "attempt_timeout_ms must be > 0"),
        ({"max_retry_after_ms": "x"}, "must be a number"),
    ],
)
def test_retry_policy_rejects_bad_values(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_directives": 0}, "max_directives must be > 0"),
        ({"per_tool": -3}, "per_tool must be > 0"),
        ({"sync_tool_threads": 0}, "sync_tool_threads must be > 0"),
        ({"tool_limits": {"search": 0}}, r"tool_limits\['search'\] must be > 0"),
        ({"provider_limits": {"openai": "many"}}, "maps names to positive ints"),
        ({"mission_timeout_ms": True}, "must be a number"),
    ],
)
def test_limits_reject_bad_values(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        Limits(**kwargs)  # type: ignore[arg-type]


def test_limits_lookup_overrides_default() -> None:
    limits = Limits(per_provider=4, provider_limits={"openai": 1}, per_tool=None)
    assert limits.limit_for_provider("openai") == 1
    assert limits.limit_for_provider("anthropic") == 4
    assert limits.limit_for_tool("search") is None


def test_config_objects_are_frozen_values_with_readable_repr() -> None:
    assert RetryPolicy(max_backoff_ms=5) == RetryPolicy(max_backoff_ms=5)
    assert "max_backoff_ms=5" in repr(RetryPolicy(max_backoff_ms=5))
    with pytest.raises(AttributeError):
        RetryPolicy().max_backoff_ms = 3  # type: ignore[misc]


def test_backoff_grows_exponentially_without_jitter() -> None:
    policy = RetryPolicy(jitter="none", max_backoff_ms=10_000)
    delays = [backoff_delay(n, 100, policy) for n in (1, 2, 3, 4)]
    assert delays == [0.1, 0.2, 0.4, 0.8]


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(jitter="none", max_backoff_ms=300)
    assert backoff_delay(10, 100, policy) == 0.3


def test_full_jitter_scales_the_ceiling_by_the_random_draw() -> None:
    policy = RetryPolicy(max_backoff_ms=10_000)
    assert backoff_delay(2, 100, policy, rand=lambda: 0.0) == 0.0
    assert backoff_delay(2, 100, policy, rand=lambda: 0.25) == 0.05


def test_retry_after_is_honoured_up_to_its_cap() -> None:
    policy = RetryPolicy(max_retry_after_ms=2_000)
    assert backoff_delay(1, 100, policy, retry_after_s=1.5, rand=lambda: 0.0) == 1.5
    assert backoff_delay(1, 100, policy, retry_after_s=60, rand=lambda: 0.0) == 2.0
    off = RetryPolicy(honor_retry_after=False)
    assert backoff_delay(1, 100, off, retry_after_s=1.5, rand=lambda: 0.0) == 0.0


@given(
    retry=st.integers(min_value=1, max_value=60),
    base=st.integers(min_value=0, max_value=5_000),
    cap=st.integers(min_value=0, max_value=60_000),
    draw=st.floats(min_value=0.0, max_value=0.999999),
)
def test_jittered_delay_stays_within_zero_and_the_cap(
    retry: int, base: int, cap: int, draw: float
) -> None:
    policy = RetryPolicy(max_backoff_ms=cap)
    delay = backoff_delay(retry, base, policy, rand=lambda: draw)
    assert 0.0 <= delay <= cap / 1000.0
    assert delay <= base * 2.0 ** (retry - 1) / 1000.0 + 1e-12
