"""The per-pattern input cap that keeps polynomial backtracking short."""

from __future__ import annotations

import re

import pytest

from ptcflow.lisp import run_sync
from ptcflow.lisp.builtins._regex_cost import WORK, degree, max_input

DEGREES = [
    (r"\d+", 1, 1),
    (r"error.*", 1, 1),
    (r"Total: (.*)", 1, 1),
    (r"a\d{1,3}b", 1, 1),
    (r"[A-Z][a-z]+", 1, 1),
    (r"^\w+@", 1, 1),
    (r"\w+@\w+\.com", 2, 1),
    (r"[a-z]+ing", 2, 1),
    (r"\d+\.\d+", 2, 1),
    (r"\s*,\s*", 2, 1),
    (r"\w+\s+\w+", 2, 1),
    (r"[^,]+,[^,]+", 2, 1),
    (r"[^\"]*\"[^\"]*", 2, 1),
    (r"(?:foo|bar)+x", 2, 1),
    (r"\d+\d+x", 3, 2),
    (r".*a.*b", 3, 2),
    (r".+@.+\..+", 3, 2),
    (r"\w+\w*x", 3, 2),
    (r"\d+\s*\w+", 3, 2),
    (r"(?i)[a-z]+[A-Z]+x", 3, 2),
    (r"(?m)^\w+@", 2, 1),
]


@pytest.mark.parametrize(("pattern", "searched", "anchored"), DEGREES)
def test_degree(pattern: str, searched: int, anchored: int) -> None:
    flags = re.compile(pattern).flags
    assert degree(pattern, flags, False) == searched
    assert degree(pattern, flags, True) == anchored


def test_caps() -> None:
    assert max_input(r"\d+", re.compile(r"\d+").flags, False) is None
    assert max_input(r"\w+@", re.UNICODE, False) == int(WORK**0.5)
    assert max_input(r"\d+\d+x", re.UNICODE, False) == int(WORK ** (1 / 3))


def _text(n: int, ch: str = "a") -> dict[str, str]:
    return {"t": ch * n}


@pytest.mark.parametrize(
    "src",
    [
        '(re-find #"\\w+@\\w+\\.com" ctx/t)',
        '(re-seq #"[a-z]+ing" ctx/t)',
        '(split ctx/t #"\\s*,\\s*")',
        '(replace ctx/t #"\\w+\\s+\\w+" "x")',
        '(re-matches #"\\w+\\w*x" ctx/t)',
    ],
)
def test_backtracking_patterns_refuse_long_input(src: str) -> None:
    result = run_sync(src, ctx=_text(6000))
    assert result.error is not None and result.error.category == "limit", result.error
    assert "split the text first" in result.error.message


@pytest.mark.parametrize(
    "src",
    [
        '(count (re-seq #"\\w+" ctx/t))',
        '(re-find #"^\\w+@" ctx/t)',
        '(re-matches #"\\w+@\\w+\\.com" ctx/t)',
        '(count (split ctx/t #","))',
        '(count (split ctx/t ","))',
        '(re-find #"error.*" ctx/t)',
    ],
)
def test_linear_patterns_take_long_input(src: str) -> None:
    result = run_sync(src, ctx=_text(60_000))
    assert result.error is None, result.error


def test_splitting_the_text_is_the_way_out() -> None:
    lines = "\n".join(["x" * 100 + " bob@site.com"] * 200)
    result = run_sync(
        '(count (mapcat #(re-seq #"\\w+@\\w+\\.com" %) (split-lines ctx/t)))', ctx={"t": lines}
    )
    assert result.error is None and result.value == 200
