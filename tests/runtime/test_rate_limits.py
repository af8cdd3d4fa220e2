"""Rate limits: requests and tokens per minute per provider or model, shared by every run
on a Runtime, waiting on the running backend, bounded by deadlines."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ptcflow import RateLimit
from ptcflow.errors import ConfigError
from ptcflow.runtime import RateLimiter, Runtime
from ptcflow.signals import Usage
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, Turn

pytestmark = pytest.mark.anyio


class FakeTime:
    """A clock that ``sleep`` moves forward (no real waiting)."""

    def __init__(self, advance: bool = True) -> None:
        self.now = 0.0
        self.advance = advance
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        if self.advance:
            self.now += seconds
        await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs requests_per_minute=, tokens_per_minute= or both"),
        ({"requests_per_minute": 0}, "requests_per_minute must be an int >= 1"),
        ({"tokens_per_minute": 1.5}, "tokens_per_minute must be an int >= 1"),
    ],
)
def test_bad_limits_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RateLimit(**options)


def test_rate_limits_need_rate_limit_values() -> None:
    with pytest.raises(ConfigError, match=r"rate_limits\['x'\] must be a RateLimit"):
        RateLimiter({"x": 5})  # type: ignore[dict-item]


def _limiter(time: FakeTime, **limits: RateLimit) -> RateLimiter:
    return RateLimiter(limits, clock=time.clock, sleep=time.sleep)


async def test_requests_past_the_rate_wait_their_turn_across_runs() -> None:
    time = FakeTime()
    llm = ScriptedLLM(lambda r: "ok")
    limiter = _limiter(time, scripted=RateLimit(requests_per_minute=2))
    async with Runtime(llm=llm, rate_limits=limiter) as rt:
        steps = [await rt.run(ReAct(), f"q{i}") for i in range(4)]
    assert all(s.ok for s in steps) and llm.calls == 4
    assert time.waits == [30.0, 30.0]  # 2 a minute: the third and fourth wait 30 s each


async def test_concurrent_runs_share_the_bucket() -> None:
    time = FakeTime(advance=False)  # all three ask at the same instant
    llm = ScriptedLLM(lambda r: "ok")
    limiter = _limiter(time, scripted=RateLimit(requests_per_minute=1))
    async with Runtime(llm=llm, rate_limits=limiter) as rt, anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(rt.run, ReAct(), f"q{i}")
    assert sorted(time.waits) == [60.0, 120.0]  # in order, one a minute


async def test_a_model_limit_wins_over_its_providers() -> None:
    time = FakeTime()
    llm = ScriptedLLM(lambda r: "ok", model="small")
    limiter = _limiter(
        time,
        scripted=RateLimit(requests_per_minute=1),
        **{"scripted:small": RateLimit(requests_per_minute=60)},
    )
    async with Runtime(llm=llm, rate_limits=limiter) as rt:
        for i in range(3):
            await rt.run(ReAct(), f"q{i}")
    assert time.waits == []


async def test_tokens_are_counted_from_the_reported_usage() -> None:
    time = FakeTime()
    turn = Turn(text="ok", usage=Usage(input_tokens=500, output_tokens=500))
    llm = ScriptedLLM([turn, turn])
    limiter = _limiter(time, scripted=RateLimit(tokens_per_minute=1000))
    async with Runtime(llm=llm, rate_limits=limiter) as rt:
        await rt.run(ReAct(), "q")
        await rt.run(ReAct(), "q")
    assert len(time.waits) == 1 and time.waits[0] > 0  # the first used the whole minute


async def test_a_limit_below_one_requests_tokens_is_a_clear_error() -> None:
    llm = ScriptedLLM(["never"])
    limiter = RateLimiter({"scripted": RateLimit(tokens_per_minute=2)})
    async with Runtime(llm=llm, rate_limits=limiter) as rt:
        step = await rt.run(ReAct(), "a question longer than eight characters")
    assert not step.ok and step.error is not None and step.error.type == "rate_limit_too_low"
    assert "allows 2 tokens per minute" in step.error.message and llm.calls == 0


async def test_a_wait_past_the_deadline_fails_at_once() -> None:
    llm = ScriptedLLM(lambda r: "ok")
    limiter = RateLimiter({"scripted": RateLimit(requests_per_minute=1)})
    async with Runtime(llm=llm, rate_limits=limiter) as rt:
        assert (await rt.run(ReAct(), "q")).ok
        with anyio.fail_after(10):
            step = await rt.run(ReAct(llm_max_retries=0), "q", timeout=5)
    assert not step.ok and step.error is not None and step.error.type == "rate_limited"
    assert "past its deadline" in step.error.message and llm.calls == 1


class _Other:
    """Another provider (only its name matters here)."""

    name = "other"


def test_each_model_takes_from_its_own_limit_whatever_the_order_of_calls() -> None:
    # plans are remembered per provider and model (the last one without a lookup): a
    # call alternating between models and providers still finds its own key's buckets
    limiter = RateLimiter(
        {
            "scripted:a": RateLimit(requests_per_minute=1),
            "scripted": RateLimit(requests_per_minute=2),
            "other": RateLimit(requests_per_minute=3),
        }
    )
    p, q = ScriptedLLM(["x"]), _Other()
    for _ in range(2):
        for provider, model, key in [
            (p, "a", "scripted:a"),
            (p, "b", "scripted"),
            (q, "a", "other"),
        ]:
            plan = limiter.plan(provider, model)
            assert plan is not None and plan.key == key
    assert limiter.plan(limiter.wrap(p), "a") is None  # already under these limits
