"""Destructuring in let, fn, loop, for and doseq: every shape, nested."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import K, err, ev

SHAPES = [
    # vectors
    ("(let [[a b] [1 2]] [a b])", [1, 2]),
    ("(let [[a b] [1]] [a b])", [1, None]),
    ("(let [[a b] nil] [a b])", [None, None]),
    ("(let [[a _ c] [1 2 3]] [a c])", [1, 3]),
    ("(let [[_ _ c] [1 2 3]] c)", 3),
    ("(let [[a & r] [1 2 3]] [a r])", [1, [2, 3]]),
    ("(let [[a & r] [1]] [a r])", [1, None]),
    ("(let [[& r] []] r)", None),
    ("(let [[a :as all] [1 2]] [a all])", [1, [1, 2]]),
    ("(let [[a & r :as all] [1 2]] [a r all])", [1, [2], [1, 2]]),
    ('(let [[a b] "xy"] [a b])', ["x", "y"]),
    ("(let [[[a b] c] [[1 2] 3]] [a b c])", [1, 2, 3]),
    ("(let [[a [b [c]]] [1 [2 [3]]]] [a b c])", [1, 2, 3]),
    ("(let [[a & [b c]] [1 2 3]] [a b c])", [1, 2, 3]),
    ("(let [[k v] (first {:a 1})] [k v])", [K("a"), 1]),
    ("(let [[x y] (range 5)] (+ x y))", 1),
    # maps
    ("(let [{a :a} {:a 1}] a)", 1),
    ("(let [{a :a b :b} {:a 1}] [a b])", [1, None]),
    ("(let [{:keys [a b]} {:a 1 :b 2}] [a b])", [1, 2]),
    ("(let [{:keys [a b] :or {b 9}} {:a 1}] [a b])", [1, 9]),
    ("(let [{:keys [a] :or {a 9}} {:a nil}] a)", None),
    ("(let [{:keys [a] :or {a 9}} nil] a)", 9),
    ('(let [{:strs [a b]} {"a" 1 "b" 2}] (+ a b))', 3),
    ("(let [{:keys [a] :as m} {:a 1 :z 2}] [a m])", [1, {"a": 1, "z": 2}]),
    ('(let [{x "x"} {"x" 5}] x)', 5),
    ("(let [{x 0} {0 :zero}] x)", K("zero")),
    ("(let [{:keys [user/id]} {:user/id 7}] id)", 7),
    ("(let [{[a b] :pair} {:pair [1 2]}] (+ a b))", 3),
    ("(let [{{:keys [c]} :b} {:b {:c 3}}] c)", 3),
    ("(let [{:keys [a]} {}] a)", None),
    ("(let [[{:keys [a]} {:keys [b]}] [{:a 1} {:b 2}]] [a b])", [1, 2]),
    ("(let [{:keys [a b] :or {a 1 b (+ 1 1)}} {}] [a b])", [1, 2]),
    # fn params
    ("((fn [[a b]] (+ a b)) [1 2])", 3),
    ("((fn [{:keys [x]}] x) {:x 4})", 4),
    ("((fn [a [b c] & {:keys [d]}] [a b c d]) 1 [2 3] :d 4)", [1, 2, 3, 4]),
    ("((fn [& [a b]] [a b]) 1 2)", [1, 2]),
    ("(defn f [{:keys [n] :or {n 1}}] n) [(f {}) (f {:n 5})]", [1, 5]),
    ("(map (fn [[k v]] (str k v)) {:a 1})", [":a1"]),
    ("(map (fn [{:keys [id]}] id) [{:id 1} {:id 2}])", [1, 2]),
    ("(reduce (fn [acc [k v]] (+ acc v)) 0 {:a 1 :b 2})", 3),
    # loop with destructuring and recur
    ("(loop [[h & t] [1 2 3] acc 0] (if h (recur t (+ acc h)) acc))", 6),
    ("(loop [{:keys [n]} {:n 0}] (if (< n 3) (recur {:n (inc n)}) n))", 3),
    (
        "(defn f [[a & more] acc] (if a (recur more (conj acc (* a a))) acc)) (f [1 2 3] [])",
        [1, 4, 9],
    ),
    # for / doseq
    ("(for [[a b] [[1 2] [3 4]]] (+ a b))", [3, 7]),
    ("(for [{:keys [x]} [{:x 1} {:x 2}] :let [[y] [x]]] y)", [1, 2]),
    ("(doseq [[a b] [[1 2]]] (println a b))", None),
]


@pytest.mark.parametrize(("source", "expected"), SHAPES)
def test_destructuring(source: str, expected: Any) -> None:
    assert ev(source) == expected


ERRORS = [
    ("(let [[a b] 5] a)", "destructure", "vector binding"),
    ("(let [[a b] {:a 1}] a)", None, None),
    ("(let [{:keys [a]} 5] a)", "destructure", "map binding"),
    ("(let [{:keys [a]} [1 2 3]] a)", "destructure", "map binding"),
    ('(let [{:keys [a]} "str"] a)', "destructure", "map binding"),
    ("(let [[a & b c] [1 2]] a)", "analysis", "nothing but :as"),
    ("(let [[a &] [1]] a)", "analysis", "& must be followed"),
    ("(let [{:keys a} {}] a)", "analysis", ":keys takes a vector"),
    ("(let [{:keys [a] :or [a 1]} {}] a)", "analysis", ":or takes a map"),
    ("(let [{:keys [a] :or {z 1}} {}] a)", "analysis", ":or names z"),
    ("(let [{a b} {}] a)", "analysis", "constants"),
    ("(let [[a :as] [1]] a)", "analysis", ":as must be followed"),
    ("(let [1 2] 3)", "analysis", "cannot bind"),
    ("(let [ctx/x 2] 3)", "analysis", "cannot contain /"),
    ("(let [if 2] 3)", "analysis", "special form"),
    ("(let [nil 2] 3)", "analysis", "cannot bind"),
    ("(let [x] x)", "analysis", "name-value pairs"),
    ("(let (x 1) x)", "analysis", "name-value pairs"),
    ("((fn [[a]] a) 5)", "destructure", "vector binding"),
]


@pytest.mark.parametrize(("source", "category", "fragment"), ERRORS)
def test_destructuring_errors(source: str, category: str | None, fragment: str | None) -> None:
    if category is None:  # a map destructured as a vector gives its entries
        assert ev(source) == [K("a"), 1]
        return
    e = err(source)
    assert e.category == category
    assert fragment in e.message
    assert e.line == 1


# Map patterns without :or store plain names directly; with :or every entry binds in order.
PLAIN_MAP = [
    ("(let [{:keys [a b c]} {:a 1 :c 3}] [a b c])", [1, None, 3]),
    ("(let [{a :a [x y] :v :as m} {:a 1 :v [2 3]}] [a x y (count m)])", [1, 2, 3, 2]),
    ('(let [{:strs [a] :keys [b]} {"a" 1 :b 2}] [a b])', [1, 2]),
    ("(defn f [& {:keys [a b]}] [a b]) (f :b 2 :a 1)", [1, 2]),
    ("(let [{:keys [a b] :or {b 7}} {:a 1}] [a b])", [1, 7]),
    ('(map (fn [{:keys [first last]}] (str first " " last)) [{:first "A" :last "B"}])', ["A B"]),
]


@pytest.mark.parametrize(("source", "expected"), PLAIN_MAP)
def test_map_patterns_with_and_without_defaults(source: str, expected: Any) -> None:
    assert ev(source) == expected


def test_str_still_refuses_strings_over_the_limit() -> None:
    from ptcflow.lisp import Limits

    e = err('(str "ab" "cd" "ef")', limits=Limits(max_string_length=5))
    assert (e.category == "limit" and "max_string_length" not in e.message) or "str" in e.message
