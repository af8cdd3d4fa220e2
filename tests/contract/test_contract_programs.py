"""The contract for programs: faults inside a program's tool calls, the program's deadlines.

The PTC case also runs every scenario of ``test_contract_faults`` and the cancellation tests;
these are the faults only a program has: calls refused before the program runs, sub-calls
that time out, raise or get bad arguments while others succeed, the directive's deadline
against the program's own time limit, a strategy crashing while sub-calls are in flight.
Each runs on the Runtime (asyncio and trio) and on the run core's plain-asyncio driver,
and :func:`check_contract` holds for all: one terminal per directive and per sub-call, each
sub-call's before its program's, the journal, the replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from contract_kit import Recorder, check_contract, lisp_string, of_run, terminal
from core_driver import run_on_core

from ptcflow.runtime import Runtime, Step
from ptcflow.signals import PROGRAM_RESULT, TOOL_RESULT, TOOL_STARTED, Err, Ok
from ptcflow.strategies import PTC, PromptLimit
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import tool


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


TOOLS = [add, boom, hang, tool(hang, name="slow", timeout_ms=30)]
ANSWER = f"(return {lisp_string('done')})"


@dataclass(frozen=True)
class Scenario:
    """A program (its first turn), the strategy's options, and what must come out."""

    name: str
    program: str
    ok: bool = True
    error: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    crash_on: str | None = None
    check: Callable[[Step], None] | None = None


def program_of(step: Step) -> Ok[Any] | Err:
    result: Ok[Any] | Err = terminal(step, f"{step.run_id}/program/1").data.result
    return result


def sub_results(step: Step) -> dict[str, Ok[Any] | Err]:
    """The program's sub-call results by call id, in call (index) order."""
    found = {
        str(s.call_id): s.data.result
        for s in of_run(step)
        if s.type == TOOL_RESULT and "/tool/" in str(s.call_id)
    }
    return dict(sorted(found.items(), key=lambda kv: int(kv[0].rsplit("/", 1)[1])))


def program_error(category: str, *types: str) -> Callable[[Step], None]:
    """The program ran into ``category``; its sub-calls ended with ``types`` (in order)."""

    def check(step: Step) -> None:
        result = program_of(step)
        assert isinstance(result, Ok) and result.payload.error is not None
        assert result.payload.error.category == category, result.payload.error
        got = [r.error.type if isinstance(r, Err) else "ok" for r in sub_results(step).values()]
        assert got == list(types)

    return check


def no_calls(step: Step) -> None:
    assert not [s for s in of_run(step) if s.type == TOOL_STARTED]
    program_error("unknown_tool")(step)


def directive_timeout(step: Step) -> None:
    result = program_of(step)
    assert isinstance(result, Err) and result.error.type == "timeout"
    (sub,) = sub_results(step).values()
    assert isinstance(sub, Err)  # cut with its program, and answered


SCENARIOS = [
    Scenario("unknown_tool_refused_before_running", '(call "nope" {})', check=no_calls),
    Scenario(
        "sub_call_timeout",
        '(vector (call "add" {:x 1 :y 2}) (call "slow" {}))',
        check=program_error("tool_error", "ok", "timeout"),
    ),
    Scenario(
        "sub_call_bad_arguments",
        '(call "add" {:x "two" :y 3})',
        check=program_error("tool_error", "validation"),
    ),
    Scenario(
        "sub_call_raises_while_another_succeeds",
        '(pcalls #(call "boom" {}) #(call "add" {:x 1 :y 1}))',
        check=program_error("tool_error", "tool_error", "ok"),
    ),
    Scenario(
        "too_many_calls",
        '(doseq [i (range 5)] (call "add" {:x i :y 1}))',
        options={"program_limits": {"max_tool_calls": 2}},
        check=program_error("limit", "ok", "ok"),
    ),
    Scenario(
        "programs_own_time_limit",
        '(call "hang" {})',
        options={"program_limits": {"timeout_ms": 50}},
        check=program_error("timeout", "cancelled"),
    ),
    Scenario(
        "directive_deadline",
        '(call "hang" {})',
        ok=False,
        error="timeout",
        options={"program_timeout_ms": 50},
        check=directive_timeout,
    ),
    Scenario(
        "strategy_crashes_with_sub_calls_in_flight",
        '(pcalls #(call "hang" {}) #(call "add" {:x 1 :y 1}))',
        ok=False,
        error="internal",
        crash_on=TOOL_RESULT,
    ),
    Scenario(
        "strategy_crashes_on_the_program_result",
        '(call "add" {:x 1 :y 1})',
        ok=False,
        error="internal",
        crash_on=PROGRAM_RESULT,
    ),
]


def strategy(scenario: Scenario) -> Recorder:
    ptc = PTC(
        prompt="Work on: {{task}}",
        max_turns=3,
        prompt_limit=PromptLimit(value_chars=10_000),
        name="ptc",
        **scenario.options,
    )
    return Recorder(ptc, crash_on=scenario.crash_on)


def check(step: Step, recorder: Recorder, scenario: Scenario) -> None:
    assert step.ok is scenario.ok, step.error
    if scenario.error is not None:
        assert step.error is not None and step.error.type == scenario.error, step.error
    check_contract(step, recorder)
    if scenario.check is not None:
        scenario.check(step)


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_program_faults_keep_the_contract(scenario: Scenario) -> None:
    llm = ScriptedLLM([scenario.program, ANSWER])
    recorder = strategy(scenario)
    with anyio.fail_after(10):
        async with Runtime(llm=llm, tools=TOOLS) as rt:
            step = await rt.run(recorder, {"task": "go"}, record=True)
            assert rt.statistics().in_flight == 0
    check(step, recorder, scenario)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_program_faults_keep_the_contract_on_the_core(scenario: Scenario) -> None:
    llm = ScriptedLLM([scenario.program, ANSWER])
    recorder = strategy(scenario)
    with anyio.fail_after(10):
        step = await run_on_core(recorder, {"task": "go"}, llm=llm, tools=TOOLS)
    check(step, recorder, scenario)
