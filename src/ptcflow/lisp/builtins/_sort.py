"""Sorting: ``sort`` and ``sort-by`` (stable), plus ``min-key`` / ``max-key``.

A comparator a program passes is called about ``n log n`` times: each call is a step (a
program function's own steps come on top), so a slow or inconsistent comparator ends in a
``limit`` error, and a long sort lets the event loop run.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import Any

from ptcflow.lisp._colls import Map, kw_get, vec
from ptcflow.lisp.builtins._compare import compare
from ptcflow.lisp.builtins._registry import MISSING, Registry, num, reraise, seq, unwrap
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Builtin, Keyword, to_fn

REGISTRY = Registry("sorting", "Sorting")
add = REGISTRY.add

_ASCENDING = frozenset({"<", "<=", "compare"})
_DESCENDING = frozenset({">", ">="})


def _comparator(budget: Budget, fn: str, comp: Any) -> Any:
    """A Python ``cmp`` from a Clojure comparator (a boolean ``<``-style fn or an int one);
    each call counts a step."""
    f = to_fn(comp, fn)
    step = budget.step

    def cmp(a: Any, b: Any) -> int:
        step()
        r = f(a, b)
        t = type(r)
        if t is bool:
            if r:
                return -1
            step()
            r2 = f(b, a)
            return 1 if r2 is not None and r2 is not False else 0
        if t is int or t is float:
            return -1 if r < 0 else (1 if r > 0 else 0)
        if r is None:
            step()
            r2 = f(b, a)
            return 1 if r2 is not None and r2 is not False else 0
        raise LispError(
            "type",
            f"{fn}: the comparator must return a boolean or a number; use < or > or compare",
        )

    return cmp


def _direction(comp: Any) -> bool | None:
    """``False`` for an ascending builtin comparator, ``True`` for a descending one."""
    if type(comp) is Builtin:
        if comp.name in _ASCENDING:
            return False
        if comp.name in _DESCENDING:
            return True
    return None


def _homogeneous(keys: list[Any] | tuple[Any, ...]) -> bool:
    """Whether Python's own ordering of ``keys`` equals Clojure's (all numbers or strings)."""
    if not keys:
        return True
    t0 = type(keys[0])
    if t0 is int or t0 is float:
        for k in keys:
            t = type(k)
            if (t is not int and t is not float) or k != k:
                return False
        return True
    if t0 is str:
        return all(type(k) is str for k in keys)
    return False


def _sorted(budget: Budget, fn: str, items: Any, keys: list[Any] | None, comp: Any) -> Any:
    budget.step(len(items))  # at least each element is visited (comparisons count too)
    ks = items if keys is None else keys
    direction = False if comp is None else _direction(comp)
    if direction is not None:
        if _homogeneous(ks):
            if keys is None:
                return vec(sorted(items, reverse=direction))
            order = sorted(range(len(items)), key=keys.__getitem__, reverse=direction)
            return vec([items[i] for i in order])
        if all(type(k) is Keyword for k in ks):
            pairs = sorted(zip(ks, items, strict=True), key=lambda p: p[0].name, reverse=direction)
            return vec([x for _, x in pairs])
        cmp = compare if not direction else (lambda a, b: compare(b, a))
    else:
        cmp = _comparator(budget, fn, comp)
    if keys is None:
        return vec(sorted(items, key=cmp_to_key(cmp)))
    pkey = cmp_to_key(cmp)
    order = sorted(range(len(items)), key=lambda i: pkey(keys[i]))
    return vec([items[i] for i in order])


@add(
    "sort",
    "(sort coll) (sort comp coll)",
    "The elements in order (stable); comp is a comparator such as < > or compare.",
    needs_budget=True,
)
def sort(budget: Budget, a: Any, b: Any = MISSING) -> Any:
    if b is MISSING:
        return _sorted(budget, "sort", seq("sort", a), None, None)
    return _sorted(budget, "sort", seq("sort", b), None, a)


@add(
    "sort-by",
    "(sort-by keyfn coll) (sort-by keyfn comp coll)",
    "The elements ordered by (keyfn x) (stable); e.g. (sort-by :price > items).",
    needs_budget=True,
)
def sort_by(budget: Budget, keyfn: Any, a: Any, b: Any = MISSING) -> Any:
    f = unwrap(keyfn, "sort-by")
    if b is MISSING:
        items = seq("sort-by", a)
        comp = None
    else:
        items = seq("sort-by", b)
        comp = a
    try:
        if type(keyfn) is Keyword:
            keys = [x.get(keyfn) if type(x) is Map else kw_get(x, keyfn) for x in items]
        else:
            keys = [f(x) for x in items]
    except TypeError:
        reraise(keyfn, 1)
        raise
    return _sorted(budget, "sort-by", items, keys, comp)


@add("max-key", "(max-key k x & xs)", "The x for which (k x) is largest (the last on ties).")
def max_key(k: Any, x: Any, *xs: Any) -> Any:
    f = to_fn(k, "max-key")
    if not xs:
        return x  # as Clojure: (max-key k x) never calls k
    best, kb = x, num("max-key", f(x))
    for y in xs:
        ky = num("max-key", f(y))
        if ky >= kb:
            best, kb = y, ky
    return best


@add("min-key", "(min-key k x & xs)", "The x for which (k x) is smallest (the last on ties).")
def min_key(k: Any, x: Any, *xs: Any) -> Any:
    f = to_fn(k, "min-key")
    if not xs:
        return x
    best, kb = x, num("min-key", f(x))
    for y in xs:
        ky = num("min-key", f(y))
        if ky <= kb:
            best, kb = y, ky
    return best
