"""The reference implementation's extensions, the Clojure functions added with them, the Java
names models write, and Clojure's data semantics (issue 18)."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.lisp import Keyword, Limits, run_sync

from .bi_helpers import check_error, check_value

ROWS = '[{:id 1 :age 30 :tags ["a" "b"] :user {:id 7}} {:id 2 :age 12} {:id 3 :age nil}]'

CASES = [
    # where and the combinators
    (f"(map :id (filter (where :age > 18) {ROWS}))", "[1]"),
    (f"(map :id (filter (where :age < 18) {ROWS}))", "[2]"),  # nil never matches an ordering
    (f"(map :id (filter (where :age >= 12) {ROWS}))", "[1 2]"),
    (f"(map :id (filter (where :age <= 12) {ROWS}))", "[2]"),
    (f"(map :id (filter (where :age = nil) {ROWS}))", "[3]"),
    (f"(map :id (filter (where :age not= nil) {ROWS}))", "[1 2]"),
    (f'(map :id (filter (where :tags includes "b") {ROWS}))', "[1]"),
    (f"(map :id (filter (where :id in [2 3]) {ROWS}))", "[2 3]"),
    (f"(map :id (filter (where [:user :id] = 7) {ROWS}))", "[1]"),
    (f"(map :id (filter (where :tags) {ROWS}))", "[1]"),
    (f"(map :id (filter (all-of (where :age) (where :age < 20)) {ROWS}))", "[2]"),
    (f"(map :id (filter (any-of (where :id = 1) (where :id = 3)) {ROWS}))", "[1 3]"),
    (f"(map :id (filter (none-of (where :age)) {ROWS}))", "[3]"),
    ("[((all-of) 1) ((any-of) 1) ((none-of) 1)]", "[true false true]"),
    (f"(find (where :id = 2) {ROWS})", "{:id 2 :age 12}"),
    ("(find even? [1 3 4 6])", "4"),
    ("(find {:a 1} :a)", "[:a 1]"),  # Clojure's find wins for maps
    ("(find [10 20] 1)", "[1 20]"),
    # aggregation
    ("(avg-by :x [{:x 1} {:x 2} {:y 3}])", "1.5"),
    ("(avg-by :x [])", "nil"),
    ("(distinct-by :k [{:k 1 :v 1} {:k 1 :v 2} {:k 2 :v 3}])", "[{:k 1 :v 1} {:k 2 :v 3}]"),
    ("(zip [1 2 3] [:a :b])", "[[1 :a] [2 :b]]"),
    ("(combinations [1 2 3] 2)", "[[1 2] [1 3] [2 3]]"),
    ("(combinations [1 2] 3)", "[]"),
    ("(entries {:b 2 :a 1})", "[[:a 1] [:b 2]]"),
    ("(entries nil)", "[]"),
    # strings and numbers
    ('(extract #"(\\d+)-(\\d+)" "a 12-34")', '"12"'),
    ('(extract #"(\\d+)-(\\d+)" "a 12-34" 2)', '"34"'),
    ('(extract #"\\d+" "a 12")', '"12"'),
    ('(extract #"z" "a")', "nil"),
    ('(extract-int #"id=(\\d+)" "id=42")', "42"),
    ('(extract-int #"id=(\\w+)" "id=x" 1 -1)', "-1"),
    ('[(parse-int "42") (parse-int " -7 ") (parse-int "4.2") (parse-int "x")]', "[42 -7 nil nil]"),
    ("[(trunc 2.7) (trunc -2.7) (trunc 3)]", "[2 -2 3]"),
    ('[(upcase "ab") (downcase "AB")]', '["AB" "ab"]'),
    # tree walkers
    ("(postwalk #(if (number? %) (inc %) %) {:a [1 {:b 2}]})", "{:a [2 {:b 3}]}"),
    ("(prewalk #(if (map? %) (dissoc % :x) %) {:x 1 :y {:x 2 :z 3}})", "{:y {:z 3}}"),
    ("(clojure.walk/postwalk identity [1 #{2}])", "[1 #{2}]"),
    ("(clojure.walk/prewalk identity [1])", "[1]"),
    ("(walk inc #(apply + %) [1 2 3])", "9"),
    ("(clojure.walk/walk identity count {:a 1 :b 2})", "2"),
    ("(tree-seq vector? identity [1 [2 3]])", "[[1 [2 3]] 1 [2 3] 2 3]"),
    ("(tree-seq map? :kids {:n 1 :kids [{:n 2}]})", "[{:n 1 :kids [{:n 2}]} {:n 2}]"),
    # standard Clojure additions
    ("[(nfirst [[1 2 3]]) (nnext [1 2 3]) (fnext [1 2 3])]", "[[2 3] [3] 2]"),
    ('[(char? "a") (char? "ab") (symbol? :a)]', "[true false false]"),
    ("[(infinite? ##Inf) (infinite? 1.0) (NaN? ##NaN) (NaN? 1)]", "[true false true false]"),
    ("[(counted? [1]) (counted? nil) (indexed? [1]) (reversible? {})]", "[true false true false]"),
    ('[(seqable? nil) (seqable? "s") (seqable? 1)]', "[true true false]"),
    ("(when-first [x [7 8]] (inc x))", "8"),
    ("(when-first [x []] 1)", "nil"),
    ("(let [f #'inc] (f 1))", "2"),
    # Java names
    ('[(.indexOf "abc" "c") (.indexOf "abc" "z") (.lastIndexOf "abab" "b")]', "[2 -1 3]"),
    ('[(.startsWith "abc" "a") (.endsWith "abc" "c") (.contains "abc" "b")]', "[true true true]"),
    (
        '[(.toLowerCase "A") (.toUpperCase "a") (.trim " a ") (.substring "abc" 1)]',
        '["a" "A" "a" "bc"]',
    ),
    ('[(.length "abc") (.isEmpty "")]', "[3 true]"),
    (
        "[(Math/sqrt 16) (Math/pow 2 3) (Math/abs -1) (Math/floor 1.5) (Math/ceil 1.5)]",
        "[4.0 8.0 1 1 2]",
    ),
    (
        "[(Math/round 1.5) (Math/max 1 2) (Math/min 1 2) (Math/log 1) (Math/exp 0)]",
        "[2 2 1 0.0 1.0]",
    ),
    ("(Math/log10 100)", "2.0"),
    ('[(Integer/parseInt "7") (Long/parseLong "8") (Double/parseDouble "1.5")]', "[7 8 1.5]"),
    ("(String/valueOf 1)", '"1"'),
    (
        "[Double/POSITIVE_INFINITY Double/NEGATIVE_INFINITY Long/MAX_VALUE]",
        "[##Inf ##-Inf 9223372036854775807]",
    ),
    ("(NaN? Double/NaN)", "true"),
    # Clojure's data semantics
    ("(count {1 :a 1.0 :b true :c})", "3"),
    ("(get {1 :a 1.0 :b true :c} 1.0)", ":b"),
    ("(count #{1 1.0 true})", "3"),
    ("(frequencies [1 1.0 true 1])", "{1 2 1.0 1 true 1}"),
    ("(get {[1 2] :v {:a 1} :m #{3} :s} {:a 1})", ":m"),
    ("(contains? #{[1 2] {:a 1}} [1 2])", "true"),
    ("(count (set [{:a 1} {:a 1} {:a 2}]))", "2"),
    ("(count (group-by identity [[1] [1] [1.0]]))", "2"),
    ("(= {[1] 1} {[1] 1})", "true"),
    ("(assoc {} {:k 1} 1)", "{{:k 1} 1}"),
    # bugs from issue 18
    ("(max-key (fn [x] (/ 1 0)) 5)", "5"),
    ("(+ nil)", "nil"),
    ('(format "%s %s" ##Inf ##NaN)', '"Infinity NaN"'),
    ("(let [cond-> 1 some-> 2] (+ cond-> some->))", "3"),
    ("((fn [& {:keys [a] :as opts}] [a opts]) :a 1)", "[1 {:a 1}]"),
]


@pytest.mark.parametrize(("src", "expected"), CASES)
def test_extension(src: str, expected: str) -> None:
    check_value(src, expected)


ERRORS = [
    ("(#{1} 1 2)", "arity", "a set used as a function"),
    ("(where :a ~ 1)", "parse", "unquote"),
    ("(where :a :bogus 1)", "type", "where expects an operator"),
    ("(quot Long/MIN_VALUE -1)", "arithmetic", "overflow in quot"),
    ('(.getBytes "a")', "analysis", "The Java names that work"),
    ("(Math/random)", "analysis", "static member"),
]


@pytest.mark.parametrize(("src", "category", "fragment"), ERRORS)
def test_extension_errors(src: str, category: str, fragment: str) -> None:
    check_error(src, category, fragment)


BOUNDED = [
    "(count (combinations (range 40) 20))",
    "(count (tree-seq (constantly true) (fn [n] [n n]) 1))",
    "(postwalk identity (reduce (fn [v _] [v v]) [] (range 40)))",
    "(count (walk identity identity (vec (range 200000))))",
]


@pytest.mark.parametrize("src", BOUNDED)
def test_new_builtins_are_bounded(src: str) -> None:
    result = run_sync(src, limits=Limits(timeout_ms=3000))
    assert result.error is not None and result.error.category in ("limit", "timeout"), result


def test_defonce_defines_once_across_turns() -> None:
    first = run_sync("(defonce total 1) (defonce total (/ 1 0)) total")
    assert first.error is None and first.value == 1
    second = run_sync("(defonce total 5) total", memory=first.memory)
    assert second.value == 1


HOST = {
    "content": "hello",
    "user_id": 7,
    "items": [{"item_name": "a", "unit-price": 2}],
}


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('(get ctx/r "content")', "hello"),
        ("(:content ctx/r)", "hello"),
        ("(:user-id ctx/r)", 7),
        ('(get ctx/r "user-id")', 7),
        ("(get-in ctx/r [:items 0 :item-name])", "a"),
        ("(:unit_price (first (:items ctx/r)))", 2),
        ("(let [{:keys [user-id content]} ctx/r] [user-id content])", [7, "hello"]),
        ("(contains? ctx/r :user-id)", True),
        ("(map :item-name (:items ctx/r))", ["a"]),
        ("(sort-by :unit-price (:items ctx/r))", [{"item_name": "a", "unit-price": 2}]),
        # a map the program builds keeps Clojure's semantics
        ('(get {:content 1} "content")', None),
        ("(:user-id {:user_id 1})", None),
        ("(:user-id (assoc ctx/r :x 1))", None),
    ],
)
def test_host_data_is_read_the_way_models_write_keys(src: str, expected: Any) -> None:
    result = run_sync(src, ctx={"r": HOST})
    assert result.error is None, result.error
    assert result.value == expected


def test_tool_results_are_read_with_string_keys() -> None:
    async def fetch(args: dict[str, Any]) -> Any:
        return {"content": [{"type": "text", "text": "hi"}]}

    result = run_sync('(get-in (call "fetch" {}) ["content" 0 "text"])', tools={"fetch": fetch})
    assert result.value == "hi"


def test_reduce_assoc_and_conj_over_30000_rows_are_linear() -> None:
    big = Limits(timeout_ms=20_000, max_steps=10**7)
    m = run_sync("(count (reduce (fn [m i] (assoc m i i)) {} (range 30000)))", limits=big)
    v = run_sync("(count (reduce conj [] (range 30000)))", limits=big)
    u = run_sync(
        "(count (reduce (fn [m i] (update m (mod i 100) (fnil inc 0))) {} (range 30000)))",
        limits=big,
    )
    assert (m.value, v.value, u.value) == (30000, 30000, 100)
    # quadratic copying would take seconds; persistent collections take milliseconds
    assert all(r.error is None for r in (m, v, u))


def test_integer_overflow_is_the_same_inlined_and_not() -> None:
    for src in (
        "(* 4611686018427387904 2)",
        "(apply * [4611686018427387904 2])",
        "(let [x 4611686018427387904] (* x 2))",
        "(+ Long/MAX_VALUE 1)",
        "(apply + [Long/MAX_VALUE 1])",
        "(inc Long/MAX_VALUE)",
        "(- Long/MIN_VALUE 1)",
        "(reduce + [Long/MAX_VALUE 1])",
    ):
        result = run_sync(src)
        assert result.error is not None and result.error.category == "arithmetic", src


def test_keyword_values_of_new_names() -> None:
    assert run_sync("(keyword? :where)").value is True
    assert isinstance(run_sync(":a").value, Keyword)
