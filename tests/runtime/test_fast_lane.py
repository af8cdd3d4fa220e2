"""The executor's fast lane (no telemetry, no limits, no own deadline) and its general path
publish the same signals: same types, order, correlation and data (ids and times aside)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ptcflow.runtime import Limits, RetryPolicy, Runtime, Step
from ptcflow.signals import Signal
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, ScriptItem

pytestmark = pytest.mark.anyio


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def boom(x: int) -> int:
    """Always fails."""
    raise ValueError(f"no {x}")


def _script() -> list[ScriptItem]:
    return [
        ScriptedLLM.tool_call("add", x=2, y=3),
        ScriptedLLM.rate_limited(retry_after=0.0),  # a retried attempt on both paths
        [ScriptedLLM.tool_call("boom", x=1), ScriptedLLM.tool_call("nope")],
        "done",
    ]


def _shape(signal: Signal) -> tuple[Any, ...]:
    return (
        signal.type,
        signal.seq,
        signal.call_id,
        signal.request_id,
        signal.iteration,
        signal.causation_id,
        _timeless(signal.data),
    )


def _timeless(data: Any) -> Any:
    """The data without measured durations (they differ run to run)."""
    if hasattr(data, "duration_ms"):
        return msgspec.structs.replace(data, duration_ms=0.0)
    return data


async def _run(limits: Limits) -> Step:
    llm = ScriptedLLM(_script())
    retry = RetryPolicy(max_backoff_ms=0)
    async with Runtime(llm=llm, tools=[add, boom], limits=limits, retry=retry) as rt:
        return await rt.run(ReAct(), "go", run_id="run_lane", record=True)


async def test_fast_lane_and_general_path_publish_identical_signals() -> None:
    fast = await _run(Limits())
    general = await _run(Limits(max_directives=64, per_tool=8, per_provider=8))
    assert fast.ok and general.ok
    assert fast.value == general.value == "done"
    assert fast.signals is not None and general.signals is not None
    assert [_shape(s) for s in fast.signals] == [_shape(s) for s in general.signals]


async def test_the_compared_run_covers_retries_tool_errors_and_unknown_tools() -> None:
    step = await _run(Limits())
    assert step.signals is not None
    results = [s.data for s in step.signals if s.type == "ai.tool.result"]
    errors = {r.result.error.type for r in results if not r.result.ok}
    assert errors == {"tool_error", "unknown_tool"}
    attempts = [s.data.attempts for s in step.signals if s.type == "ai.llm.response"]
    assert 2 in attempts, "the rate-limited model call is retried once"
