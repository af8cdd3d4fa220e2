"""Every builtin's work is charged as it happens: printing, equality, hashing, sorting and
walking count the elements they visit as steps, and strings are refused before they are
built. Values that share structure (cheap to build, huge to walk) end in a ``limit`` error."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from ptcflow.lisp import Keyword, Limits, run_sync
from ptcflow.lisp.limits import Budget, active_budget

from .helpers import ev

# Small step limits keep these fast (well under a second each); the walks below would take
# minutes (or forever) uncharged. The clock is generous so that on a loaded machine only the
# charged work, not the time limit, can end them.
LIMITS = Limits(timeout_ms=20_000, max_steps=200_000)
DAG = "(reduce (fn [v _] [v v]) [1] (range 64))"  # 2**64 leaves, 64 objects
WIDE = "(let [a (vec (range 100000))] (vec (repeat 100000 a)))"  # 10**10 leaves

HUGE_WALKS = [
    (f"(count (str {WIDE}))", "max_"),
    (f"(count (pr-str {WIDE}))", "max_"),
    (f'(count (format "%s" {WIDE}))', "max_"),
    (f"(count (str {DAG}))", "max_"),
    (f"(count (flatten {DAG}))", "max_"),
    (f"(let [v {DAG} w {DAG}] (= v w))", "max_steps"),
    (f"(let [v {DAG} w {DAG}] (not= v w))", "max_steps"),
    (f"(frequencies [{DAG}])", "max_steps"),
    (f"(count (distinct [{DAG}]))", "max_steps"),
    (f"(count (set [{DAG}]))", "max_steps"),
    (f"(count (hash-set {DAG}))", "max_steps"),
    (f"{{{DAG} 1}}", "max_steps"),
    (f"(get {{}} {DAG})", "max_steps"),
    (f"(contains? #{{}} {DAG})", "max_steps"),
    (f"(group-by identity [{DAG}])", "max_steps"),
    (f"(let [v {DAG} w {DAG}] (sort [v w]))", "max_steps"),
    (f"(let [v {DAG} w {DAG}] (compare v w))", "max_steps"),
    (f"(let [v {DAG} w {DAG}] (dedupe [v w]))", "max_steps"),
    (f"(postwalk identity {DAG})", "max_steps"),
    (f"(prewalk identity {DAG})", "max_steps"),
    (f"(pmap (fn [_] (frequencies [{DAG}])) [1 2])", "max_steps"),
    (f"(join [{DAG}])", "max_"),
]


@pytest.mark.parametrize(("source", "limit"), HUGE_WALKS)
def test_walking_a_huge_value_ends_in_a_limit_error(source: str, limit: str) -> None:
    start = time.perf_counter()
    result = run_sync(source, limits=LIMITS)
    seconds = time.perf_counter() - start
    assert result.error is not None, f"expected an error, got {result.value!r:.80}"
    assert result.error.category == "limit", str(result.error)
    assert getattr(result.error, "limit", "").startswith(limit), str(result.error)
    assert seconds < LIMITS.timeout_ms / 1000


CHEAP = [
    # identity and scalars are never walked
    (f"(let [v {DAG}] (= v v))", True),
    (f"(let [v {DAG}] (identical? v {DAG}))", False),
    (f"(case {DAG} 1 :one :other)", ":other"),
    (f"(count (println {DAG}))", 0),  # output is cut at max_output_chars, not walked
]


@pytest.mark.parametrize(("source", "expected"), CHEAP)
def test_cheap_operations_on_a_huge_value_stay_cheap(source: str, expected: object) -> None:
    value = ev(source, limits=LIMITS)
    if isinstance(expected, str) and expected.startswith(":"):
        expected = Keyword(expected[1:])
    assert value == expected


def test_printing_counts_each_element_as_a_step() -> None:
    small = run_sync("(count (vec (range 10000)))")
    printed = run_sync("(count (str (vec (range 10000))))")
    assert small.error is None and printed.error is None
    limits = Limits(max_steps=15_000)  # (range 10000) counts 10,000 steps, printing more
    assert run_sync("(count (str (vec (range 10000))))", limits=limits).error is not None
    assert run_sync("(count (vec (range 10000)))", limits=limits).error is None


STRING_BOMBS = [
    # 20,000 x 100,000 characters would be 2 GB: refused at max_string_length (1 MB)
    '(count (join (repeat 20000 (apply str (repeat 100000 "x")))))',
    '(count (apply str (repeat 20000 (apply str (repeat 100000 "x")))))',
    '(count (join "," (repeat 20000 (apply str (repeat 100000 "x")))))',
    '(let [s (apply str (repeat 100000 "x"))] (count (str s s s s s s s s s s s)))',
    '(count (pr-str (repeat 20000 (apply str (repeat 100000 "x")))))',
    '(let [s (apply str (repeat 100000 "x"))] (count (format "%s%s%s%s%s%s%s%s%s%s%s" s s s s s s s s s s s)))',
    '(count (replace (apply str (repeat 100000 "x")) #"x" "$0$0$0$0$0$0$0$0$0$0$0"))',
    '(count (replace (apply str (repeat 100000 "x")) "x" "xxxxxxxxxxx"))',
    '(let [s (apply str (repeat 100000 "x"))] (count (replace "ab" #"a" (fn [_] (str s s s s s s s s s s s)))))',
]


@pytest.mark.parametrize("source", STRING_BOMBS)
def test_strings_are_refused_before_they_are_built(source: str) -> None:
    tracemalloc.start()
    try:
        result = run_sync(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.error is not None and getattr(result.error, "limit", "") == "max_string_length"
    assert peak < 30_000_000, f"peak {peak} bytes"  # a few 1 MB strings, never 2 GB


def test_a_comparator_counts_a_step_per_comparison() -> None:
    # (partial compare) is a builtin closure: its calls are no program steps of their own.
    source = "(count (sort (partial compare) (map #(mod (* % 7919) 100003) (range 50000))))"
    assert ev(source) == 50000
    result = run_sync(source, limits=Limits(max_steps=200_000))
    assert result.error is not None and getattr(result.error, "limit", "") == "max_steps"


def test_inconsistent_and_slow_comparators_end() -> None:
    shuffled = "(map #(mod (* % 7919) 5003) (range 5000))"
    assert ev(f"(count (sort (fn [a b] (odd? (+ a b))) {shuffled}))") == 5000
    result = run_sync(f"(sort (fn [a b] (dotimes [i 100] i) (< a b)) {shuffled})")
    assert result.error is not None and result.error.category in ("limit", "timeout")


def test_output_of_a_huge_value_is_cut_without_walking_it() -> None:
    result = run_sync(f"(println {WIDE}) (prn {DAG}) :done", limits=Limits(max_output_chars=100))
    assert result.error is None and result.value == Keyword("done")
    assert sum(len(p) for p in result.prints) <= 100 + len("...[output truncated]") + 1


def test_the_budget_is_active_only_in_the_program_greenlet() -> None:
    assert active_budget() is None
    assert ev("(= [[1] [2]] [[1] [2]])") is True
    assert active_budget() is None  # the run does not leak its budget into the caller


def test_a_walk_outside_a_run_is_not_charged() -> None:
    from ptcflow.lisp._colls import equal, vec

    budget = Budget(Limits())
    assert equal(vec([vec([1])]), vec([vec([1])])) and budget.steps == 0


BULK_IN_A_LOOP = [
    # one evaluation step each, but 100,000 elements of work: uncharged, the clock was read
    # once every 1,024 steps, so these ran 40 times over their time limit
    "(let [v (vec (range 100000))] (dotimes [i 1000] (frequencies v)))",
    "(let [v (vec (range 100000))] (dotimes [i 1000] (sort > v)))",
    "(let [v (vec (range 100000))] (dotimes [i 1000] (mapv inc v)))",
    "(let [v (vec (range 100000))] (dotimes [i 1000] (reduce + v)))",
    "(let [v (vec (range 100000))] (dotimes [i 1000] (apply max v)))",
    "(let [v (vec (range 100000))] (dotimes [i 1000] (count (set v))))",
    "(loop [xs (vec (range 100000))] (if (seq xs) (recur (rest xs)) :done))",
    '(let [s (apply str (repeat 100000 "x"))] (dotimes [i 90000] (re-find #"y" s)))',
]


@pytest.mark.parametrize("source", BULK_IN_A_LOOP)
def test_bulk_builtins_in_a_loop_keep_to_the_limits(source: str) -> None:
    limits = Limits(timeout_ms=500)
    start = time.perf_counter()
    result = run_sync(source, limits=limits)
    seconds = time.perf_counter() - start
    assert result.error is not None and result.error.category in ("limit", "timeout")
    # uncharged, these ran 40 times over; charged, they end near the limit (one bulk step
    # over it: 1.1 s once with another process taking a core, so the bound leaves room)
    assert seconds < 4 * limits.timeout_ms / 1000, f"{seconds:.2f} s"
