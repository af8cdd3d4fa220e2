"""Inlined arithmetic, comparisons and keyword lookups agree with the builtins they replace."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.lisp import pr_str, run_sync

CASES = [
    "(+ 1 2)",
    "(+ 1.5 2)",
    "(+ 9223372036854775807 1)",
    '(+ 1 "a")',
    "(+ 1 true)",
    "(+ nil 1)",
    "(- 5 7)",
    "(- -9223372036854775808 1)",
    "(- 2.5 1)",
    "(* 3 4)",
    "(* 4294967296 4294967296)",
    "(* 2 0.5)",
    '(* "a" 2)',
    "(< 1 2)",
    "(< 2 1)",
    "(< 1 2.5)",
    "(< 1 :a)",
    "(> 3 2)",
    "(<= 2 2)",
    "(>= 1 2)",
    '(>= "b" "a")',
    "(= 1 1)",
    "(= 1 1.0)",
    '(= "a" "a")',
    "(= :a :a)",
    "(= :a :b)",
    "(= [1 2] [1 2])",
    "(= nil nil)",
    "(= 1 true)",
    "(inc 1)",
    "(inc 1.5)",
    "(inc 9223372036854775807)",
    "(inc nil)",
    "(dec 0)",
    "(dec -9223372036854775808)",
    '(dec "x")',
    "(:a {:a 1})",
    "(:a {:b 1})",
    "(:a #{:a})",
    "(:a nil)",
    "(:a [1 2])",
    # mod, and literal second arguments (compiled with the literal folded in)
    "(mod 7 3)",
    "(mod -7 3)",
    "(mod 7 -3)",
    "(mod 7.5 2)",
    "(mod 7 2.5)",
    "(mod 7 0)",
    "(mod 7 0.0)",
    '(mod "a" 2)',
    "(mod nil 2)",
    "(+ 1 2.5)",
    "(+ 1 9223372036854775807)",
    "(- 1 0.5)",
    "(- 9223372036854775807 -1)",
    "(* 9223372036854775807 2)",
    "(* 1.5 2)",
    "(< 1 ##NaN)",
    "(> true 1)",
    "(= 1 :a)",
    '(= "a" 1)',
    "(= 2 2)",
    '(= "a" "b")',
    "(= 1.0 1)",
]


@pytest.mark.parametrize("source", CASES)
def test_inline_path_matches_the_builtin(source: str) -> None:
    inline = run_sync(source)
    # (apply f args) always goes through the builtin itself.
    head, _, rest = source[1:-1].partition(" ")
    via_apply = run_sync(f"(apply {head} [{rest}])")
    assert (inline.value, inline.error and inline.error.category) == (
        via_apply.value,
        via_apply.error and via_apply.error.category,
    )
    if inline.error is not None:
        assert via_apply.error is not None
        assert inline.error.message == via_apply.error.message
        assert (inline.error.line, inline.error.column) == (1, 1)


_VALUES = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),  # 64-bit, as results are
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.sampled_from(["a", "", ":k"]),
)


@settings(max_examples=150, deadline=None)
@given(
    op=st.sampled_from(["+", "-", "*", "<", ">", "<=", ">=", "=", "mod"]),
    x=_VALUES,
    k=_VALUES,
)
def test_a_local_and_a_literal_match_the_builtin(op: str, x: Any, k: Any) -> None:
    xs, ks = _lit(x), _lit(k)
    # (op x k) with x a local: the literal k is folded into the compiled closure.
    inline = run_sync(f"(let [x {xs}] ({op} x {ks}))")
    both_locals = run_sync(f"(let [x {xs} k {ks}] ({op} x k))")
    via_apply = run_sync(f"(apply {op} [{xs} {ks}])")
    got = [(r.value, r.error and r.error.message) for r in (inline, both_locals, via_apply)]
    assert (got[0] == got[2] and got[1] == got[2]) or _both_nan(got)


def _lit(v: Any) -> str:
    if isinstance(v, str) and v.startswith(":"):
        return v
    return pr_str(v)


def _both_nan(got: list[tuple[Any, Any]]) -> bool:
    values = [v for v, _ in got]
    return all(isinstance(v, float) and math.isnan(v) for v in values)


@settings(max_examples=150, deadline=None)
@given(
    op=st.sampled_from(["<", ">", "<=", ">=", "="]),
    x=_VALUES,
    k=_VALUES,
    holder=st.sampled_from(["{:a X}", "{}", "nil", "#{:a}", "[X]", '"s"']),
)
def test_a_keyword_lookup_compared_with_a_literal_matches_the_builtin(
    op: str, x: Any, k: Any, holder: str
) -> None:
    # (op (:a m) k) compiles to one closure with the lookup inlined.
    m = holder.replace("X", _lit(x))
    inline = run_sync(f"(let [m {m}] ({op} (:a m) {_lit(k)}))")
    via_apply = run_sync(f"(let [m {m}] (apply {op} [(get-in {{:m m}} [:m :a]) {_lit(k)}]))")
    if holder == "#{:a}":  # (:a #{:a}) is :a, which get-in does not give
        via_apply = run_sync(f"(apply {op} [:a {_lit(k)}])")
    elif holder in ("[X]", '"s"'):
        via_apply = run_sync(f"(apply {op} [nil {_lit(k)}])")
    got = [(r.value, r.error and r.error.message) for r in (inline, via_apply)]
    assert got[0] == got[1] or _both_nan(got)
