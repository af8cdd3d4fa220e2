"""Sets: union, intersection, difference, disj, subset?, superset? (also ``clojure.set/``
and ``set/``). Vectors are accepted where a set is expected and treated as sets.
"""

from __future__ import annotations

from typing import Any

from ptcflow.lisp._colls import Map, Vector, make_set
from ptcflow.lisp.builtins._registry import Registry, iterate
from ptcflow.lisp.errors import type_error
from ptcflow.lisp.limits import Budget

REGISTRY = Registry("sets", "Sets")
add = REGISTRY.add


def _aliases(name: str) -> tuple[str, ...]:
    return (f"clojure.set/{name}", f"set/{name}")


def _as_set(fn: str, s: Any) -> frozenset[Any]:
    t = type(s)
    if t is frozenset:
        return s  # type: ignore[no-any-return]
    if s is None:
        return frozenset()
    if t is Vector or t is dict or t is Map:
        return make_set(iterate(fn, s))
    raise type_error(fn, "sets", s)


@add(
    "union",
    "(union & sets)",
    "A set of the members of all sets.",
    aliases=_aliases("union"),
    needs_budget=True,
)
def union(budget: Budget, *sets: Any) -> frozenset[Any]:
    out: frozenset[Any] = frozenset()
    largest = 0
    for s in sets:
        part = _as_set("union", s)
        largest = max(largest, len(part))
        out = out | part
        budget.work(len(out))  # each union copies what it has so far
    budget.check_grow(len(out), len(out) - largest, "union")
    return out


@add(
    "intersection",
    "(intersection s & sets)",
    "A set of the members present in every set.",
    aliases=_aliases("intersection"),
    needs_budget=True,
)
def intersection(budget: Budget, s: Any, *sets: Any) -> frozenset[Any]:
    out = _as_set("intersection", s)
    for x in sets:
        part = _as_set("intersection", x)
        budget.work(min(len(out), len(part)))
        out = out & part
    return out


@add(
    "difference",
    "(difference s & sets)",
    "A set of the members of s that are in none of the other sets.",
    aliases=_aliases("difference"),
    needs_budget=True,
)
def difference(budget: Budget, s: Any, *sets: Any) -> frozenset[Any]:
    out = _as_set("difference", s)
    for x in sets:
        budget.work(len(out))  # the difference is a copy
        out = out - _as_set("difference", x)
    return out


@add(
    "subset?",
    "(subset? a b)",
    "True when every member of a is in b.",
    aliases=_aliases("subset?"),
)
def is_subset(a: Any, b: Any) -> bool:
    return _as_set("subset?", a) <= _as_set("subset?", b)


@add(
    "superset?",
    "(superset? a b)",
    "True when every member of b is in a.",
    aliases=_aliases("superset?"),
)
def is_superset(a: Any, b: Any) -> bool:
    return _as_set("superset?", a) >= _as_set("superset?", b)


@add("disj", "(disj s & xs)", "The set s without the members xs.", needs_budget=True)
def disj(budget: Budget, s: Any, *xs: Any) -> Any:
    if s is None:
        return None
    if type(s) is not frozenset:
        raise type_error("disj", "a set", s)
    budget.work(len(s))  # a set is copied whole
    return s - make_set(xs)
