"""Extensions models write for the reference implementation (PtcRunner): ``where`` and the
predicate combinators, ``avg-by``, ``distinct-by``, ``zip``, ``combinations``, ``entries``,
``extract``, ``parse-int``, ``trunc``, ``upcase``/``downcase``, and the tree walkers
``walk``/``prewalk``/``postwalk``/``tree-seq``. Every one charges the run's budget for the
values it visits or builds.
"""

from __future__ import annotations

import math
from itertools import combinations as _combinations
from typing import Any

from ptcflow.lisp._colls import EMPTY_VEC, Map, Vector, mkey, vec
from ptcflow.lisp.builtins._math import MAX_INT, MIN_INT
from ptcflow.lisp.builtins._regex import as_regex, regex_input
from ptcflow.lisp.builtins._registry import Registry, count_arg, iterate, string
from ptcflow.lisp.errors import LimitExceeded, LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Keyword, lisp_eq, lookup, to_fn, truthy

REGISTRY = Registry("extras", "Data helpers (extensions)")
add = REGISTRY.add


def _field(item: Any, path: Any) -> Any:
    if type(path) is Vector:
        for k in path:
            if type(item) is not dict and type(item) is not Map:
                return None
            item = lookup(item, k)
        return item
    if type(item) is dict or type(item) is Map:
        return lookup(item, path)
    return None


def _num_or_str(x: Any) -> bool:
    t = type(x)
    return t is int or t is float or t is str


def _includes(v: Any, x: Any) -> bool:
    if type(v) is str:
        return type(x) is str and x in v
    if type(v) is Vector:
        return any(lisp_eq(e, x) for e in v)
    if type(v) is frozenset:
        return mkey(x) in v
    return False


def _ordered(op: str) -> Any:
    def test(v: Any, x: Any) -> bool:  # nil-safe: a missing field never matches
        if not (_num_or_str(v) and _num_or_str(x)) or (type(v) is str) != (type(x) is str):
            return False
        if op == "<":
            return v < x  # type: ignore[no-any-return]
        if op == ">":
            return v > x  # type: ignore[no-any-return]
        if op == "<=":
            return v <= x  # type: ignore[no-any-return]
        return v >= x  # type: ignore[no-any-return]

    return test


_WHERE_OPS: dict[str, Any] = {
    "=": lisp_eq,
    "not=": lambda v, x: not lisp_eq(v, x),
    "<": _ordered("<"),
    ">": _ordered(">"),
    "<=": _ordered("<="),
    ">=": _ordered(">="),
    "includes": _includes,
    "in": lambda v, xs: any(lisp_eq(v, x) for x in iterate("where in", xs)),
}


def _op_name(op: Any) -> str | None:
    name = getattr(op, "name", None)
    if type(op) is Keyword or isinstance(name, str):
        return name if name in _WHERE_OPS else None
    if type(op) is str and op in _WHERE_OPS:
        return op
    return None


@add(
    "where",
    "(where field) (where field op value)",
    "A predicate on maps: (where :age > 18), (where [:user :id] = 7), (where :tags includes "
    '"x"), (where :status in ["a" "b"]), (where :active); a missing field never matches an '
    "ordering. Ops: = not= < > <= >= includes in.",
    arity=(1, 3),
)
def where(field: Any, *rest: Any) -> Any:
    if len(rest) == 0:
        return lambda item: truthy(_field(item, field))
    if len(rest) != 2:
        raise LispError("arity", "where takes (where :field) or (where :field op value)")
    op, value = rest
    name = _op_name(op)
    if name is None:
        raise type_error("where", "an operator: = not= < > <= >= includes in", op)
    test = _WHERE_OPS[name]
    return lambda item: test(_field(item, field), value)


def _combine(name: str, preds: tuple[Any, ...], mode: str) -> Any:
    fns = [to_fn(p, name) for p in preds]

    def combined(x: Any) -> bool:
        hits = (truthy(f(x)) for f in fns)
        if mode == "all":
            return all(hits)
        if mode == "any":
            return any(hits)
        return not any(hits)

    return combined


@add("all-of", "(all-of & preds)", "A predicate true when every predicate is true.")
def all_of(*preds: Any) -> Any:
    return _combine("all-of", preds, "all")


@add("any-of", "(any-of & preds)", "A predicate true when some predicate is true.")
def any_of(*preds: Any) -> Any:
    return _combine("any-of", preds, "any")


@add("none-of", "(none-of & preds)", "A predicate true when no predicate is true.")
def none_of(*preds: Any) -> Any:
    return _combine("none-of", preds, "none")


@add(
    "avg-by",
    "(avg-by f coll)",
    "The mean of the numbers (f x) over coll (nil results skipped) as a float; nil when none.",
)
def avg_by(f: Any, coll: Any) -> float | None:
    fn = to_fn(f, "avg-by")
    total: Any = 0
    n = 0
    for x in iterate("avg-by", coll):
        v = fn(x)
        if v is None:
            continue
        if type(v) is not int and type(v) is not float:
            raise type_error("avg-by", "numbers from the key function", v)
        total += v
        n += 1
    return None if n == 0 else float(total) / n


@add("distinct-by", "(distinct-by f coll)", "The elements with distinct (f x), first kept.")
def distinct_by(f: Any, coll: Any) -> Any:
    fn = to_fn(f, "distinct-by")
    seen: set[Any] = set()
    out = []
    for x in iterate("distinct-by", coll):
        k = mkey(fn(x))
        if k not in seen:
            seen.add(k)
            out.append(x)
    return vec(out)


@add(
    "zip",
    "(zip & colls)",
    "Vectors of the i-th elements of each coll: (zip [1 2] [:a :b]) is [[1 :a] [2 :b]].",
)
def zip_(*colls: Any) -> Any:
    seqs = [iterate("zip", c) for c in colls]
    return vec([vec(group) for group in zip(*seqs, strict=False)])


@add(
    "combinations",
    "(combinations coll n)",
    "Every way to choose n elements of coll, in order (the count is checked first).",
    needs_budget=True,
)
def combinations(budget: Budget, coll: Any, n: Any) -> Any:
    items = list(iterate("combinations", coll))
    k = count_arg("combinations", n)
    if k < 0 or k > len(items):
        return EMPTY_VEC
    total = math.comb(len(items), k) if k <= len(items) else 0
    budget.check_size(total, "combinations")
    budget.charge(total * k * 16, "combinations")
    budget.step(total)
    return vec([vec(c) for c in _combinations(items, k)])


@add(
    "entries",
    "(entries m)",
    "The [key value] entries of map m as a vector (sorted by key for a program's map).",
)
def entries(m: Any) -> Any:
    from ptcflow.lisp._convert import ordered_items

    if m is None:
        return EMPTY_VEC
    if type(m) is not dict and type(m) is not Map:
        raise type_error("entries", "a map", m)
    return vec([vec(kv) for kv in ordered_items(m)])


def _group(budget: Budget, fn: str, rx: Any, s: Any, n: Any) -> Any:
    p = as_regex(fn, rx)
    m = p.search(regex_input(budget, fn, p, s))
    g = count_arg(fn, n)
    if not 0 <= g <= p.groups:
        raise LispError("type", f"{fn}: the pattern has no group {g}")
    return None if m is None else m.group(g)


@add(
    "extract",
    "(extract re s) (extract re s n)",
    "Group n (default 1, or the whole match when re has no group) of the first match of re "
    "in s; nil when there is none.",
    arity=(2, 3),
    needs_budget=True,
)
def extract(budget: Budget, rx: Any, s: Any, *n: Any) -> Any:
    default = 1 if as_regex("extract", rx).groups else 0
    return _group(budget, "extract", rx, s, n[0] if n else default)


@add(
    "extract-int",
    "(extract-int re s) (extract-int re s n) (extract-int re s n default)",
    "Like extract, parsed as an integer; default (nil) when there is no match or number.",
    arity=(2, 4),
    needs_budget=True,
)
def extract_int(budget: Budget, rx: Any, s: Any, *rest: Any) -> Any:
    default = rest[1] if len(rest) > 1 else None
    n = rest[0] if rest else (1 if as_regex("extract-int", rx).groups else 0)
    text = _group(budget, "extract-int", rx, s, n)
    value = parse_int(text) if type(text) is str else None
    return default if value is None else value


@add(
    "parse-int",
    "(parse-int s)",
    'The integer written in s ("42", " -7 "), or nil when s is not one.',
)
def parse_int(s: Any) -> int | None:
    text = string("parse-int", s).strip()
    if not text or len(text) > 20 or not text.lstrip("+-").isdigit() or text[1:].count("-"):
        return None
    if not text.lstrip("+-").isascii():
        return None
    n = int(text)
    return n if MIN_INT <= n <= MAX_INT else None


@add("trunc", "(trunc x)", "x truncated toward zero (an integer).")
def trunc(x: Any) -> int:
    from ptcflow.lisp.builtins._math import int_

    return int_(x)


@add("upcase", "(upcase s)", "s in upper case (same as upper-case).")
def upcase(s: Any) -> str:
    return string("upcase", s).upper()


@add("downcase", "(downcase s)", "s in lower case (same as lower-case).")
def downcase(s: Any) -> str:
    return string("downcase", s).lower()


# -- tree walkers: every node visited is a step, so a shared (DAG) structure cannot run away --


def _children(budget: Budget, form: Any, inner: Any) -> Any:
    t = type(form)
    if t is Vector:
        budget.step(1 + len(form))
        return vec([inner(x) for x in form])
    if t is dict or t is Map:
        from ptcflow.lisp._colls import map_items

        budget.step(1 + len(form))
        out = {}
        for k, v in map_items(form):
            entry = inner(vec((k, v)))
            if type(entry) is not Vector or len(entry) != 2:
                raise type_error("walk", "a [key value] entry back for a map", entry)
            out[mkey(entry[0])] = entry[1]
        return Map(out)
    if t is frozenset:
        from ptcflow.lisp._colls import make_set, set_items

        budget.step(1 + len(form))
        return make_set([inner(x) for x in set_items(form)])
    return form


@add(
    "walk",
    "(walk inner outer form)",
    "Applies inner to each element of form, then outer to the rebuilt form.",
    aliases=("clojure.walk/walk",),
    needs_budget=True,
)
def walk(budget: Budget, inner: Any, outer: Any, form: Any) -> Any:
    return to_fn(outer, "walk")(_children(budget, form, to_fn(inner, "walk")))


@add(
    "postwalk",
    "(postwalk f form)",
    "Rebuilds form bottom-up, replacing each node x by (f x) after its children.",
    aliases=("clojure.walk/postwalk",),
    needs_budget=True,
)
def postwalk(budget: Budget, f: Any, form: Any) -> Any:
    fn = to_fn(f, "postwalk")

    def go(x: Any) -> Any:
        budget.step()
        return fn(_children(budget, x, go))

    return go(form)


@add(
    "prewalk",
    "(prewalk f form)",
    "Rebuilds form top-down, replacing each node x by (f x) before its children.",
    aliases=("clojure.walk/prewalk",),
    needs_budget=True,
)
def prewalk(budget: Budget, f: Any, form: Any) -> Any:
    fn = to_fn(f, "prewalk")

    def go(x: Any) -> Any:
        budget.step()
        return _children(budget, fn(x), go)

    return go(form)


@add(
    "tree-seq",
    "(tree-seq branch? children root)",
    "The nodes of a tree, depth first: root, then the tree-seq of each of (children node) "
    "when (branch? node).",
    needs_budget=True,
)
def tree_seq(budget: Budget, branch: Any, children: Any, root: Any) -> Any:
    is_branch, kids = to_fn(branch, "tree-seq"), to_fn(children, "tree-seq")
    limit = budget.limits.max_collection_size
    out: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        budget.step()
        if len(out) > limit:
            raise LimitExceeded(
                "max_collection_size",
                f"tree-seq would build more than {limit} nodes; walk a smaller tree",
            )
        if truthy(is_branch(node)):
            stack.extend(reversed(list(iterate("tree-seq", kids(node)))))
    budget.check_size(len(out), "tree-seq")
    return vec(out)
