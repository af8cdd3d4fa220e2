"""Every special form and macro, as (source, expected value) rows.

Values come back as Python data: vectors become lists, map keys strings, keywords stay
``Keyword``.
"""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import K, err, ev

FORMS = [
    # literals and collections
    ("42", 42),
    ("nil", None),
    ('"s"', "s"),
    (":k", K("k")),
    ("[1 (+ 1 1) 3]", [1, 2, 3]),
    ("{:a (+ 1 1)}", {"a": 2}),
    ("#{(inc 0)}", [1]),
    ("()", []),
    ("[]", []),
    # def
    ("(def x 10) (* x 2)", 20),
    ('(def x "doc" 10) x', 10),
    ("(def x) x", None),
    ("(def x 1) (def x (inc x)) x", 2),
    ("(def x 5)", 5),
    # if / if-not / when / when-not
    ("(if true 1 2)", 1),
    ("(if false 1 2)", 2),
    ("(if nil 1 2)", 2),
    ("(if 0 1 2)", 1),
    ('(if "" 1 2)', 1),
    ("(if [] 1 2)", 1),
    ("(if false 1)", None),
    ("(if-not false 1 2)", 1),
    ("(if-not true 1)", None),
    ("(when true 1 2 3)", 3),
    ("(when false 1)", None),
    ("(when-not false :yes)", K("yes")),
    ("(when-not 1 :yes)", None),
    # cond / condp / case
    ("(cond false 1 nil 2 :else 3)", 3),
    ("(cond (> 1 2) :a (< 1 2) :b)", K("b")),
    ("(cond false 1)", None),
    ("(cond)", None),
    ("(condp = 2 1 :one 2 :two :other)", K("two")),
    ("(condp = 9 1 :one :other)", K("other")),
    ("(condp < 5 10 :big 3 :mid)", K("mid")),
    ("(case 1 1 :one 2 :two)", K("one")),
    ("(case :b :a 1 :b 2 0)", 2),
    ('(case "x" "x" 1 "y" 2)', 1),
    ("(case 5 (1 2 3) :low (4 5 6) :high)", K("high")),
    ("(case 9 1 :one :default)", K("default")),
    ("(case nil nil :nil :other)", K("nil")),
    ("(case [1 2] [1 2] :vec :other)", K("vec")),
    ("(case 1.0 1 :int :other)", K("other")),
    ("(case true 1 :int true :t :other)", K("t")),
    # if-let / when-let / if-some / when-some
    ("(if-let [x 5] (inc x) :no)", 6),
    ("(if-let [x nil] (inc x) :no)", K("no")),
    ("(if-let [x false] 1 2)", 2),
    ("(if-let [x nil] 1)", None),
    ("(if-let [[a b] [1 2]] (+ a b) 0)", 3),
    ("(when-let [x 2] (* x 10))", 20),
    ("(when-let [x nil] (* x 10))", None),
    ("(if-some [x false] :some :none)", K("some")),
    ("(if-some [x nil] :some :none)", K("none")),
    ("(when-some [x 0] (inc x))", 1),
    ("(when-some [x nil] (inc x))", None),
    # do / and / or
    ("(do)", None),
    ("(do 1 2 3)", 3),
    ("(and)", True),
    ("(and 1 2 3)", 3),
    ("(and 1 nil 3)", None),
    ("(and 1 false 3)", False),
    ("(or)", None),
    ("(or nil false 7)", 7),
    ("(or nil false)", False),
    ("(or 1 (undefined-but-never-run))", None) if False else ("(or 1 2)", 1),
    # let
    ("(let [x 1 y (+ x 1)] [x y])", [1, 2]),
    ("(let [x 1] (let [x 2] x))", 2),
    ("(let [x 1] (let [x (inc x)] x))", 2),
    ("(let [x 1] (let [y 2]) x)", 1),
    ("(let [] 5)", 5),
    ("(let [x 1])", None),
    ("(let [x 1 x (* x 10)] x)", 10),
    # fn / defn
    ("((fn [x] (* x x)) 5)", 25),
    ("((fn [] 7))", 7),
    ("((fn [a b] [b a]) 1 2)", [2, 1]),
    ("((fn [& xs] xs) 1 2 3)", [1, 2, 3]),
    ("((fn [& xs] xs))", None),
    ("((fn [a & xs] [a xs]) 1)", [1, None]),
    ("((fn [a & xs] [a xs]) 1 2 3)", [1, [2, 3]]),
    ("((fn ([] :zero) ([a] :one) ([a & r] :many)) 1 2)", K("many")),
    ("((fn ([] :zero) ([a] :one) ([a & r] :many)))", K("zero")),
    ("((fn ([] :zero) ([a] :one) ([a & r] :many)) 1)", K("one")),
    ("((fn self [n] (if (= n 0) :done (self (dec n)))) 5)", K("done")),
    ("(defn sq [x] (* x x)) (sq 4)", 16),
    ('(defn sq "squares" [x] (* x x)) (sq 3)', 9),
    ("(defn f ([x] (f x 10)) ([x y] (+ x y))) (f 1)", 11),
    ("(defn f [& {:keys [a]}] a) (f :a 1)", 1),
    ("(defn add [a b] (+ a b)) (reduce add 0 [1 2 3])", 6),
    ("(defn- hidden [] 1) (hidden)", 1),
    ("(defn fib [n] (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2))))) (fib 15)", 610),
    ("(let [k 3 f (fn [x] (* k x))] (f 2))", 6),
    ("(let [mk (fn [n] (fn [x] (+ n x))) add5 (mk 5)] (add5 1))", 6),
    ("(let [f (fn [x] (fn [y] (fn [z] [x y z])))] (((f 1) 2) 3))", [1, 2, 3]),
    ("(map (fn [x] (* 2 x)) [1 2 3])", [2, 4, 6]),
    ("(map #(* 2 %) [1 2 3])", [2, 4, 6]),
    ("(map #(+ %1 %2) [1 2] [10 20])", [11, 22]),
    ("(#(vector %&) 1 2)", [[1, 2]]),
    ("(let [fs (for [i [1 2 3]] (fn [] i))] (map (fn [f] (f)) fs))", [1, 2, 3]),
    (
        "(let [fs (loop [i 0 acc []] (if (< i 3) (recur (inc i) (conj acc (fn [] i))) acc))] "
        "(mapv (fn [f] (f)) fs))",
        [0, 1, 2],
    ),
    # loop / recur
    ("(loop [i 0] (if (< i 5) (recur (inc i)) i))", 5),
    ("(loop [i 0 acc []] (if (= i 3) acc (recur (inc i) (conj acc i))))", [0, 1, 2]),
    ("(loop [[x & more] [1 2 3] sum 0] (if x (recur more (+ sum x)) sum))", 6),
    ("(defn count-down [n] (if (pos? n) (recur (dec n)) :done)) (count-down 50000)", K("done")),
    ("(defn f [n & acc] (if (zero? n) acc (recur (dec n) (cons n acc)))) (f 3)", [1, 2, 3]),
    ("(loop [i 0] (when (< i 3) (recur (inc i))))", None),
    ("(loop [i 0] (cond (> i 3) i :else (recur (inc i))))", 4),
    ("(loop [i 0] (case i 3 :three (recur (inc i))))", K("three")),
    ("(loop [x 1] (let [y (* x 2)] (if (> y 50) y (recur y))))", 64),
    # for / doseq
    ("(for [x [1 2 3]] (* x x))", [1, 4, 9]),
    ("(for [x [1 2] y [:a :b]] [x y])", [[1, K("a")], [1, K("b")], [2, K("a")], [2, K("b")]]),
    ("(for [x (range 10) :when (even? x)] x)", [0, 2, 4, 6, 8]),
    ("(for [x (range 10) :while (< x 3)] x)", [0, 1, 2]),
    ("(for [x [1 2] :let [y (* x 10)]] y)", [10, 20]),
    ("(for [x [1 2 3] y [1 2 3] :while (< y x)] [x y])", [[2, 1], [3, 1], [3, 2]]),
    ("(for [[k v] {:a 1}] [k v])", [[K("a"), 1]]),
    ("(for [{:keys [n]} [{:n 1} {:n 2}]] n)", [1, 2]),
    ("(for [x []] x)", []),
    ("(for [x nil] x)", []),
    ('(for [c "ab"] c)', ["a", "b"]),
    ("(for [x [1 2] :let [y (inc x)] :when (odd? y)] y)", [3]),
    ("(doseq [x [1 2 3]] x)", None),
    ("(doseq [x [1 2] y [3]] (println x y))", None),
    # threading
    ("(-> 1 inc inc)", 3),
    ("(-> {:a {:b 5}} :a :b)", 5),
    ("(-> 10 (- 3) (/ 7))", 1.0),
    ("(->> 10 (- 3))", -7),
    ("(->> [1 2 3] (map inc) (filter odd?))", [3]),
    ("(->> (range 5) (map #(* % %)) (reduce +))", 30),
    ("(as-> 5 x (* x 2) (- 100 x))", 90),
    ("(cond-> 1 true inc false (* 100) true (* 10))", 20),
    ("(cond->> [1 2] true (map inc) false (map str))", [2, 3]),
    ("(some-> {:a {:b 1}} :a :b inc)", 2),
    ("(some-> {:a nil} :a :b inc)", None),
    ("(some->> [1 2] (map inc) first)", 2),
    ("(some->> nil (map inc))", None),
    # comment
    ("(comment (anything at all))", None),
    ("(do (comment x) 5)", 5),
    # keywords, maps, sets and vectors called as functions
    ("(:a {:a 1})", 1),
    ("(:z {:a 1} :dflt)", K("dflt")),
    ("({:a 1} :a)", 1),
    ("({:a 1} :b 0)", 0),
    ("(#{1 2} 2)", 2),
    ("(#{1 2} 3)", None),
    ("([10 20 30] 1)", 20),
    ("(let [m {:a 1}] (m :a))", 1),
    ("(let [v [5 6]] (v 0))", 5),
    # memory forms inside one program
    ("(memory/put :n 1) (memory/get :n)", 1),
    ('(memory/put "s" 2) memory/s', 2),
    ("(memory/get :missing :fallback)", K("fallback")),
    ("memory/never-set", None),
    ("(memory/put :a [1 2]) (count memory/a)", 2),
]


@pytest.mark.parametrize(("source", "expected"), FORMS)
def test_form(source: str, expected: Any) -> None:
    value = ev(source)
    if isinstance(expected, list) and isinstance(value, list) and source.startswith("#{"):
        assert sorted(value) == sorted(expected)
    else:
        assert value == expected
        assert type(value) is type(expected)


# (loop [...] (if test (recur ...) other)) runs without a Recur per iteration.
COUNTING_LOOPS = [
    ("(loop [i 0 acc 0] (if (< i 5) (recur (inc i) (+ acc i)) acc))", 10),
    ("(loop [a 1 b 2 n 0] (if (< n 3) (recur b a (inc n)) [a b]))", [2, 1]),  # a swap
    ("(loop [i 0] (if (< i 3) (recur (inc i)) i))", 3),
    ("(loop [i 10] (if (< i 3) (recur (inc i)) i))", 10),
    ("(loop [i 0 j 0 k 0] (if (< i 2) (recur (inc i) (+ j 2) (+ k 3)) [i j k]))", [2, 4, 6]),
    # the else branch may recur too
    ("(loop [i 0 e 0] (if (odd? i) (recur (inc i) e) (if (< i 6) (recur (inc i) (inc e)) e)))", 3),
    ("(loop [[a b] [1 2] n 0] (if (< n 2) (recur [b a] (inc n)) [a b]))", [1, 2]),
]


@pytest.mark.parametrize(("source", "expected"), COUNTING_LOOPS)
def test_counting_loops(source: str, expected: Any) -> None:
    assert ev(source) == expected


@pytest.mark.parametrize(
    ("source", "limit"),
    [
        ("(loop [i 0] (if true (recur (inc i)) i))", "max_loop_iterations"),
        ("(loop [i 0] (if false 1 (recur (inc i))))", "max_loop_iterations"),
    ],
)
def test_counting_loops_keep_their_limits(source: str, limit: str) -> None:
    from ptcflow.lisp import LimitExceeded, Limits

    e = err(source, limits=Limits(max_loop_iterations=100))
    assert isinstance(e, LimitExceeded) and e.limit == limit
    e = err(source, limits=Limits(max_steps=500, max_loop_iterations=10**6))
    assert isinstance(e, LimitExceeded) and e.limit == "max_steps"
