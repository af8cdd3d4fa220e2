"""The contract, checked on full runs: every strategy × every fault mode.

Each scenario runs a strategy on the real Runtime with a ScriptedLLM and real tools, then
:func:`check_contract` asserts what must hold whatever happened: one terminal signal per
directive, ordering, strictly increasing ``seq``, JSON-safe payloads that survive the
journal, and a replay that reproduces the final state. The scenario then checks its own
outcome (retried or not, attempts, error types).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from contract_kit import (
    CASES,
    Case,
    Recorder,
    check_contract,
    llm_terminals,
    tool_terminals,
)

from ptcflow.runtime import Runtime, Step
from ptcflow.signals import LLM_DELTA, Err, Ok
from ptcflow.testing import ScriptedLLM, ScriptItem, Turn


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def boom() -> int:
    """Always fails."""
    raise ValueError("boom")


async def hang() -> int:
    """Never returns (until cancelled)."""
    await anyio.sleep_forever()
    return 0  # pragma: no cover


def weird() -> Any:
    """Returns values JSON cannot carry as they are."""
    return {"set": {1, 2}, "bytes": b"\x00\xff", "obj": object(), "nan": float("nan"), "t": (1,)}


TOOLS = [add, boom, hang, weird]
ADD = ("add", {"x": 2, "y": 3})


@dataclass(frozen=True)
class Scenario:
    """One fault mode: the script, the strategy options, and what must come out."""

    name: str
    script: Callable[[Case], list[ScriptItem]]
    ok: bool = True
    error: str | None = None
    retryable: bool | None = None
    options: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    check: Callable[[Step, ScriptedLLM], None] | None = None
    crash_on: str | None = None


def _attempts(n: int, *, index: int = 0) -> Callable[[Step, ScriptedLLM], None]:
    def check(step: Step, llm: ScriptedLLM) -> None:
        assert llm_terminals(step)[index].data.attempts == n

    return check


def _requests(n: int) -> Callable[[Step, ScriptedLLM], None]:
    def check(step: Step, llm: ScriptedLLM) -> None:
        assert len(llm.requests) == n
        assert llm_terminals(step)[-1].data.attempts == n

    return check


def _tool_error(kind: str, *, retryable: bool) -> Callable[[Step, ScriptedLLM], None]:
    def check(step: Step, llm: ScriptedLLM) -> None:
        (result,) = tool_terminals(step)
        assert isinstance(result.data.result, Err)
        assert result.data.result.error.type == kind
        assert result.data.result.error.retryable is retryable
        if not retryable:
            assert result.data.attempts == 1

    return check


def _streamed(step: Step, llm: ScriptedLLM) -> None:
    assert any(s.type == LLM_DELTA for s in step.signals)


def _json_safe(step: Step, llm: ScriptedLLM) -> None:
    (result,) = tool_terminals(step)
    assert isinstance(result.data.result, Ok)
    assert isinstance(result.data.result.payload, dict)


SCENARIOS = [
    Scenario("two_turns", lambda c: [c.calls([ADD]), c.answer("5")]),
    Scenario(
        "parallel_calls", lambda c: [c.calls([ADD, ADD, ("add", {"x": 1, "y": 1})]), c.answer("ok")]
    ),
    Scenario(
        "llm_timeout_retried",
        lambda c: [ScriptedLLM.timeout(), c.calls([ADD]), c.answer("5")],
        check=_attempts(2),
    ),
    Scenario(
        "llm_rate_limited_retried",
        lambda c: [ScriptedLLM.rate_limited(retry_after=0.001), c.answer("5")],
        check=_attempts(2),
    ),
    Scenario(
        "llm_5xx_retried",
        lambda c: [ScriptedLLM.server_error(502), c.calls([ADD]), c.answer("5")],
        check=_attempts(2),
    ),
    Scenario(
        "llm_timeout_exhausted",
        lambda c: [ScriptedLLM.timeout()] * 3,
        ok=False,
        error="timeout",
        retryable=True,
        options={"llm_max_retries": 2},
        check=_requests(3),
    ),
    Scenario(
        "llm_auth_attempted_once",
        lambda c: [ScriptedLLM.auth_error(), c.answer("never")],
        ok=False,
        error="auth",
        retryable=False,
        options={"llm_max_retries": 3},
        check=_requests(1),
    ),
    Scenario(
        "llm_malformed",
        lambda c: [ScriptedLLM.malformed(), c.answer("never")],
        ok=False,
        error="provider_error",
        check=_requests(1),
    ),
    Scenario(
        "llm_malformed_stream",
        lambda c: [ScriptedLLM.malformed(), c.answer("never")],
        ok=False,
        error="provider_error",
        options={"stream": True},
        check=_requests(1),
    ),
    Scenario(
        "llm_deadline",
        lambda c: [ScriptedLLM.timeout(hang=True)],
        ok=False,
        error="timeout",
        options={"llm_timeout_ms": 30, "llm_max_retries": 0},
    ),
    Scenario(
        "mission_deadline",
        lambda c: [c.calls([ADD]), ScriptedLLM.timeout(hang=True)],
        ok=False,
        error="timeout",
        timeout=0.05,
    ),
    Scenario(
        "mission_deadline_during_tools",
        lambda c: [c.calls([("hang", {}), ADD]), c.answer("never")],
        ok=False,
        error="timeout",
        timeout=0.05,
    ),
    Scenario(
        "strategy_crashes_with_tools_in_flight",
        lambda c: [c.calls([("hang", {}), ADD]), c.answer("never")],
        ok=False,
        error="internal",
        crash_on="ai.tool.started",
    ),
    Scenario(
        "stream_retried_after_5xx",
        lambda c: [ScriptedLLM.server_error(), Turn(text="all good", chunks=("all ", "good"))],
        options={"stream": True},
        check=_attempts(2),
    ),
    Scenario("script_ran_out", lambda c: [c.calls([ADD])], ok=False, error="provider_error"),
    Scenario(
        "tool_raises_attempted_once",
        lambda c: [c.calls([("boom", {})]), c.answer("sorry")],
        options={"tool_max_retries": 2},
        check=_tool_error("tool_error", retryable=False),
    ),
    Scenario(
        "tool_deadline",
        lambda c: [c.calls([("hang", {})]), c.answer("too slow")],
        options={"tool_timeout_ms": 30},
        check=_tool_error("timeout", retryable=True),
    ),
    Scenario(
        "unknown_tool",
        lambda c: [c.calls([("nope", {"a": 1})]), c.answer("no such tool")],
        check=_tool_error("unknown_tool", retryable=False),
    ),
    Scenario(
        "unserializable_tool_output",
        lambda c: [c.calls([("weird", {})]), c.answer("done")],
        check=_json_safe,
    ),
    Scenario(
        "streamed",
        lambda c: [c.calls([ADD]), Turn(text="five, I think", chunks=("five, ", "I ", "think"))],
        options={"stream": True},
        check=_streamed,
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_contract_holds(case: Case, scenario: Scenario) -> None:
    if why := case.skipped(scenario.name):
        pytest.skip(why)
    llm = ScriptedLLM(scenario.script(case))
    recorder = Recorder(case.make(**scenario.options), crash_on=scenario.crash_on)
    with anyio.fail_after(10):  # a hang is a failure, not a stuck suite
        async with Runtime(llm=llm, tools=TOOLS) as rt:
            step = await rt.run(recorder, case.input, record=True, timeout=scenario.timeout)
            assert rt.statistics().in_flight == 0
    assert step.ok is scenario.ok, step.error
    if scenario.error is not None:
        assert step.error is not None and step.error.type == scenario.error, step.error
    if scenario.retryable is not None:
        assert step.error is not None and step.error.retryable is scenario.retryable
    check_contract(step, recorder)
    if scenario.check is not None:
        scenario.check(step, llm)


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_a_run_with_nothing_to_do_ends_instead_of_hanging(case: Case) -> None:
    # With no input a strategy may wait for a request (ReAct: idle) and emit nothing.
    # Nothing can ever wake such a run, so the runtime must end it rather than hang.
    recorder = Recorder(case.make())
    with anyio.fail_after(2):
        async with Runtime(llm=ScriptedLLM([])) as rt:
            step = await rt.run(recorder, None, record=True)
    assert not step.ok and step.error is not None
    check_contract(step, recorder)
