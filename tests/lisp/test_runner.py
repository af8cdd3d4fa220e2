"""The run API: results, runtime error categories and positions, result conversion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ptcflow.errors import ProgramError
from ptcflow.lisp import Keyword, LimitExceeded, Limits, LispError, LispResult, run_sync

from .helpers import K, err, ev

RUNTIME_ERRORS = [
    ("(/ 1 0)", "arithmetic", "division by zero", 1, 1),
    ("(let [x 0]\n  (quot 10 x))", "arithmetic", "", 2, 3),
    ("(* 9223372036854775807 2)", "arithmetic", "", 1, 1),
    ('(+ 1 "a")', "type", '+ expects numbers, got string "a"', 1, 1),
    ("(defn f [x]\n  (inc x))\n(f :k)", "type", "inc", 2, 3),
    ("(let [f (fn [a b] a)] (f 1))", "arity", "called with 1 argument, expects 2", 1, 23),
    ("(defn g [a] a) (apply g [1 2 3])", "arity", "g called with 3 arguments", 1, 16),
    ("(let [f (fn ([a] a) ([a b c] a))] (f 1 2))", "arity", "expects 1 or 3", 1, 35),
    ("(let [f (fn [a & r] a)] (f))", "arity", "expects 1 or more", 1, 25),
    ("(let [x 5] (x 1))", "type", "calling a value", 1, 12),
    ("(let [x nil] (x 1))", "type", "calling a value", 1, 14),
    ("([1 2] 5)", "type", "out of bounds", 1, 1),
    ("(case 3 1 :a 2 :b)", "type", "no clause matches 3", 1, 1),
    ("(condp = 3 1 :a)", "type", "no clause matches 3", 1, 1),
    ("(dotimes [i :x] i)", "type", "dotimes", 1, 1),
    ("(let [k 5] (memory/get k))", "type", "memory keys", 1, 12),
    ("(let [k 5] (memory/put k 1))", "type", "memory keys", 1, 12),
    ("(x) (def x 1)", "unbound", "used before (def x", 1, 2),
    ("(let [[a] 1] a)", "destructure", "an integer 1", 1, 7),
    ("(reduce (fn [a b] (+ a b)) 0 [1 :x])", "type", "+ expects numbers", 1, 19),
    ("(map (fn [x] (/ 10 x)) [1 0])", "arithmetic", "division by zero", 1, 14),
    ("(return (fn [] 1))", None, None, None, None),
    ("(return [1 (fn [] 1)])", "type", "function", None, None),
]


@pytest.mark.parametrize(("source", "category", "fragment", "line", "column"), RUNTIME_ERRORS)
def test_runtime_errors_have_categories_and_positions(
    source: str, category: str | None, fragment: str | None, line: int | None, column: int | None
) -> None:
    r = run_sync(source)
    if category is None:
        assert r.error is None and r.returned
        assert isinstance(r.value, str) and r.value.startswith("#<fn")
        return
    e = r.error
    assert e is not None, f"expected an error, got {r.value!r}"
    assert e.category == category, str(e)
    assert fragment is not None and fragment in e.message
    if line is not None:
        assert (e.line, e.column) == (line, column), str(e)


def test_errors_are_program_errors_with_a_readable_str() -> None:
    e = err("(/ 1 0)")
    assert isinstance(e, LispError) and isinstance(e, ProgramError)
    assert str(e).startswith("arithmetic error at line 1, column 1: ")


def test_limit_errors_name_their_limit() -> None:
    e = err("(loop [] (recur))", limits=Limits(max_loop_iterations=10))
    assert isinstance(e, LimitExceeded) and e.limit == "max_loop_iterations"


CONVERSIONS = [
    ("{:a 1}", {"a": 1}),
    ('{"s" [1 2]}', {"s": [1, 2]}),
    ("{[1 2] :v}", {"[1 2]": K("v")}),  # JSON keys are strings: collections print
    ("{{:a 1} 1}", {"{:a 1}": 1}),
    ("#{3 1 2}", [1, 2, 3]),
    ("[:a nil true 1.5]", [K("a"), None, True, 1.5]),
    ('#"a+"', "a+"),
    ("(list 1 2)", [1, 2]),
    ("(range 3)", [0, 1, 2]),
    ("{:nested {:deep [{:x :y}]}}", {"nested": {"deep": [{"x": K("y")}]}}),
]


@pytest.mark.parametrize(("source", "expected"), CONVERSIONS)
def test_values_come_back_as_python_data(source: str, expected: Any) -> None:
    assert ev(source) == expected


def test_result_is_a_frozen_struct_with_defaults() -> None:
    r = run_sync("1")
    assert isinstance(r, LispResult)
    assert (r.returned, r.failed, r.fail_value, r.prints, r.tool_calls, r.error) == (
        False,
        False,
        None,
        [],
        [],
        None,
    )
    with pytest.raises(AttributeError):
        r.value = 2  # type: ignore[misc]


def test_ctx_values_are_converted_and_read_only() -> None:
    ctx = {"orders": [{"amount": 5}, {"amount": 7}], "name": "x"}
    assert ev("(reduce + (map :amount ctx/orders))", ctx=ctx) == 12
    assert ev("[ctx/name (assoc (first ctx/orders) :amount 0)]", ctx=ctx) == [
        "x",
        {"amount": 0},
    ]
    assert ctx["orders"][0] == {"amount": 5}


def test_tool_names_allow_static_checks_without_callables() -> None:
    r = run_sync('(call "later" {})', tool_names=["later"])
    assert r.error is not None and r.error.category == "unknown_tool"
    assert "later" in r.error.message


def test_keyword_is_exported() -> None:
    assert ev(":x") is Keyword("x")


def test_empty_program_is_nil() -> None:
    assert ev("") is None
    assert ev("; nothing") is None


def test_docs_examples_run() -> None:
    doc = Path(__file__).parents[2] / "docs" / "lisp.md"
    blocks: list[str] = []
    current: list[str] | None = None
    for line in doc.read_text().splitlines(keepends=True):
        if current is None and line.startswith("```python"):
            current = []
        elif current is not None and line.startswith("```"):
            blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    assert blocks
    namespace: dict[str, Any] = {"print": lambda *a: None}
    for block in blocks:
        exec(compile(block, str(doc), "exec"), namespace)  # documentation examples


def test_only_the_ctx_values_a_program_reads_are_converted_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ptcflow.lisp import _runtime

    converted: list[Any] = []
    real = _runtime.import_value  # type: ignore[attr-defined]

    def spy(x: Any, *args: Any) -> Any:
        converted.append(x)
        return real(x, *args)

    monkeypatch.setattr(_runtime, "import_value", spy)
    big = [{"id": i} for i in range(1000)]
    ctx = {"big": big, "small": {"a": 1}, "unused": [1, 2]}
    assert ev("[(:a ctx/small) (:a ctx/small)]", ctx=ctx) == [1, 1]
    assert converted == [{"a": 1}]  # converted on the first read, shared by the second
    converted.clear()
    # Converted when read at run time: a read inside a fn that never runs converts nothing.
    assert ev("(fn [] ctx/big) (count ctx/unused)", ctx=ctx) == 2
    assert converted == [[1, 2]]


@pytest.mark.parametrize(
    "source",
    ["1", "ctx/ok", "(undefined-fn 1)", "(+ 1"],  # an analysis or parse error too
)
def test_unread_ctx_values_must_still_be_plain_data(source: str) -> None:
    from ptcflow.errors import UsageError

    with pytest.raises(UsageError, match=r"plain data.*cannot pass a object"):
        run_sync(source, ctx={"ok": 1, "bad": [{"x": object()}]})


def test_ctx_keys_are_checked_before_anything_runs() -> None:
    e = err("(do (println 1) ctx/nope)", ctx={"orders": []})
    assert e.category == "unbound" and "ctx/orders" in e.message
