"""Tool results and ctx are converted in the program's greenlet, charged to its budget: a
huge result ends in a typed ``limit`` error, and the event loop keeps its turns."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.lisp import Limits

from .ticking import run_ticking

pytestmark = pytest.mark.anyio


def _deep(n: int) -> list[Any]:
    root: list[Any] = []
    cur = root
    for _ in range(n):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    return root


HUGE = [
    ({f"k{i}": i for i in range(1_000_000)}, "max_collection_size"),
    (list(range(1_000_000)), "max_collection_size"),
    ({"rows": [{"id": i} for i in range(200_000)]}, "max_collection_size"),
    ("x" * 60_000_000, "max_memory_bytes"),
    ([list(range(1000)) for _ in range(6_000)], "max_memory_bytes"),
    (_deep(5000), "max_depth"),
]


@pytest.mark.parametrize(("value", "limit"), HUGE, ids=lambda v: type(v).__name__)
async def test_a_huge_tool_result_ends_in_a_limit_error(value: Any, limit: str) -> None:
    async def tool(args: dict[str, Any]) -> Any:
        return value

    t = await run_ticking('(count (call "t" {}))', tools={"t": tool})
    result = t.result
    assert result.error is not None and getattr(result.error, "limit", "") == limit, result.error
    assert 'tool "t"' in result.error.message or limit == "max_depth"
    assert len(result.tool_calls) == 1  # the call happened; its result was refused
    assert t.seconds < 2 * Limits().timeout_ms / 1000
    assert t.max_gap_s < 0.1


async def test_a_huge_ctx_value_ends_in_a_limit_error() -> None:
    ctx = {"big": {f"k{i}": i for i in range(1_000_000)}}
    t = await run_ticking("(count ctx/big)", ctx=ctx)
    err = t.result.error
    assert err is not None and getattr(err, "limit", "") == "max_collection_size"
    assert "ctx/big" in err.message
    assert t.max_gap_s < 0.1


async def test_a_large_result_within_the_limits_converts_while_the_loop_ticks() -> None:
    rows = [{"id": i, "name": f"n{i}"} for i in range(20_000)]

    async def tool(args: dict[str, Any]) -> Any:
        return rows

    t = await run_ticking('(count (call "t" {}))', tools={"t": tool})
    assert t.result.error is None and t.result.value == 20_000
    assert t.max_gap_s < 0.1


async def test_a_ctx_value_converted_once_is_shared_by_runs() -> None:
    from ptcflow.lisp import from_python, run

    rows = from_python([{"id": i, "amount": i % 7} for i in range(1000)])
    for _ in range(2):
        result = await run("(reduce + (map :amount ctx/rows))", ctx={"rows": rows})
        assert result.error is None and result.value == sum(i % 7 for i in range(1000))
    result = await run("(count (conj ctx/rows 1))", ctx={"rows": rows})
    assert result.value == 1001 and len(rows) == 1000  # immutable: no run changes it
