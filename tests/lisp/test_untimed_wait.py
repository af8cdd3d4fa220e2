"""A program's time limit and the tools it waits on: waiting on ``untimed_tools`` (agents
used as tools, whose runs bound themselves) is not counted; waiting on any other tool is,
in a ``pmap`` batch that mixes both too; the program's own work always is."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from ptcflow.lisp import Limits, run

pytestmark = pytest.mark.anyio

LIMITS = Limits(timeout_ms=100)
AGENTS = '(+ (call "agent" {}) (call "agent" {}) (count (pmap (fn [i] (call "agent" {})) [1 2])))'


async def wait(args: dict[str, Any]) -> int:
    await anyio.sleep(0.15)  # longer than the whole time limit, each
    return 1


async def hang(args: dict[str, Any]) -> int:
    await anyio.sleep_forever()
    return 0  # pragma: no cover


TOOLS = {"agent": wait, "slow": wait, "hang": hang}


async def test_waiting_on_untimed_tools_does_not_count_against_the_time_limit() -> None:
    result = await run(AGENTS, tools=TOOLS, limits=LIMITS, untimed_tools={"agent"})
    assert result.error is None, result.error
    assert result.value == 4 and len(result.tool_calls) == 4


async def test_without_untimed_tools_the_same_waits_count() -> None:
    result = await run(AGENTS, tools=TOOLS, limits=LIMITS)
    assert result.error is not None and result.error.category == "timeout"
    assert "waiting on tools included" in result.error.message


@pytest.mark.parametrize(
    "source",
    [
        '(call "agent" {}) (call "hang" {})',
        '(pmap (fn [t] (call t {})) ["agent" "hang"])',  # a batch that mixes both counts
    ],
)
async def test_a_hanging_tool_next_to_untimed_ones_still_ends_the_program(source: str) -> None:
    start = time.monotonic()
    with anyio.fail_after(5):
        result = await run(source, tools=TOOLS, limits=LIMITS, untimed_tools={"agent"})
    assert result.error is not None and result.error.category == "timeout"
    assert time.monotonic() - start < 1.0  # the limit plus at most one untimed wait


async def test_the_programs_own_work_still_times_out_between_untimed_calls() -> None:
    source = '(call "agent" {}) (loop [i 0] (recur (inc i)))'
    # only the clock may stop the loop (not the iteration or step limits, on a fast machine)
    limits = Limits(timeout_ms=100, max_loop_iterations=10**12, max_steps=10**12)
    with anyio.fail_after(5):
        result = await run(source, tools=TOOLS, limits=limits, untimed_tools={"agent"})
    assert result.error is not None and result.error.category == "timeout"
    (call,) = result.tool_calls
    assert call.name == "agent" and call.error is None
