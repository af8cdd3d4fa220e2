"""The runner's additions: call indexes in issue order, the tool router, replay, resume."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ptcflow.lisp import ReplayMismatch, ToolCallRecord, run
from ptcflow.signals import Err, ErrorEnvelope, Ok

pytestmark = pytest.mark.anyio

PMAP = '(return (pmap (fn [i] (call "get" {:i i})) [0 1 2 3 4]))'


async def test_pmap_calls_are_numbered_in_program_order_whatever_finishes_first() -> None:
    # The calls finish in reverse order (each waits for the next one to finish first).
    done = [anyio.Event() for _ in range(5)]
    seen: list[tuple[int, int]] = []

    async def get(name: str, args: dict[str, Any], index: int) -> Any:
        i = args["i"]
        if i < 4:
            await done[i + 1].wait()
        seen.append((index, i))
        done[i].set()
        return i * 10

    r = await run(PMAP, tool_names=["get"], call=get)
    assert r.error is None and r.value == [0, 10, 20, 30, 40]
    assert [i for _, i in seen] == [4, 3, 2, 1, 0]  # completion order
    assert sorted(seen) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]  # index == issue order
    assert [(c.index, c.args["i"]) for c in r.tool_calls] == [(i, i) for i in range(5)]


async def test_indexes_count_across_sequential_and_nested_parallel_calls() -> None:
    got: list[tuple[int, str, int]] = []

    async def call(name: str, args: dict[str, Any], index: int) -> Any:
        got.append((index, name, args.get("i", -1)))
        await anyio.lowlevel.checkpoint()
        return args.get("i", 0)

    source = """
    (call "a" {})
    (pmap (fn [i] (pmap (fn [j] (call "b" {:i (+ (* 10 i) j)})) [0 1])) [1 2])
    (call "c" {:i 99})
    """
    r = await run(source, tool_names=["a", "b", "c"], call=call)
    assert r.error is None
    assert [(c.index, c.name, c.args.get("i")) for c in r.tool_calls] == [
        (0, "a", None),
        (1, "b", 10),
        (2, "b", 11),
        (3, "b", 20),
        (4, "b", 21),
        (5, "c", 99),
    ]


async def test_router_envelopes_reach_the_program() -> None:
    async def call(name: str, args: dict[str, Any], index: int) -> Any:
        if name == "bad":
            return Err(error=ErrorEnvelope.make("tool_error", "exploded"))
        return Ok(payload={"n": index})

    r = await run('(:n (call "good" {}))', tool_names=["good", "bad"], call=call)
    assert r.value == 0
    r = await run('(call "good" {}) (call "bad" {})', tool_names=["good", "bad"], call=call)
    assert r.error is not None and r.error.category == "tool_error"
    assert r.error.message == 'tool "bad" failed: tool_error: exploded'
    assert [c.error for c in r.tool_calls] == [None, "tool_error: exploded"]


async def test_a_router_that_raises_is_the_tool_failing() -> None:
    async def call(name: str, args: dict[str, Any], index: int) -> Any:
        raise RuntimeError("no route")

    r = await run('(call "x" {})', tool_names=["x"], call=call)
    assert r.error is not None and r.error.category == "tool_error"
    assert "no route" in r.error.message


async def test_replay_calls_no_tool_and_gives_the_same_result() -> None:
    calls = 0

    async def call(name: str, args: dict[str, Any], index: int) -> Any:
        nonlocal calls
        calls += 1
        return {"i": args["i"], "sq": args["i"] ** 2}

    source = '(let [xs (pmap #(call "get" {:i %}) [1 2 3])] (println (count xs)) (mapv :sq xs))'
    live = await run(source, tool_names=["get"], call=call)
    assert calls == 3
    again = await run(source, tool_names=["get"], replay=live.tool_calls)
    assert calls == 3  # nothing called
    assert (again.value, again.prints, again.error) == (live.value, live.prints, None)
    assert [(c.index, c.name, c.args, c.result) for c in again.tool_calls] == [
        (c.index, c.name, c.args, c.result) for c in live.tool_calls
    ]


async def test_replay_of_a_failed_call_fails_the_same_way() -> None:
    record = [ToolCallRecord(name="x", args={}, error="timeout: slow", index=0)]
    r = await run('(call "x" {})', tool_names=["x"], replay=record)
    assert r.error is not None and r.error.message == 'tool "x" failed: timeout: slow'


async def test_a_record_of_another_program_is_a_typed_error() -> None:
    record = [ToolCallRecord(name="get", args={"i": 1}, result=1, index=0)]
    with pytest.raises(ReplayMismatch, match=r'tool call #0 is "get" \{\'i\': 2\}'):
        await run('(call "get" {:i 2})', tool_names=["get"], replay=record)
    with pytest.raises(ReplayMismatch, match="#1"):
        await run('(call "get" {:i 1}) (call "get" {:i 1})', tool_names=["get"], replay=record)


async def test_resume_answers_recorded_calls_and_performs_the_rest() -> None:
    performed: list[int] = []

    async def call(name: str, args: dict[str, Any], index: int) -> Any:
        performed.append(index)
        return args["i"] * 2

    record = [ToolCallRecord(name="get", args={"i": 1}, result=2, index=0)]
    source = '[(call "get" {:i 1}) (call "get" {:i 2})]'
    r = await run(source, tool_names=["get"], call=call, replay=record, resume=True)
    assert r.value == [2, 4]
    assert performed == [1]


async def test_records_are_in_issue_order_with_the_plain_tools_too() -> None:
    second_done = anyio.Event()

    async def slow(args: dict[str, Any]) -> Any:
        if args["i"] == 0:
            await second_done.wait()  # the first call finishes last
        else:
            second_done.set()
        return args["i"]

    r = await run('(pmap #(call "t" {:i %}) [0 1])', tools={"t": slow})
    assert [c.index for c in r.tool_calls] == [0, 1]
    assert [c.args["i"] for c in r.tool_calls] == [0, 1]
