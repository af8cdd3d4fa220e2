"""Map and set builtins, with nil punning."""

from __future__ import annotations

import pytest

from .bi_helpers import check_error, check_value

MAPS = [
    ("(get {:a 1} :a)", "1"),
    ("(get {:a 1} :b)", "nil"),
    ("(get {:a 1} :b 0)", "0"),
    ("(get {:a nil} :a 0)", "nil"),
    ("(get nil :a)", "nil"),
    ("(get nil :a 5)", "5"),
    ("(get [1 2] 1)", "2"),
    ("(get [1 2] 9)", "nil"),
    ("(get [1 2] -1)", "nil"),
    ('(get "abc" 0)', '"a"'),
    ("(get #{:a} :a)", ":a"),
    ("(get 5 :a)", "nil"),
    ('(get {"k" 1} "k")', "1"),
    ("(get {[1 2] :v} [1 2])", ":v"),
    ("(get {:a 1} {:x 1})", "nil"),
    ("(get-in {:a {:b {:c 1}}} [:a :b :c])", "1"),
    ("(get-in {:a {:b 1}} [:a :x])", "nil"),
    ("(get-in {:a {:b 1}} [:a :x] :none)", ":none"),
    ("(get-in {:a [{:b 1} {:b 2}]} [:a 1 :b])", "2"),
    ("(get-in {:a 1} [])", "{:a 1}"),
    ("(get-in nil [:a])", "nil"),
    ("(get-in {:a nil} [:a] 0)", "nil"),
    ("(assoc {:a 1} :b 2)", "{:a 1 :b 2}"),
    ("(assoc {:a 1} :a 2)", "{:a 2}"),
    ("(assoc nil :a 1)", "{:a 1}"),
    ("(assoc {} :a 1 :b 2)", "{:a 1 :b 2}"),
    ("(assoc [1 2] 0 :x)", "[:x 2]"),
    ("(assoc [1 2] 2 3)", "[1 2 3]"),
    ("(assoc-in {} [:a :b] 1)", "{:a {:b 1}}"),
    ("(assoc-in nil [:a] 1)", "{:a 1}"),
    ("(assoc-in {:a {:x 0}} [:a :b] 1)", "{:a {:x 0 :b 1}}"),
    ("(assoc-in {:v [{:n 1}]} [:v 0 :n] 2)", "{:v [{:n 2}]}"),
    ("(update {:n 1} :n inc)", "{:n 2}"),
    ("(update {:n 1} :n + 10 5)", "{:n 16}"),
    ("(update {} :xs conj 1)", "{:xs [1]}"),
    ("(update nil :n (fnil inc 0))", "{:n 1}"),
    ("(update [1 2] 0 inc)", "[2 2]"),
    ("(update-in {:a {:n 1}} [:a :n] inc)", "{:a {:n 2}}"),
    ("(update-in {} [:a :b] (fnil inc 0))", "{:a {:b 1}}"),
    ("(update-in {:a {:n 1}} [:a :n] * 3)", "{:a {:n 3}}"),
    ("(dissoc {:a 1 :b 2} :a)", "{:b 2}"),
    ("(dissoc {:a 1} :x)", "{:a 1}"),
    ("(dissoc {:a 1 :b 2 :c 3} :a :b)", "{:c 3}"),
    ("(dissoc nil :a)", "nil"),
    ("(dissoc {:a 1})", "{:a 1}"),
    ("(merge {:a 1} {:b 2} {:a 3})", "{:a 3 :b 2}"),
    ("(merge {:a 1} nil)", "{:a 1}"),
    ("(merge)", "nil"),
    ("(merge nil nil)", "nil"),
    ("(merge-with + {:a 1 :b 2} {:a 10} {:a 100 :c 1})", "{:a 111 :b 2 :c 1}"),
    ("(merge-with into {:a [1]} {:a [2]})", "{:a [1 2]}"),
    ("(merge-with + nil {:a 1})", "{:a 1}"),
    ("(select-keys {:a 1 :b 2 :c 3} [:a :c :z])", "{:a 1 :c 3}"),
    ("(select-keys nil [:a])", "{}"),
    ("(keys {:a 1 :b 2})", "[:a :b]"),
    ("(keys {})", "nil"),
    ("(keys nil)", "nil"),
    ("(vals {:a 1 :b 2})", "[1 2]"),
    ("(vals nil)", "nil"),
    ("(find {:a 1} :a)", "[:a 1]"),
    ("(find {:a 1} :b)", "nil"),
    ("(find nil :a)", "nil"),
    ("(key (first {:a 1}))", ":a"),
    ("(val (first {:a 1}))", "1"),
    ("(update-vals {:a 1 :b 2} inc)", "{:a 2 :b 3}"),
    ("(update-vals nil inc)", "{}"),
    ("(update-keys {:a 1} name)", '{"a" 1}'),
    ("(rename-keys {:a 1 :b 2} {:a :x})", "{:b 2 :x 1}"),
    ("(set/rename-keys {:a 1 :b 2} {:a :b :b :a})", "{:b 1 :a 2}"),
    ("(clojure.set/rename-keys {:a 1} {:z :y})", "{:a 1}"),
    ("(rename-keys nil {:a :b})", "nil"),
]


@pytest.mark.parametrize(("src", "expected"), MAPS)
def test_maps(src: str, expected: str) -> None:
    check_value(src, expected)


SETS = [
    ("(union #{1 2} #{2 3})", "#{1 2 3}"),
    ("(union)", "#{}"),
    ("(union nil #{1})", "#{1}"),
    ("(union #{1} [2])", "#{1 2}"),
    ("(clojure.set/union #{1} #{2})", "#{1 2}"),
    ("(set/union #{1} #{2} #{3})", "#{1 2 3}"),
    ("(intersection #{1 2 3} #{2 3 4} #{3 2})", "#{2 3}"),
    ("(intersection #{1} nil)", "#{}"),
    ("(set/intersection #{1 2} #{2})", "#{2}"),
    ("(clojure.set/intersection #{1} #{1})", "#{1}"),
    ("(difference #{1 2 3} #{2} #{3})", "#{1}"),
    ("(difference #{1})", "#{1}"),
    ("(set/difference #{1 2} #{1})", "#{2}"),
    ("(clojure.set/difference #{1 2} #{1})", "#{2}"),
    ("(subset? #{1} #{1 2})", "true"),
    ("(subset? #{3} #{1 2})", "false"),
    ("(set/subset? #{} #{1})", "true"),
    ("(clojure.set/subset? #{1} #{1})", "true"),
    ("(superset? #{1 2} #{1})", "true"),
    ("(superset? #{1} #{1 2})", "false"),
    ("(set/superset? #{1} nil)", "true"),
    ("(clojure.set/superset? #{1} #{1})", "true"),
    ("(disj #{1 2 3} 2 3)", "#{1}"),
    ("(disj #{1} 5)", "#{1}"),
    ("(disj nil 1)", "nil"),
]


@pytest.mark.parametrize(("src", "expected"), SETS)
def test_sets(src: str, expected: str) -> None:
    check_value(src, expected)


ERRORS = [
    ("(assoc 5 :a 1)", "type", "assoc expects a map, vector or nil, got integer 5"),
    ("(assoc {} :a)", "arity", ""),
    ("(assoc {} :a 1 :b)", "arity", "key/value pairs"),
    ("(assoc [1] 5 0)", "type", "index 5 is out of range for a vector of 1"),
    ("(assoc-in {} :a 1)", "type", "assoc-in expects a non-empty vector of keys as the path"),
    ("(assoc-in {:a 5} [:a :b] 1)", "type", "assoc-in expects a map, vector or nil, got integer 5"),
    ("(update {:n 1} :n 5)", "type", "update expects a function"),
    ("(update {:n :x} :n inc)", "type", "inc expects a number, got keyword :x"),
    ("(update-in {} [] inc)", "type", "update-in expects a non-empty vector of keys"),
    ("(dissoc [1] 0)", "type", "dissoc expects a map, got vector [1]"),
    ("(merge {:a 1} [1])", "type", "merge expects a map, got vector [1]"),
    ("(merge-with + {:a 1} 5)", "type", "merge-with expects a map"),
    ("(select-keys [1] [0])", "type", "select-keys expects a map"),
    ("(keys [1 2])", "type", "keys expects a map, got vector [1 2]"),
    ("(vals :a)", "type", "vals expects a map"),
    ("(key 1)", "type", "key expects a map entry"),
    ("(val [1 2 3])", "type", "val expects a map entry"),
    ("(update-vals [1] inc)", "type", "update-vals expects a map"),
    ("(rename-keys [1] {})", "type", "rename-keys expects a map"),
    ("(union #{1} 5)", "type", "union expects sets, got integer 5"),
    ('(intersection "ab" #{1})', "type", "intersection expects sets"),
    ("(difference #{1} :a)", "type", "difference expects sets"),
    ("(subset? 1 #{1})", "type", "subset? expects sets"),
    ("(superset? #{1} 1)", "type", "superset? expects sets"),
    ("(disj [1] 1)", "type", "disj expects a set, got vector [1]"),
]


@pytest.mark.parametrize(("src", "category", "fragment"), ERRORS)
def test_map_set_errors(src: str, category: str, fragment: str) -> None:
    check_error(src, category, fragment)
