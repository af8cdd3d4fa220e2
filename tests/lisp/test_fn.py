"""Program functions: leaf bodies skip the call-depth bookkeeping, limits still hold."""

from __future__ import annotations

import pytest

from ptcflow.lisp import Limits, _ast as A, analyze
from ptcflow.lisp._fn import is_leaf
from ptcflow.lisp.errors import LimitExceeded

from .helpers import err, ev


def _fn_body(source: str) -> A.Node:
    node = analyze(source).body
    assert isinstance(node, A.FnNode)
    body = node.arities[0].body
    assert body is not None
    return body


@pytest.mark.parametrize(
    "source",
    [
        "(fn [x] (* x x))",
        "(fn [o] (> (:amount o) 100))",
        "(fn [x y] (if (even? x) (str x y) [x (get y :a)]))",
        "(fn [x] (and (some? x) (not= x 1)))",
        "(fn [] 42)",
    ],
)
def test_bodies_that_call_no_program_function_are_leaves(source: str) -> None:
    assert is_leaf(_fn_body(source))


@pytest.mark.parametrize(
    "source",
    [
        "(fn f [x] (f x))",  # recursion
        "(fn [g x] (g x))",  # calls a value
        "(fn [xs] (map inc xs))",  # a builtin that calls functions
        "(fn [x] (let [y x] y))",  # bindings may destructure: not inspected
        '(fn [x] (call "t" {:x x}))',  # a tool call suspends
    ],
)
def test_bodies_that_may_call_functions_are_not_leaves(source: str) -> None:
    assert not is_leaf(_fn_body(source))


def test_leaf_functions_compute_like_any_function() -> None:
    assert ev("(->> (range 10) (map #(* % %)) (filter even?) (reduce +))") == 120
    assert ev("(defn sq [x] (* x x)) [(sq 3) (map sq [1 2])]") == [9, [1, 4]]
    assert ev("(let [k 10 add (fn [x] (+ x k))] (mapv add [1 2]))") == [11, 12]


def test_leaf_function_arity_errors_name_the_function() -> None:
    e = err("(defn sq [x] (* x x)) (sq 1 2)")
    assert e.category == "arity" and "sq" in e.message


def test_leaf_calls_still_count_steps() -> None:
    e = err("(mapv #(* % %) (range 5000))", limits=Limits(max_steps=1000))
    assert isinstance(e, LimitExceeded) and e.limit == "max_steps"


def test_recursion_through_a_non_leaf_is_still_bounded() -> None:
    e = err("(defn f [n] (if (> n 0) (+ 1 (f (dec n))) 0)) (f 500)", limits=Limits(max_depth=50))
    assert isinstance(e, LimitExceeded) and e.limit == "max_depth"


def test_map_and_filter_run_one_argument_leaf_bodies_themselves() -> None:
    # Same results, captured values included, as calling the function per element.
    assert ev("(let [k 3] (mapv (fn [x] (* x k)) [1 2]))") == [3, 6]
    assert ev("(let [k 3] (filterv #(> % k) (range 6)))") == [4, 5]
    assert ev("(filter #(:ok %) [{:ok true} {:ok false} {} {:ok 0}])") == [{"ok": True}, {"ok": 0}]
    assert ev("(map #(+ %1 %2) [1 2] [10 20])") == [11, 22]  # two args: plain calls
    assert ev("(filter #(> % 1) #{1 2 3})") is not None


def test_leaf_bodies_in_map_and_filter_keep_errors_and_limits() -> None:
    e = err("(filter #(> (:n %) 1) [{:n 1} {:n :x}])")
    assert e.category == "type" and (e.line, e.column) == (1, 9)  # the #( of the body
    e = err("(mapv #(* % %) (range 5000))", limits=Limits(max_steps=1000))
    assert isinstance(e, LimitExceeded) and e.limit == "max_steps"
    e = err("(filterv #(> % 1) (range 5000))", limits=Limits(max_steps=1000))
    assert isinstance(e, LimitExceeded) and e.limit == "max_steps"
