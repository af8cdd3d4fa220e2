"""Inlined arithmetic, comparisons and keyword lookups agree with the builtins they replace."""

from __future__ import annotations

import pytest

from ptcflow.lisp import run_sync

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
