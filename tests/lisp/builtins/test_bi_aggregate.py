"""Aggregation helpers, output capture, and budget checks on growing results."""

from __future__ import annotations

import pytest

from ptcflow.lisp import run_sync
from ptcflow.lisp.limits import Limits

from .bi_helpers import check_error, check_value

VALUES = [
    ("(sum [1 2 3])", "6"),
    ("(sum [])", "0"),
    ("(sum nil)", "0"),
    ("(sum [1 2.5])", "3.5"),
    ("(sum #{1 2})", "3"),
    ("(avg [1 2 3 4])", "2.5"),
    ("(avg [2])", "2.0"),
    ("(avg [])", "nil"),
    ("(avg nil)", "nil"),
    ("(sum-by :amount [{:amount 5} {:amount 7}])", "12"),
    ("(sum-by :amount [{:amount 5} {}])", "5"),
    ("(sum-by :amount [])", "0"),
    ("(sum-by count [[1] [1 2]])", "3"),
    ("(max-by :n [{:n 1} {:n 3} {:n 2}])", "{:n 3}"),
    ("(max-by :n [{:n 3 :id 1} {:n 3 :id 2}])", "{:n 3 :id 1}"),
    ("(max-by :n [{:x 1} {:n 1}])", "{:n 1}"),
    ("(max-by :n [])", "nil"),
    ('(max-by :name [{:name "b"} {:name "a"}])', '{:name "b"}'),
    ("(min-by :n [{:n 1} {:n -3} {:n 2}])", "{:n -3}"),
    ("(min-by :n nil)", "nil"),
    ("(min-by count [[1 2] [1]])", "[1]"),
    ("(pluck :id [{:id 1} {:id 2} {}])", "[1 2 nil]"),
    ("(pluck :id nil)", "[]"),
    ("(pluck 0 [[1 2] [3]])", "[1 3]"),
    ('(println "a" 1)', "nil"),
    ("(print 1)", "nil"),
    ('(prn "a")', "nil"),
    ('(pr-str "a" :b [1 "c"])', '"\\"a\\" :b [1 \\"c\\"]"'),
    ("(pr-str nil)", '"nil"'),
    ("(pr-str)", '""'),
]


@pytest.mark.parametrize(("src", "expected"), VALUES)
def test_aggregate_values(src: str, expected: str) -> None:
    check_value(src, expected)


ERRORS = [
    ('(sum [1 "2"])', "type", 'sum expects numbers, got string "2"'),
    ("(sum [1 true])", "type", "sum expects numbers, got boolean true"),
    ("(sum 5)", "type", "sum expects a collection"),
    ("(avg [nil])", "type", "avg expects numbers, got nil"),
    ('(sum-by :a [{:a "x"}])', "type", "sum-by expects numbers from the key function"),
    ("(sum-by 5 [1])", "type", "sum-by expects a function"),
    ("(max-by :a [{:a [1]}])", "type", "max-by expects numbers or strings"),
    ('(max-by :a [{:a 1} {:a "x"}])', "type", "cannot compare a string key with a number key"),
    ("(min-by :a 5)", "type", "min-by expects a collection"),
    ("(pluck :a 5)", "type", "pluck expects a collection"),
]


@pytest.mark.parametrize(("src", "category", "fragment"), ERRORS)
def test_aggregate_errors(src: str, category: str, fragment: str) -> None:
    check_error(src, category, fragment)


def test_output_is_captured_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_sync(
        '(do (println "total:" 3 nil [1 "a" {:k "v"}]) (print "x" :k) (prn "q" ["a"]) 7)'
    )
    assert result.value == 7
    assert "".join(result.prints) == 'total: 3 nil [1 a {:k v}]\nx :k"q" ["a"]\n'
    assert capsys.readouterr().out == ""


def test_output_is_capped() -> None:
    result = run_sync("(dotimes [i 100] (println i))", limits=Limits(max_output_chars=20))
    assert result.error is None
    text = "".join(result.prints)
    assert text.startswith("0\n1\n2\n")
    assert text.endswith("...[output truncated]")
    assert len(text) <= 20 + len("...[output truncated]")


GROWTH = [
    ("(range 1e12)", "range would build 1000000000000 elements"),
    ("(range 0 1e15 0.5)", "range would build"),
    ("(repeat 1e9 :x)", "repeat would build 1000000000 elements"),
    ("(vec (range 200))", "range would build 200"),
    ("(concat (range 60) (range 60))", "concat would build 120"),
    ("(into (vec (range 60)) (range 60))", "into would build 120"),
    ("(conj (vec (range 100)) 1)", "conj would build 101"),
    ("(cons 1 (range 100))", "cons would build 101"),
    ("(mapcat (fn [x] (range 60)) [1 2])", "mapcat would build 120"),
    ("(interleave (range 60) (range 60))", "interleave would build 120"),
    ("(interpose 0 (range 60))", "interpose would build 119"),
    ("(flatten [(range 60) [(range 60)]])", "flatten would build"),
    (
        "(merge (zipmap (range 60) (range 60)) (zipmap (range 60 120) (range 60)))",
        "merge would build",
    ),
    ("(union (set (range 60)) (set (range 60 120)))", "union would build 120"),
    ("(assoc (zipmap (range 100) (range 100)) :k 1)", "assoc would build 101"),
    ('(split (apply str (repeat 99 ",")) #"x|,")', ""),
]


@pytest.mark.parametrize(("src", "fragment"), GROWTH)
def test_growing_results_hit_the_collection_limit(src: str, fragment: str) -> None:
    result = run_sync(src, limits=Limits(max_collection_size=100))
    if not fragment:  # split of 99 commas gives [] (all parts empty): fine either way
        assert result.error is None or result.error.category == "limit"
        return
    check_error(src, "limit", fragment, Limits(max_collection_size=100))


def test_memory_estimate_stops_repeated_allocation() -> None:
    limits = Limits(max_collection_size=100_000, max_memory_bytes=1_000_000)
    check_error(
        "(count (map (fn [i] (count (range 50000))) (range 100)))", "limit", "bytes", limits
    )


GROWING_LOOPS = [
    "(count (reduce conj [] (range 5000)))",
    "(count (reduce (fn [acc x] (concat acc [x])) [] (range 3000)))",
    "(count (reduce (fn [m x] (assoc m x x)) {} (range 3000)))",
    "(count (reduce (fn [m x] (merge m {x x})) {} (range 3000)))",
    "(count (reduce (fn [s x] (union s #{x})) #{} (range 3000)))",
    "(count (reduce (fn [v x] (into v [x])) [] (range 3000)))",
]


@pytest.mark.parametrize("src", GROWING_LOOPS)
def test_building_a_collection_in_a_loop_is_not_charged_quadratically(src: str) -> None:
    result = run_sync(src)
    assert result.error is None, result.error
    assert result.value in (5000, 3000)


def test_partition_with_small_steps_is_charged_for_every_chunk() -> None:
    check_error("(count (partition 1000 1 (range 100000)))", "limit", "partition", None)
    result = run_sync(
        "(count (partition-all 2 1 ctx/xs))",
        ctx={"xs": "x" * 30},  # (a list of 30 would already exceed the limit as ctx)
        limits=Limits(max_collection_size=20),
    )
    assert result.error is not None and "partition-all would build 30" in result.error.message
