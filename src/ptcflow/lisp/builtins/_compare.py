"""Equality, ordering and ``compare`` (Clojure semantics: ``(= 1 1.0)`` is false)."""

from __future__ import annotations

from typing import Any

from ptcflow.lisp._colls import Vector
from ptcflow.lisp.builtins._registry import Registry, num
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.limits import active_budget
from ptcflow.lisp.printer import pr_str, type_name
from ptcflow.lisp.values import Keyword, lisp_eq, truthy

REGISTRY = Registry("compare", "Equality and comparison")
add = REGISTRY.add


@add("=", "(= x & ys)", "True when all arguments are equal (structurally; 1 and 1.0 differ).")
def eq(x: Any, *ys: Any) -> bool:
    if len(ys) == 1:
        y = ys[0]
        t = type(x)
        if t is str or t is Keyword or t is int:
            return t is type(y) and x == y
        return lisp_eq(x, y)
    return all(lisp_eq(x, y) for y in ys)


@add("not=", "(not= x & ys)", "(not (= x & ys)).")
def not_eq(x: Any, *ys: Any) -> bool:
    return not eq(x, *ys)


@add("==", "(== x & ys)", "True when all numbers are numerically equal (1 and 1.0 are ==).")
def num_eq(x: Any, *ys: Any) -> bool:
    num("==", x)
    return all(num("==", y) == x for y in ys)


def _chain(fn: str, op: Any, x: Any, ys: tuple[Any, ...]) -> bool:
    t = type(x)
    if len(ys) == 1:
        y = ys[0]
        ty = type(y)
        if (t is int or t is float) and (ty is int or ty is float):
            return op(x, y)  # type: ignore[no-any-return]
    num(fn, x)
    for y in ys:
        if not op(x, num(fn, y)):
            for z in ys:  # still reject a later non-number, as Clojure does
                num(fn, z)
            return False
        x = y
    return True


def _lt(a: Any, b: Any) -> bool:
    return a < b  # type: ignore[no-any-return]


def _le(a: Any, b: Any) -> bool:
    return a <= b  # type: ignore[no-any-return]


def _gt(a: Any, b: Any) -> bool:
    return a > b  # type: ignore[no-any-return]


def _ge(a: Any, b: Any) -> bool:
    return a >= b  # type: ignore[no-any-return]


@add("<", "(< x & ys)", "True when the numbers are strictly increasing.")
def lt(x: Any, *ys: Any) -> bool:
    return _chain("<", _lt, x, ys)


@add("<=", "(<= x & ys)", "True when the numbers are non-decreasing.")
def le(x: Any, *ys: Any) -> bool:
    return _chain("<=", _le, x, ys)


@add(">", "(> x & ys)", "True when the numbers are strictly decreasing.")
def gt(x: Any, *ys: Any) -> bool:
    return _chain(">", _gt, x, ys)


@add(">=", "(>= x & ys)", "True when the numbers are non-increasing.")
def ge(x: Any, *ys: Any) -> bool:
    return _chain(">=", _ge, x, ys)


@add("not", "(not x)", "True when x is nil or false.")
def not_(x: Any) -> bool:
    return x is None or x is False


_RANK = {bool: 1, int: 2, float: 2, str: 3, Keyword: 4, Vector: 5}


def compare(a: Any, b: Any) -> int:
    """Clojure ``compare``: -1, 0 or 1; nil sorts first; vectors by length, then elements."""
    if a is b:
        return 0
    ta, tb = type(a), type(b)
    if a is None:
        return -1
    if b is None:
        return 1
    ra, rb = _RANK.get(ta), _RANK.get(tb)
    if ra is None or ra != rb:
        if ra is None or rb is None:
            bad = a if ra is None else b
            raise LispError(
                "type",
                f"compare cannot order {type_name(bad)} {pr_str(bad, limit=60)}; compare "
                "numbers, strings, keywords, booleans or vectors of them",
            )
        raise LispError(
            "type",
            f"compare cannot order {type_name(a)} {pr_str(a, limit=60)} against "
            f"{type_name(b)} {pr_str(b, limit=60)}; sort values of one type (or use sort-by)",
        )
    if ta is Vector:
        if len(a) != len(b):
            return -1 if len(a) < len(b) else 1
        budget = active_budget()  # nested vectors: every element compared is a step
        if budget is not None:
            budget.step(1 + len(a))
        for x, y in zip(a, b, strict=True):
            c = compare(x, y)
            if c:
                return c
        return 0
    if ta is Keyword:
        a, b = a.name, b.name
    return -1 if a < b else (1 if a > b else 0)


add(
    "compare",
    "(compare a b)",
    "-1, 0 or 1 as a is less than, equal to or greater than b (nil sorts first).",
)(compare)


@add("identical?", "(identical? a b)", "True when a and b are the same object.")
def identical(a: Any, b: Any) -> bool:
    t = type(a)  # the type first: == on two collections would compare them in C, uncharged
    return a is b or (t is type(b) and (t is int or t is bool) and a == b)


@add("boolean", "(boolean x)", "false for nil and false, true for everything else.")
def boolean(x: Any) -> bool:
    return truthy(x)
