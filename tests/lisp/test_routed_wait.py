"""A program's time limit bounds its own work: waiting for routed tool calls (the runtime's
tool machinery, which bounds each call itself) is not counted; waiting for plain tools is."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ptcflow.lisp import Limits, run

pytestmark = pytest.mark.anyio

LIMITS = Limits(timeout_ms=100)
SOURCE = '(+ (call "slow" {}) (call "slow" {}) (count (pmap (fn [i] (call "slow" {})) [1 2])))'


async def slow(args: dict[str, Any]) -> int:
    await anyio.sleep(0.15)
    return 1


async def router(name: str, args: dict[str, Any], index: int) -> Any:
    return await slow(args)


async def test_waiting_for_routed_calls_does_not_count_against_the_time_limit() -> None:
    result = await run(SOURCE, tool_names=("slow",), call=router, limits=LIMITS)
    assert result.error is None and result.value == 4
    assert len(result.tool_calls) == 4


async def test_waiting_for_plain_tools_counts() -> None:
    result = await run(SOURCE, tools={"slow": slow}, limits=LIMITS)
    assert result.error is not None and result.error.category == "timeout"
    assert "waiting on tools included" in result.error.message


async def test_the_program_own_work_still_times_out_between_routed_calls() -> None:
    source = '(call "slow" {}) (loop [i 0] (recur (inc i)))'
    with anyio.fail_after(5):
        result = await run(source, tool_names=("slow",), call=router, limits=LIMITS)
    assert result.error is not None and result.error.category == "timeout"
    assert "waiting on tools" not in result.error.message
