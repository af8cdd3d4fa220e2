"""Model fallback: the next model on a listed failure, a circuit breaker on a clock, each
attempt a signal and a span; for ReAct, JSON and SubAgent runs alike."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow import FallbackModel, SubAgent
from ptcflow.errors import ConfigError
from ptcflow.providers import LLM_FALLBACK
from ptcflow.runtime import Runtime, Step
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .test_telemetry_genai import traced

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("models", [(), ("openai:gpt-4.1-mini",)])
def test_a_fallback_needs_two_models(models: tuple[Any, ...]) -> None:
    with pytest.raises(ConfigError, match=f"needs two or more models .* got {len(models)}"):
        FallbackModel(*models)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on": ()}, "takes one or more error type names"),
        ({"failures": 0}, "failures=...\\) must be an int >= 1"),
        ({"cooldown_s": -1}, "cooldown_s=...\\) must be >= 0"),
    ],
)
def test_bad_settings_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FallbackModel(ScriptedLLM(["a"]), ScriptedLLM(["b"]), **options)


async def _run(llm: Any, strategy: Any = None, **options: Any) -> Step:
    async with Runtime(llm=llm, **options) as rt:
        return await rt.run(strategy or ReAct(), "hi", record=True)


def _fallbacks(step: Step) -> list[tuple[str, str, str]]:
    return [
        (s.data["model"], s.data["outcome"], s.data["error_type"])
        for s in step.signals
        if s.type == LLM_FALLBACK
    ]


async def test_a_rate_limited_model_falls_back_to_the_next() -> None:
    first = ScriptedLLM([ScriptedLLM.rate_limited()], model="a")
    second = ScriptedLLM(["from b"], model="b")
    step = await _run(FallbackModel(first, second))
    assert step.ok and step.value == "from b", step.error
    assert (first.calls, second.calls) == (1, 1)
    assert second.requests[0].model == "b"
    assert _fallbacks(step) == [
        ("scripted:a", "failed", "rate_limited"),
        ("scripted:b", "ok", ""),
    ]


async def test_an_error_not_listed_is_the_calls_own() -> None:
    first = ScriptedLLM([ScriptedLLM.auth_error()], model="a")
    second = ScriptedLLM(["from b"], model="b")
    step = await _run(FallbackModel(first, second))
    assert not step.ok and step.error is not None and second.calls == 0
    assert FallbackModel(first, second, on=("auth",)).on == {"auth"}


async def test_a_model_that_keeps_failing_is_skipped_for_a_while() -> None:
    now = [0.0]
    first = ScriptedLLM(lambda r: ScriptedLLM.server_error(), model="a")
    second = ScriptedLLM(lambda r: "ok", model="b")
    llm = FallbackModel(first, second, failures=2, cooldown_s=10, clock=lambda: now[0])
    for _ in range(3):
        assert (await _run(llm)).ok
    assert (first.calls, second.calls) == (2, 3)  # the third call skipped the open circuit
    skipped = await _run(llm)
    assert ("scripted:a", "skipped", "") in _fallbacks(skipped)
    now[0] = 10.0
    assert (await _run(llm)).ok and first.calls == 3  # tried again after the cooldown


async def test_when_every_model_fails_the_last_failure_is_the_calls() -> None:
    first = ScriptedLLM(lambda r: ScriptedLLM.server_error(), model="a")
    second = ScriptedLLM(lambda r: ScriptedLLM.server_error(502), model="b")
    step = await _run(FallbackModel(first, second), ReAct(llm_max_retries=0))
    assert not step.ok and step.error is not None and step.error.type == "transient"
    assert (first.calls, second.calls) == (1, 1)


async def test_a_subagent_falls_back() -> None:
    first = ScriptedLLM([ScriptedLLM.rate_limited()], model="a")
    second = ScriptedLLM(["(return 42)"], model="b")
    agent = SubAgent(prompt="Answer", signature=":int")
    step = await agent.run(llm=FallbackModel(first, second))
    assert step.ok and step.value == 42, step.fail


async def test_a_json_agent_falls_back() -> None:
    first = ScriptedLLM([ScriptedLLM.timeout()], model="a")
    second = ScriptedLLM(['{"answer": 42}'], model="b")
    agent = SubAgent(prompt="Answer", signature="{answer :int}", output="json")
    step = await agent.run(llm=FallbackModel(first, second))
    assert step.ok and step.value == {"answer": 42}, step.fail


async def test_each_failed_attempt_is_a_span() -> None:
    exporter, telemetry = traced()
    first = ScriptedLLM([ScriptedLLM.rate_limited()], model="a")
    second = ScriptedLLM(["from b"], model="b")
    await _run(FallbackModel(first, second), telemetry=telemetry)
    names = [s.name for s in exporter.get_finished_spans()]
    assert "chat scripted:a" in names
    failed = next(s for s in exporter.get_finished_spans() if s.name == "chat scripted:a")
    assert not failed.status.is_ok


@pytest.mark.parametrize(
    "options",
    [
        {"retry": "attempt_timeout"},  # each attempt under its own deadline
        {"limits": "max_directives"},  # each attempt under the global limiter
        {"rate_limits": "waits"},  # the rate limit makes the first call wait
    ],
)
async def test_the_kind_falls_back_under_every_attempt_guard(options: dict[str, str]) -> None:
    from ptcflow import RateLimit
    from ptcflow.runtime import Limits, RateLimiter, RetryPolicy

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    given: dict[str, Any] = {}
    script: list[Any] = [ScriptedLLM.rate_limited(), "again from a"]
    if "retry" in options:
        given["retry"] = RetryPolicy(attempt_timeout_ms=20_000)
    if "limits" in options:
        given["limits"] = Limits(max_directives=4)
    if "rate_limits" in options:  # one request a minute: the second run's call waits
        limits = {"fallback": RateLimit(requests_per_minute=1)}
        given["rate_limits"] = RateLimiter(limits, clock=lambda: 0.0, sleep=sleep)
        script = ["first run", *script]
    first = ScriptedLLM(script, model="a")
    second = ScriptedLLM(["from b"], model="b")
    async with Runtime(llm=FallbackModel(first, second), **given) as rt:
        if "rate_limits" in options:
            assert (await rt.run(ReAct(), "warm up")).value == "first run"
        step = await rt.run(ReAct(), "2+3?", record=True)
    assert step.ok and step.value == "from b", step.error
    warmed = 1 if "rate_limits" in options else 0
    assert (first.calls, second.calls) == (1 + warmed, 1)
    assert waits == [60.0] * warmed
    assert _fallbacks(step) == [
        ("scripted:a", "failed", "rate_limited"),
        ("scripted:b", "ok", ""),
    ]
