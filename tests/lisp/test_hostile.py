"""Hostile programs: each ends with a typed error inside its limit, the host stays responsive
(a concurrent task keeps ticking during the run) and memory stays bounded."""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import anyio
import pytest

from ptcflow.lisp import Limits, LispResult, run

pytestmark = pytest.mark.anyio

# Small limits keep the suite fast; the defaults are exercised by the other tests.
LIMITS = Limits(
    timeout_ms=3000,
    max_steps=200_000,
    max_loop_iterations=20_000,
    max_collection_size=20_000,
    max_string_length=100_000,
    max_tool_calls=10,
    yield_interval_ms=1,  # yield often, so even a short busy run lets the ticker in
)


async def run_while_ticking(source: str, **kwargs: Any) -> tuple[LispResult, int, float]:
    """Run ``source`` while another task ticks; return the result, ticks and seconds."""
    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.lowlevel.checkpoint()

    result: LispResult | None = None
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        kwargs.setdefault("limits", LIMITS)
        result = await run(source, **kwargs)
        done.set()
    assert result is not None
    return result, ticks, time.perf_counter() - start


# (source, category, limit name or message fragment, long-running: must let the ticker run)
HOSTILE = [
    # infinite loops and recursion
    ("(loop [] (recur))", "limit", "max_loop_iterations", True),
    ("(loop [i 0] (recur (inc i)))", "limit", "max_loop_iterations", True),
    ("(defn spin [n] (recur (inc n))) (spin 0)", "limit", "max_loop_iterations", True),
    ("(defn f [] (f)) (f)", "limit", "max_depth", False),
    ("(defn f [n] (+ 1 (f n))) (f 1)", "limit", "max_depth", False),
    ("(defn a [n] (b n)) (defn b [n] (a n)) (a 1)", "limit", "max_depth", False),
    ("((fn f [x] (f [x])) 1)", "limit", "max_depth", False),
    ("(dotimes [i 1000000] (dotimes [j 1000000] j))", "limit", "max_", True),
    ("(reduce (fn [a x] (+ a x)) 0 (range 10000000))", "limit", "max_collection_size", False),
    ("(count (for [x (range 1000) y (range 1000)] 1))", "limit", "max_", False),
    ("(dotimes [i 1000] (dotimes [j 1000] j))", "limit", "max_steps", True),
    # unbounded sizes
    ("(range 1e12)", "limit", "max_collection_size", False),
    ("(count (range 1000000000000))", "limit", "max_collection_size", False),
    ('(apply str (repeat 1e9 "x"))', "limit", "max_collection_size", False),
    ('(loop [s "a"] (recur (str s s)))', "limit", "max_string_length", False),
    ('(clojure.string/join (repeat 10000 (apply str (repeat 10000 "x"))))', "limit", "max_", False),
    ("(loop [v [1]] (recur (into v v)))", "limit", "max_collection_size", False),
    ("(reduce (fn [v _] [v v]) [] (range 100))", "limit", "max_collection_size", False),
    ("(reduce (fn [v _] [v]) [] (range 5000))", "limit", "max_depth", False),
    ("(memory/put :x (range 1e7))", "limit", "max_collection_size", False),
    ("(vec (repeat 100000000 0))", "limit", "max_collection_size", False),
    # catastrophic regexes elsewhere: linear on RE2 (no match: nil)
    ('(re-find #"(a+)+$" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")', None, None, False),
    ('(re-find (re-pattern "(a*)*b") "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")', None, None, False),
    ('(re-matches #"(x+x+)+y" (apply str (repeat 40 "x")))', None, None, False),
    # reaching the host
    ("(.getClass 1)", "analysis", "method call", False),
    ('(. "abc" toUpperCase)', "analysis", "interop", False),
    ("(__class__ 1)", "analysis", "reserved", False),
    ("(let [x {}] (:__class__ x))", None, None, False),
    ("(eval (list + 1 2))", "analysis", "eval is not available", False),
    ('(eval "(+ 1 2)")', "analysis", "eval is not available", False),
    ("(import os)", "analysis", "import is not available", False),
    ('(load-string "(+ 1 2)")', "analysis", "not available", False),
    ('(read-string "(+ 1 2)")', "analysis", "not available", False),
    ("(java.lang.System/exit 0)", "analysis", "interop", False),
    ("(System/getenv)", "analysis", "static member", False),
    ("(Runtime/getRuntime)", "analysis", "static member", False),
    ('(new java.io.File "/")', "analysis", "not available", False),
    ('(java.io.File. "/etc/passwd")', "analysis", "constructor", False),
    ('(slurp "/etc/passwd")', "analysis", "no file", False),
    ('(spit "/tmp/x" "y")', "analysis", "no file", False),
    ("(clojure.core/eval 1)", "unbound", "clojure.core/eval", False),
    ("(ns evil (:import [java.lang Runtime]))", "analysis", "ns is not available", False),
    ("(def __builtins__ 1)", "analysis", "reserved", False),
    ("(let [__import__ 1] 1)", "analysis", "reserved", False),
    ("(get {} :__globals__)", None, None, False),
    ('(getattr 1 "__class__")', "unbound", "getattr", False),
    ('(open "/etc/passwd")', "unbound", "open", False),
    ('(exec "import os")', "unbound", "exec", False),
]


@pytest.mark.parametrize(("source", "category", "fragment", "long_running"), HOSTILE)
async def test_hostile_program_ends_with_a_typed_error(
    source: str, category: str | None, fragment: str | None, long_running: bool
) -> None:
    with anyio.fail_after(30):
        result, ticks, seconds = await run_while_ticking(source)
    if category is None:  # harmless: plain data access, no escape
        assert result.error is None
        assert result.value is None
        return
    err = result.error
    assert err is not None, f"expected an error, got {result.value!r}"
    assert err.category == category, str(err)
    if category == "limit":
        assert fragment is not None
        if fragment.startswith("max_"):
            assert getattr(err, "limit", "").startswith(fragment), str(err)
        else:
            assert fragment in err.message
    else:
        assert fragment is not None and fragment in err.message
    assert seconds < LIMITS.timeout_ms / 1000 * 2
    if long_running:
        assert ticks > 1, "the event loop must keep running during a long program"


async def test_busy_program_times_out_and_the_loop_keeps_ticking() -> None:
    limits = Limits(timeout_ms=300, max_steps=10**9, max_loop_iterations=10**9)
    with anyio.fail_after(30):
        result, ticks, seconds = await run_while_ticking(
            "(loop [i 0] (recur (inc i)))", limits=limits
        )
    assert result.error is not None and result.error.category == "timeout"
    assert ticks > 5
    assert seconds < 3


async def test_a_waiting_program_times_out() -> None:
    async def never(args: dict[str, Any]) -> Any:
        await anyio.sleep_forever()

    with anyio.fail_after(30):
        result, _, _ = await run_while_ticking(
            '(call "never" {})', tools={"never": never}, limits=Limits(timeout_ms=100)
        )
    assert result.error is not None and result.error.category == "timeout"
    assert len(result.tool_calls) == 0


async def test_python_recursion_limit_becomes_a_limit_error() -> None:
    limits = Limits(max_depth=1_000_000)
    result, _, _ = await run_while_ticking("(defn f [n] (+ 1 (f n))) (f 1)", limits=limits)
    assert result.error is not None and result.error.category == "limit"


async def test_tool_call_flood_is_capped() -> None:
    calls = 0

    async def tool(args: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        return 1

    result, _, _ = await run_while_ticking(
        '(pmap #(call "t" {:i %}) (range 1000))', tools={"t": tool}
    )
    assert result.error is not None and result.error.category == "limit"
    assert calls <= LIMITS.max_tool_calls


async def test_output_flood_is_truncated_not_fatal() -> None:
    limits = Limits(max_output_chars=1000)
    result, _, _ = await run_while_ticking(
        '(dotimes [i 5000] (println "spam spam spam"))', limits=limits
    )
    assert result.error is None
    text = "".join(result.prints)
    assert len(text) <= 1000 + len("...[output truncated]")
    assert text.endswith("[output truncated]")


async def test_deeply_nested_source_is_a_parse_error() -> None:
    result, _, _ = await run_while_ticking("(" * 40_000 + ")" * 40_000)
    assert result.error is not None and result.error.category == "parse"


async def test_bombs_keep_memory_bounded() -> None:
    bombs = [
        '(loop [s "ab"] (recur (str s s)))',
        "(loop [v [1]] (recur (into v v)))",
        "(reduce (fn [v _] [v v]) [] (range 200))",
        "(range 1e9)",
        '(apply str (repeat 1e8 "x"))',
    ]
    tracemalloc.start()
    try:
        for source in bombs:
            result = await run(source, limits=LIMITS)
            assert result.error is not None and result.error.category == "limit", source
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000
