"""Static checks: nothing runs when a name, tool, shape or arity is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.lisp import LispError, analyze, run_sync

TOOLS = ["search", "get_user"]
CTX = {"orders": [], "user": {"id": 1}}

STATIC = [
    # unbound names, with suggestions
    ("(cont [1 2])", "unbound", "did you mean count", 1, 2),
    ("(mapp inc [1])", "unbound", "did you mean map", 1, 2),
    ("(let [total 1] totl)", "unbound", "did you mean total", 1, 16),
    ("(defn helper [x] x) (helpr 1)", "unbound", "did you mean helper", 1, 22),
    ("(frobnicate)", "unbound", "unable to resolve symbol frobnicate", 1, 2),
    ("(fn [x] y)", "unbound", "symbol y", 1, 9),
    ("(let [f (fn [] x) x 1] f)", "unbound", "symbol x", 1, 16),
    ("ctx/order", "unbound", "did you mean ctx/orders", 1, 1),
    ("ctx/missing", "unbound", "available: ctx/orders, ctx/user", 1, 1),
    ('(str/jion ["a"])', "unbound", "str/join", 1, 2),
    ("(search {:q 1})", "unbound", '(call "search"', 1, 2),
    ("(foo/bar 1)", "unbound", "foo/bar", 1, 2),
    # unknown tools
    ('(call "serch" {:q "x"})', "unknown_tool", "did you mean search", 1, 1),
    ('(call "nope" {})', "unknown_tool", "available tools: get_user, search", 1, 1),
    ("(ctx/nope {:a 1})", "unbound", "ctx/nope", 1, 2),
    # tool call shapes
    ('(call "search" "x")', "analysis", "map of named arguments", 1, 16),
    ('(call "search" [1 2])', "analysis", "not a vector", 1, 16),
    ('(call "search" :q "x")', "analysis", 'write (call "search" {:arg value})', 1, 1),
    ('(call "search" {:q 1} {:r 2})', "analysis", "one map of named arguments, got 2", 1, 1),
    ("(call)", "analysis", '(call "tool-name"', 1, 1),
    ("(call :search {})", "analysis", "must be a string", 1, 7),
    ("(call search {})", "analysis", "must be a string", 1, 7),
    ('(ctx/search "x")', "analysis", "(ctx/search {:arg value})", 1, 13),
    ("(ctx/search {:q 1} 2)", "analysis", "one map", 1, 1),
    # special-form shapes
    ("(if)", "analysis", "if got 0 arguments; write it as (if test then)", 1, 1),
    ("(if 1 2 3 4)", "analysis", "if got 4 arguments", 1, 1),
    ("(let x 1)", "analysis", "name-value pairs", 1, 6),
    ("(let [x 1 y] x)", "analysis", "name-value pairs", 1, 6),
    ("(fn)", "analysis", "fn got 0 arguments", 1, 1),
    ("(fn x)", "analysis", "parameter vector", 1, 1),
    ("(fn [a & b c] a)", "analysis", "& must be followed", 1, 8),
    ("(fn ([a] a) ([b] b))", "analysis", "two arities taking 1", 1, 1),
    ("(fn ([& a] a) ([& b] b))", "analysis", "only one variadic", 1, 1),
    ("(fn ([a b c] a) ([a & r] a))", "analysis", "at least as many", 1, 1),
    ("(defn f)", "analysis", "defn got 1 argument", 1, 1),
    ("(defn f x)", "analysis", "parameter vector", 1, 1),
    ('(defn "f" [x] x)', "analysis", "needs a name", 1, 7),
    ("(def)", "analysis", "def got 0 arguments", 1, 1),
    ("(def 1 2)", "analysis", "needs a name", 1, 6),
    ("(def x 1 2)", "analysis", "docstring", 1, 8),
    ("(cond 1)", "analysis", "pairs", 1, 1),
    ("(case)", "analysis", "case got 0", 1, 1),
    ("(case x y 1)", "unbound", "symbol x", 1, 7),
    ("(case 1 y 1)", "analysis", "constants", 1, 9),
    ("(case 1 1 :a 1 :b)", "analysis", "duplicate", 1, 14),
    ("(if-let [x] 1)", "analysis", "one binding", 1, 9),
    ("(if-let x 1)", "analysis", "one binding", 1, 9),
    ("(for [x] x)", "analysis", "vector of bindings", 1, 6),
    ("(for [x [1] :until true] x)", "analysis", ":when, :let and :while", 1, 13),
    ("(for [:when true x [1]] x)", "analysis", "must start with a binding", 1, 6),
    ("(for [x [1]] x x)", "analysis", "for got 3 arguments", 1, 1),
    ("(as-> 1 [x] x)", "analysis", "needs a name", 1, 9),
    ("(cond-> 1 true)", "analysis", "pairs", 1, 1),
    ("(memory/put :a)", "analysis", "memory/put got 1 argument", 1, 1),
    ("(memory/put 1 2)", "analysis", "keywords or strings", 1, 13),
    ("(memory/get)", "analysis", "memory/get got 0", 1, 1),
    ("memory/put", "analysis", "special form", 1, 1),
    ("(pmap inc)", "analysis", "(pmap f coll)", 1, 1),
    ("(return 1 2)", "analysis", "(return value)", 1, 1),
    ("(map if [1])", "analysis", "special form and cannot be used as a value", 1, 6),
    # recur
    ("(recur 1)", "analysis", "only allowed inside loop or fn", 1, 1),
    ("(loop [i 0] (recur))", "analysis", "recur passes 0 values but its loop binds 1", 1, 13),
    ("(loop [i 0] (inc (recur 1)))", "analysis", "tail position", 1, 18),
    ("(loop [i 0] (recur 1) 2)", "analysis", "tail position", 1, 13),
    ("(fn [a] (recur 1 2))", "analysis", "its fn binds 1", 1, 9),
    ("(loop [i 0] (let [x (recur 1)] x))", "analysis", "tail position", 1, 21),
    ("(loop [i 0] (for [x [1]] (recur x)))", "analysis", "tail position", 1, 26),
    # static arity of builtins
    ("(get {:a 1})", "arity", "get called with 1 argument; usage: (get m k)", 1, 1),
    ("(inc 1 2)", "arity", "inc called with 2 arguments", 1, 1),
    ("(count)", "arity", "count called with 0 arguments", 1, 1),
    ("(defn f [x] (assoc x)) (f 1)", "arity", "assoc called with 1 argument", 1, 13),
    # literals in call position
    ("(1 2 3)", "type", "cannot call 1 as a function", 1, 1),
    ('("f" 1)', "type", "vector [1 2 3]", 1, 1),
    # sandbox
    ('(.getBytes "a")', "analysis", "method call", 1, 2),
    ('(. "a" toUpperCase)', "analysis", "host interop", 1, 2),
    ('(String. "a")', "analysis", "constructor", 1, 2),
    ("(System/exit 0)", "analysis", "static member", 1, 2),
    ("(java.lang.Runtime/getRuntime)", "analysis", "host interop", 1, 2),
    ('(__import__ "os")', "analysis", "reserved", 1, 2),
    ("(eval (+ 1 2))", "analysis", "eval is not available", 1, 2),
    ("(import os)", "analysis", "import is not available", 1, 2),
    ("(require '[x])", "parse", "quote", 1, 10),
    ('(slurp "/etc/passwd")', "analysis", "no file", 1, 2),
    ("(try (/ 1 0) (catch Exception e 0))", "analysis", "try/catch is not supported", 1, 2),
    ('(throw (ex-info "x" {}))', "analysis", "(fail", 1, 2),
    ("(atom 0)", "analysis", "memory/put", 1, 2),
    ("(let [x (atom 1)] x)", "analysis", "atoms", 1, 10),
    ("(defmacro m [] 1)", "analysis", "defmacro", 1, 2),
    ("(letfn [(f [] 1)] (f))", "analysis", "letfn", 1, 2),
    ("(set! x 1)", "analysis", "immutable", 1, 2),
]


@pytest.mark.parametrize(("source", "category", "fragment", "line", "column"), STATIC)
def test_static_error(source: str, category: str, fragment: str, line: int, column: int) -> None:
    calls: list[Any] = []

    async def tool(args: dict[str, Any]) -> Any:
        calls.append(args)
        return 1

    result = run_sync(
        '(call "search" {:q "first"})\n' + source,
        ctx=CTX,
        tools={"search": tool, "get_user": tool},
    )
    e = result.error
    assert e is not None, f"expected an error, got {result.value!r}"
    assert (e.category, e.line, e.column) == (category, line + 1, column), str(e)
    assert fragment in e.message
    assert calls == [], "a program with a static error must call no tool"
    assert result.tool_calls == []


def test_analyze_without_tool_names_skips_the_tool_check() -> None:
    program = analyze('(call "anything" {:a 1}) (call "other")')
    assert program.tools_used == frozenset({"anything", "other"})


def test_analyze_reports_tools_used_but_not_return_or_fail() -> None:
    program = analyze('(call "a" {}) (call "return" 1) (return 2) (fail 3)', tool_names=["a"])
    assert program.tools_used == frozenset({"a"})


def test_analyze_accepts_memory_keys_as_globals() -> None:
    analyze("(inc counter)", memory_keys=["counter"])
    with pytest.raises(LispError, match="counter"):
        analyze("(inc counter)")


def test_analyze_refuses_deep_nesting_with_a_typed_error() -> None:
    source = "(cond " + " ".join(f"(= x {i}) {i}" for i in range(3000)) + ")"
    with pytest.raises(LispError) as info:
        analyze("(let [x 1] " + source + ")")
    assert info.value.category == "limit"


def test_locals_shadow_builtins() -> None:
    from .helpers import ev

    assert ev("(let [count 5 map {:a 1}] [count (map :a)])") == [5, 1]
    assert ev("(defn f [str] (inc str)) (f 1)") == 2


def test_a_local_shadows_only_inside_its_own_scope() -> None:
    # Locals are found through a program-wide set of bound names first: a name bound in one
    # scope must not hide the builtin of the same name elsewhere.
    from .helpers import ev

    assert ev("[(let [inc 10] inc) (inc 1) ((fn inc [n] (if (> n 2) n (inc (+ n 1)))) 0)]") == [
        10,
        2,
        3,
    ]
    assert ev("(let [f (fn count [x] x)] [(f 4) (count [1 2])])") == [4, 2]
