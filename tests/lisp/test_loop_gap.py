"""The event loop keeps ticking: a 10 ms ticker next to a set of hostile programs running at
once, on asyncio and trio. The ticker never waits more than 100 ms, and no program runs
past twice its time limit (the measure of DESIGN.md "Bounds that hold inside one step")."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from ptcflow.lisp import Limits, LispResult, run

from .ticking import Ticker, frozen_heap

pytestmark = pytest.mark.anyio

LIMITS = Limits(timeout_ms=400)
DAG = "(reduce (fn [v _] [v v]) [1] (range 64))"
SHUFFLED = "(map #(mod (* % 7919) 20011) (range 20000))"

# Each one would stall the loop, or run for minutes, if its work were not charged as it
# happens. Programs that finish quickly are listed too: they must not be slowed down.
STOPPED = ("limit", "timeout")  # a limit or the deadline, whichever comes first
DONE = (None, "timeout")  # completes, unless the others leave it too little time

HOSTILE = [  # (program, the categories of its error it may end with; None: it completes)
    ("(loop [i 0] (recur (inc i)))", STOPPED),
    ("(defn f [n] (+ 1 (f n))) (f 1)", STOPPED),
    (f"(frequencies [{DAG}])", STOPPED),
    (f"(let [v {DAG} w {DAG}] (= v w))", STOPPED),
    (f"(count (str {DAG}))", STOPPED),
    (f"(count (flatten {DAG}))", STOPPED),
    (f"(postwalk identity {DAG})", STOPPED),
    ("(let [a (vec (range 100000)) b (vec (repeat 100000 a))] (count (str b)))", STOPPED),
    ('(count (join (repeat 20000 (apply str (repeat 100000 "x")))))', STOPPED),
    ('(re-find #"(a+)+$" (str (apply str (repeat 99999 "a")) "b"))', DONE),
    ('(re-matches #"(\\d*){20}x" (apply str (repeat 30000 "1")))', DONE),
    (f"(sort (fn [a b] (dotimes [i 10] i) (< a b)) {SHUFFLED})", STOPPED),
    ('(re-find #"(.*a){20}" (apply str (repeat 99999 "a")))', STOPPED),
    ('(re-find #"(.*a){20}" (apply str (repeat 8000 "a")))', DONE),
    (f"(count (sort (partial compare) {SHUFFLED}))", DONE),
    ('(dotimes [i 100000] (println "spam" i))', DONE),  # output is cut, not an error
    ('(pmap (fn [i] (call "slow" {:i i})) (range 1000))', STOPPED),
    ('(count (call "huge" {}))', STOPPED),
    (" ".join(f"(+ {i} 1)" for i in range(1800)), DONE),  # 19 KB of program text (the limit: 20)
    ("(reduce * (range 1 100))", ("arithmetic",)),  # 64-bit overflow, at once
    ("(.getClass 1)", ("analysis",)),  # reaching for Python, refused before it runs
]


async def slow(args: dict[str, Any]) -> Any:
    await anyio.sleep(0.05)
    return args["i"]


HUGE = [{"id": i, "tags": ["a"]} for i in range(200_000)]  # built once: the tool's own work


async def huge(args: dict[str, Any]) -> Any:
    return HUGE


async def _tick_next_to(
    programs: list[tuple[str, tuple[str | None, ...]]], limits: Limits, *, at_once: bool
) -> tuple[float, float]:
    """Run ``programs`` (one after the other, or all at once) next to a 10 ms ticker; check
    each ends as expected within twice its time limit; return the ticker's largest wait in
    CPU and in wall-clock time (see tests/lisp/ticking.py)."""
    ticker = Ticker()
    runs: list[tuple[str, tuple[str | None, ...], LispResult, float]] = []

    async def one(source: str, expected: tuple[str | None, ...]) -> None:
        start = time.perf_counter()
        result = await run(source, tools={"slow": slow, "huge": huge}, limits=limits)
        runs.append((source, expected, result, time.perf_counter() - start))

    await run("(+ 1 2)")  # the first run imports the builtins: not part of the measure
    with anyio.fail_after(60), frozen_heap():
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker.run)
            async with anyio.create_task_group() as group:
                for source, expected in programs:
                    if at_once:
                        group.start_soon(one, source, expected)
                    else:
                        await one(source, expected)
            ticker.done.set()

    assert len(runs) == len(programs)
    for source, expected, result, seconds in runs:
        category = None if result.error is None else result.error.category
        assert category in expected, f"{source[:60]}: {result.error}"
        assert seconds < 2 * limits.timeout_ms / 1000, f"{source[:60]} ran {seconds:.2f} s"
    return ticker.max_gap, ticker.max_wall_gap


async def _largest_gap(
    programs: list[tuple[str, tuple[str | None, ...]]], limits: Limits, *, at_once: bool
) -> tuple[float, float]:
    """The ticker's largest wait next to ``programs``, measured again once if it was over
    100 ms: a program that stalls the loop does it every time, while a host that stops this
    virtual machine's CPU (other jobs on it) shows in the thread's CPU clock too, once (seen:
    136 ms of CPU and of wall time in a full test run, 20-35 ms in every rerun)."""
    gap, wall = await _tick_next_to(programs, limits, at_once=at_once)
    if gap > 0.1:
        again = await _tick_next_to(programs, limits, at_once=at_once)
        gap, wall = min((gap, wall), again)
    return gap, wall


async def test_the_loop_keeps_ticking_next_to_each_hostile_program() -> None:
    gap, wall = await _largest_gap(HOSTILE, LIMITS, at_once=False)
    assert gap <= 0.1, f"the ticker waited {gap * 1000:.0f} ms ({wall * 1000:.0f} ms wall)"


async def test_the_loop_keeps_ticking_next_to_hostile_programs_at_once() -> None:
    # With n programs computing at once, each runs about yield_interval_ms (or 1,024 steps,
    # whichever is longer) between two turns of the loop, so the ticker waits about n times
    # that: half of the programs at once here, yielding every 2 ms.
    limits = Limits(timeout_ms=LIMITS.timeout_ms, yield_interval_ms=2)
    gap, wall = await _largest_gap(HOSTILE[::2], limits, at_once=True)
    assert gap <= 0.1, f"the ticker waited {gap * 1000:.0f} ms ({wall * 1000:.0f} ms wall)"
