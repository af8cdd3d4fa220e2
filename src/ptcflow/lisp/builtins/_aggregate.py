"""Aggregation helpers models reach for: sum, avg, sum-by, max-by, min-by, pluck.

These are not in Clojure; they save the model a ``reduce``: ``(sum-by :amount orders)``.
"""

from __future__ import annotations

import math
from typing import Any

from ptcflow.lisp._colls import Vector, kw_get, vec
from ptcflow.lisp.builtins._maps import get
from ptcflow.lisp.builtins._registry import Registry, iterate, reraise, unwrap, visit
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.values import Keyword, to_fn

REGISTRY = Registry("aggregate", "Aggregation")
add = REGISTRY.add


def _total(fn: str, xs: Any) -> Any:
    visit(len(xs))
    if type(xs) is Vector:
        try:
            # fsum-free fast path: exact for ints, same as a left fold for floats
            total = sum(xs)
        except TypeError:
            total = None
        if total is not None and not any(type(x) is bool for x in xs):
            return total
    total = 0
    for x in xs:
        t = type(x)
        if t is not int and t is not float:
            raise type_error(fn, "numbers", x)
        total += x
    return total


@add("sum", "(sum coll)", "The sum of the numbers in coll; 0 when empty.")
def sum_(coll: Any) -> Any:
    return _total("sum", coll if type(coll) is Vector else vec(iterate("sum", coll)))


@add("avg", "(avg coll)", "The mean of the numbers in coll as a float; nil when empty.")
def avg(coll: Any) -> float | None:
    xs = coll if type(coll) is Vector else vec(iterate("avg", coll))
    if not xs:
        return None
    total = _total("avg", xs)
    return float(total) / len(xs)


@add(
    "sum-by",
    "(sum-by f coll)",
    "The sum of (f x) over coll (nil results count as 0): (sum-by :amount orders).",
)
def sum_by(f: Any, coll: Any) -> Any:
    fn = unwrap(f, "sum-by")
    total: Any = 0
    try:
        for x in iterate("sum-by", coll):
            v = fn(x)
            t = type(v)
            if t is int or t is float:
                total += v
            elif v is not None:
                raise type_error("sum-by", "numbers from the key function", v)
    except TypeError:
        reraise(f, 1)
        raise
    return total


def _best(fn_name: str, f: Any, coll: Any, better: Any) -> Any:
    fn = to_fn(f, fn_name)
    best = None
    best_key: Any = None
    for x in iterate(fn_name, coll):
        k = fn(x)
        if k is None:
            continue
        t = type(k)
        if t is not int and t is not float and t is not str:
            raise type_error(fn_name, "numbers or strings from the key function", k)
        if best_key is None:
            if not (t is float and math.isnan(k)):
                best, best_key = x, k
            continue
        if (t is str) != (type(best_key) is str):
            raise LispError("type", f"{fn_name}: cannot compare a string key with a number key")
        if better(k, best_key):
            best, best_key = x, k
    return best


@add(
    "max-by",
    "(max-by f coll)",
    "The element with the largest (f x) (the first on ties; nil keys skipped); nil when empty.",
)
def max_by(f: Any, coll: Any) -> Any:
    return _best("max-by", f, coll, lambda a, b: a > b)


@add(
    "min-by",
    "(min-by f coll)",
    "The element with the smallest (f x) (the first on ties; nil keys skipped); nil when empty.",
)
def min_by(f: Any, coll: Any) -> Any:
    return _best("min-by", f, coll, lambda a, b: a < b)


@add("pluck", "(pluck k rows)", "(get row k) for each row: (pluck :id rows).")
def pluck(k: Any, rows: Any) -> Any:
    if type(k) is Keyword:
        return vec([kw_get(r, k) for r in iterate("pluck", rows)])
    return vec([get(r, k) for r in iterate("pluck", rows)])
