"""Higher-order builtins, and keywords, maps, sets and vectors used as functions."""

from __future__ import annotations

import pytest

from ptcflow.lisp import run_sync

from .bi_helpers import check_error, check_value

VALUES = [
    ("(map inc [1 2 3])", "[2 3 4]"),
    ("(map inc nil)", "[]"),
    ("(map :id [{:id 1} {:id 2} {}])", "[1 2 nil]"),
    ("(map + [1 2 3] [10 20])", "[11 22]"),
    ("(map vector [1 2] [:a :b] [true false])", "[[1 :a true] [2 :b false]]"),
    ("(map {:a 1 :b 2} [:a :c])", "[1 nil]"),
    ("(map #{1 2} [1 3])", "[1 nil]"),
    ("(map [10 20 30] [2 0])", "[30 10]"),
    ("(map (fn [[k v]] (str (name k) v)) {:a 1})", '["a1"]'),
    ('(map upper-case "ab")', '["A" "B"]'),
    ("(mapv inc [1])", "[2]"),
    ("(filter odd? [1 2 3 4 5])", "[1 3 5]"),
    ("(filter :ok [{:ok true :n 1} {:ok false :n 2} {:n 3}])", "[{:ok true :n 1}]"),
    ("(filter #{:a} [:a :b :a])", "[:a :a]"),
    ("(filter odd? nil)", "[]"),
    ("(filter (fn [[k v]] (> v 1)) {:a 1 :b 2})", "[[:b 2]]"),
    ("(filterv even? [1 2])", "[2]"),
    ("(remove odd? [1 2 3])", "[2]"),
    ("(remove nil? [1 nil 2])", "[1 2]"),
    ("(keep :a [{:a 1} {:b 2} {:a false}])", "[1 false]"),
    ("(keep-indexed (fn [i x] (when (odd? i) x)) [:a :b :c :d])", "[:b :d]"),
    ("(map-indexed vector [:a :b])", "[[0 :a] [1 :b]]"),
    ("(mapcat identity [[1 2] [3] nil])", "[1 2 3]"),
    ("(mapcat (fn [x] [x x]) [1 2])", "[1 1 2 2]"),
    ("(mapcat vector [1 2] [:a :b])", "[1 :a 2 :b]"),
    ("(reduce + [1 2 3])", "6"),
    ("(reduce + [])", "0"),
    ("(reduce + 10 [1 2 3])", "16"),
    ("(reduce + 5 nil)", "5"),
    ("(reduce max [3 9 2])", "9"),
    ("(reduce conj [] [1 2])", "[1 2]"),
    ("(reduce (fn [m [k v]] (assoc m v k)) {} {:a 1 :b 2})", "{1 :a 2 :b}"),
    ("(reduce + [7])", "7"),
    ("(reductions + [1 2 3])", "[1 3 6]"),
    ("(reductions + 10 [1 2])", "[10 11 13]"),
    ("(reductions + [])", "[0]"),
    ("(reductions conj [] [1 2])", "[[] [1] [1 2]]"),
    ("(reduce-kv (fn [acc k v] (+ acc v)) 0 {:a 1 :b 2})", "3"),
    ("(reduce-kv (fn [acc i v] (conj acc [i v])) [] [:x :y])", "[[0 :x] [1 :y]]"),
    ("(reduce-kv (fn [acc k v] acc) :init nil)", ":init"),
    ("(some even? [1 2 3])", "true"),
    ("(some :a [{:b 1} {:a 5}])", "5"),
    ("(some even? [1 3])", "nil"),
    ("(some #{3} [1 3])", "3"),
    ("(some even? nil)", "nil"),
    ("(every? odd? [1 3])", "true"),
    ("(every? odd? [])", "true"),
    ("(every? odd? [1 2])", "false"),
    ("(every? :a [{:a 1} {:a nil}])", "false"),
    ("(not-any? even? [1 3])", "true"),
    ("(not-any? even? [2])", "false"),
    ("(not-every? odd? [1 2])", "true"),
    ("(not-every? odd? [1 3])", "false"),
    ("(apply + [1 2 3])", "6"),
    ("(apply + 1 2 [3 4])", "10"),
    ("(apply max [4 9 2])", "9"),
    ("(apply str nil)", '""'),
    ("(apply hash-map [:a 1])", "{:a 1}"),
    ("((comp inc inc) 1)", "3"),
    ("((comp str +) 1 2)", '"3"'),
    ("((comp) 5)", "5"),
    ("((comp :b :a) {:a {:b 7}})", "7"),
    ("((partial + 10) 1 2)", "13"),
    ("((partial str) :x)", '":x"'),
    ("((complement even?) 3)", "true"),
    ("((constantly 7) 1 2 3)", "7"),
    ("((constantly nil))", "nil"),
    ("((juxt :a :b) {:a 1 :b 2})", "[1 2]"),
    ("((juxt inc dec) 5)", "[6 4]"),
    ("(identity :x)", ":x"),
    ("((fnil inc 0) nil)", "1"),
    ("((fnil inc 0) 5)", "6"),
    ("((fnil + 1 2) nil nil)", "3"),
    ("(update {} :n (fnil inc 0))", "{:n 1}"),
    ("((every-pred odd? pos?) 1 3)", "true"),
    ("((every-pred odd? pos?) 1 -3)", "false"),
    ("((some-fn :a :b) {:b 2})", "2"),
    ("((some-fn even?) 1)", "nil"),
    ("(run! inc [1 2])", "nil"),
    ("(dorun [1 2])", "nil"),
    ("(:a {:a 1})", "1"),
    ("(:a {:b 1} :default)", ":default"),
    ("(:a nil)", "nil"),
    ("(:a #{:a})", ":a"),
    ("({:a 1} :a)", "1"),
    ("({:a 1} :b 0)", "0"),
    ("(#{1 2} 2)", "2"),
    ("(#{1 2} 3)", "nil"),
    ("([:a :b] 1)", ":b"),
    ("(filter + [1])", "[1]"),
    ("(some inc [1])", "2"),
    ("(group-by + [1])", "{1 [1]}"),
]


@pytest.mark.parametrize(("src", "expected"), VALUES)
def test_hof_values(src: str, expected: str) -> None:
    check_value(src, expected)


ERRORS = [
    (
        "(map 5 [1])",
        "type",
        "map expects a function (or a keyword, map, set or vector), got integer 5",
    ),
    ("(map inc 5)", "type", "map expects a collection, got integer 5"),
    ('(map inc ["a"])', "type", 'inc expects a number, got string "a"'),
    ("(filter nil [1])", "type", "filter expects a function"),
    ("(filter odd? :a)", "type", "filter expects a collection"),
    ("(remove 1 [1])", "type", "remove expects a function"),
    ("(reduce 1 [1 2])", "type", "reduce expects a function"),
    ("(reduce + :x)", "type", "reduce expects a collection"),
    ("(reduce-kv + 0 5)", "type", "reduce-kv expects a map or vector"),
    ("(some 1 [1])", "type", "some expects a function"),
    ("(every? 1 [1])", "type", "every? expects a function"),
    ("(apply + 1)", "type", "apply expects a collection"),
    ("(comp 1)", "type", "comp expects a function"),
    ("(partial 1)", "type", "partial expects a function"),
    ("(juxt 1)", "type", "juxt expects a function"),
    ("(mapcat identity [1])", "type", "mapcat expects a collection"),
    ("([1 2] 5)", "type", "index 5 is out of bounds for a vector of 2"),
    ("(keep 3 [1])", "type", "keep expects a function"),
    ("(map inc [1] [2])", "arity", "inc called with 2 arguments"),
    ("(reduce inc [1 2])", "arity", "inc called with 2 arguments"),
    ("(reduce inc [])", "arity", "inc called with 0 arguments"),
    ("(reductions inc [1 2])", "arity", "inc called with 2 arguments"),
    ("(reductions + 5)", "type", "reductions expects a collection"),
    ("(reduce :a [])", "arity", ":a called with 0 arguments"),
    ("(sort inc [2 1])", "arity", "inc called with 2 arguments"),
    ("(sort-by :a inc [{:a 2} {:a 1}])", "arity", "inc called with 2 arguments"),
    ("(sum-by inc [[1]])", "type", "inc expects a number"),
    ("(merge-with inc {:a 1} {:a 2})", "arity", "inc called with 2 arguments"),
    ("(reduce-kv {:a 1} 0 {:a 1})", "arity", "a map used as a function called with 3 arguments"),
    ("(apply [1 2] [])", "arity", "a vector used as a function called with 0 arguments"),
    ("(map #{1} [1] [2] [3])", "arity", "a set used as a function called with 3 arguments"),
    ("(every? (fn [a b] a) [1])", "arity", ""),
]


@pytest.mark.parametrize(("src", "category", "fragment"), ERRORS)
def test_hof_errors(src: str, category: str, fragment: str) -> None:
    check_error(src, category, fragment)


# (reduce + ...) sums without calling + per element; group-by with a keyword looks up inline.
SUM_VALUES = [
    ("(reduce + [1 2 3])", "6"),
    ("(reduce + 10 [1 2 3])", "16"),
    ("(reduce + [1 2.5 3])", "6.5"),
    ("(reduce + [])", "0"),
    ("(reduce + [7])", "7"),
    ("(reduce + 0.5 [])", "0.5"),
    ("(reduce + [9223372036854775807 -1 1])", "9223372036854775807"),
    ("(reduce + [1e308 1e308])", "##Inf"),
    (
        "(group-by :k [{:k 1 :v 1} {:v 2} {:k 1 :v 3}])",
        "{1 [{:k 1 :v 1} {:k 1 :v 3}] nil [{:v 2}]}",
    ),
    ("(group-by :k [#{:k} 5])", "{:k [#{:k}] nil [5]}"),
]


@pytest.mark.parametrize(("src", "expected"), SUM_VALUES)
def test_sum_and_keyword_group_by_values(src: str, expected: str) -> None:
    check_value(src, expected)


@pytest.mark.parametrize(
    ("src", "fragment"),
    [
        ("(reduce + [9223372036854775807 1])", "integer overflow in +"),
        ('(reduce + [1 "a"])', "+"),
        ("(reduce + [1 true])", "+"),
        ("(reduce + [nil])", ""),
    ],
)
def test_sum_errors_are_the_builtins(src: str, fragment: str) -> None:
    via_fn = run_sync(src.replace("(reduce +", "(reduce (fn [a b] (+ a b))"))
    result = run_sync(src)
    if src == "(reduce + [nil])":  # one element: returned as is, + never runs
        assert result.error is None and result.value is None
        return
    assert result.error is not None and fragment in result.error.message
    assert via_fn.error is not None
    assert result.error.category == via_fn.error.category
