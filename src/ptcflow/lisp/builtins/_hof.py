"""Higher-order functions: map, filter, reduce, comp, partial, ... (eager, return vectors).

Keywords, maps, sets and vectors work wherever a function is expected: ``(map :id rows)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ptcflow.lisp._colls import Map, Vector, kw_get, map_items, vec
from ptcflow.lisp.builtins import _math
from ptcflow.lisp.builtins._registry import (
    MISSING,
    Registry,
    iterate,
    reraise,
    seq,
    unwrap,
    visit,
)
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Keyword, LispFn, to_fn

REGISTRY = Registry("higher-order", "Higher-order functions")
add = REGISTRY.add


@add(
    "map",
    "(map f coll) (map f c1 c2 & colls)",
    "The results of f on each element (with several colls, on the i-th of each; stops at "
    "the shortest).",
)
def map_(f: Any, coll: Any, *colls: Any) -> Any:
    fn = unwrap(f, "map")
    src = _elements(f, coll, "map")
    try:
        if not colls:
            if type(f) is Keyword:
                return vec([x.get(f) if type(x) is Map else kw_get(x, f) for x in src])
            leaf = getattr(f, "leaf1", None)
            if leaf is not None:
                return vec(_leaf_map(f, leaf, src))
            return vec([fn(x) for x in src])
        return vec(map(fn, src, *(iterate("map", c) for c in colls)))
    except TypeError:
        reraise(f, 1 + len(colls))
        raise


add("mapv", "(mapv f coll) (mapv f c1 c2 & colls)", "Same as map (results are vectors).")(map_)


@add("filter", "(filter pred coll)", "The elements for which (pred x) is truthy.")
def filter_(pred: Any, coll: Any) -> Any:
    fn = unwrap(pred, "filter")
    src = _elements(pred, coll, "filter")
    try:
        if type(pred) is Keyword:
            return vec([x for x in src if (r := kw_get(x, pred)) is not None and r is not False])
        leaf = getattr(pred, "leaf1", None)
        if leaf is not None:
            return vec(_leaf_filter(pred, leaf, src))
        return vec([x for x in src if (r := fn(x)) is not None and r is not False])
    except TypeError:
        reraise(pred, 1)
        raise


def _elements(f: Any, coll: Any, name: str) -> Iterable[Any]:
    """The elements ``f`` is applied to: a program function counts a step per call itself,
    anything else (a keyword, a builtin) is charged per element by :func:`iterate`."""
    if type(coll) is Vector and isinstance(f, LispFn):
        return coll  # type: ignore[no-any-return]
    return iterate(name, coll)


def _leaf_map(f: Any, leaf: Any, src: Iterable[Any]) -> list[Any]:
    """``[f(x) for x in src]`` for a program fn with :attr:`LispFn.leaf1`: its body runs here,
    with the same step count and checks as a call, without a call per element."""
    body, budget, pad = leaf
    cap = f._cap
    out: list[Any] = []
    add = out.append
    for x in src:
        steps = budget.steps = budget.steps + 1
        if steps >= budget._next_check:
            budget._slow_step()
        add(body([*cap, x, *pad]))
    return out


def _leaf_filter(f: Any, leaf: Any, src: Iterable[Any]) -> list[Any]:
    """``filter`` with a :attr:`LispFn.leaf1` predicate (see :func:`_leaf_map`)."""
    body, budget, pad = leaf
    cap = f._cap
    out: list[Any] = []
    add = out.append
    for x in src:
        steps = budget.steps = budget.steps + 1
        if steps >= budget._next_check:
            budget._slow_step()
        r = body([*cap, x, *pad])
        if r is not None and r is not False:
            add(x)
    return out


add("filterv", "(filterv pred coll)", "Same as filter.")(filter_)


@add("remove", "(remove pred coll)", "The elements for which (pred x) is falsy.")
def remove(pred: Any, coll: Any) -> Any:
    fn = unwrap(pred, "remove")
    src = _elements(pred, coll, "remove")
    try:
        return vec([x for x in src if (r := fn(x)) is None or r is False])
    except TypeError:
        reraise(pred, 1)
        raise


@add("keep", "(keep f coll)", "The non-nil results of (f x).")
def keep(f: Any, coll: Any) -> Any:
    fn = unwrap(f, "keep")
    try:
        return vec([r for x in iterate("keep", coll) if (r := fn(x)) is not None])
    except TypeError:
        reraise(f, 1)
        raise


@add("keep-indexed", "(keep-indexed f coll)", "The non-nil results of (f index x).")
def keep_indexed(f: Any, coll: Any) -> Any:
    fn = to_fn(f, "keep-indexed")
    return vec(
        [r for i, x in enumerate(iterate("keep-indexed", coll)) if (r := fn(i, x)) is not None]
    )


@add("map-indexed", "(map-indexed f coll)", "The results of (f index x) for each element.")
def map_indexed(f: Any, coll: Any) -> Any:
    fn = to_fn(f, "map-indexed")
    return vec([fn(i, x) for i, x in enumerate(iterate("map-indexed", coll))])


@add(
    "mapcat",
    "(mapcat f coll) (mapcat f c1 c2 & colls)",
    "The concatenation of the results of map.",
    needs_budget=True,
)
def mapcat(budget: Budget, f: Any, coll: Any, *colls: Any) -> Any:
    parts = map_(f, coll, *colls)
    out: list[Any] = []
    limit = budget.limits.max_collection_size
    for p in parts:
        out.extend(seq("mapcat", p))
        if len(out) > limit:
            break
    budget.check_size(len(out), "mapcat")
    return vec(out)


@add(
    "reduce",
    "(reduce f coll) (reduce f init coll)",
    "Combines the elements with f from the left: (f (f init x1) x2) ...",
)
def reduce_(f: Any, a: Any, b: Any = MISSING) -> Any:
    fn = unwrap(f, "reduce")
    if b is MISSING:
        it = iter(iterate("reduce", a))
        acc = next(it, MISSING)
        if acc is MISSING:
            try:
                return fn()
            except TypeError:
                reraise(f, 0)
                raise
    else:
        acc = a
        it = iter(iterate("reduce", b))
    if fn is _math.plus:
        return _sum(acc, it)
    try:
        for x in it:
            acc = fn(acc, x)
    except TypeError:
        reraise(f, 2)
        raise
    return acc


def _sum(acc: Any, it: Iterator[Any]) -> Any:
    """``(reduce + ...)`` without a call per number (anything unusual goes through ``+``)."""
    lo, hi, plus = _math.MIN_INT, _math.MAX_INT, _math.plus
    for x in it:
        ta, tx = type(acc), type(x)
        if ta is int and tx is int:
            r = acc + x
            acc = r if lo <= r <= hi else plus(acc, x)
        elif (ta is float or ta is int) and (tx is float or tx is int):
            acc = acc + x
        else:
            acc = plus(acc, x)
    return acc


@add(
    "reductions",
    "(reductions f coll) (reductions f init coll)",
    "The intermediate results of reduce: (reductions + [1 2 3]) is [1 3 6].",
)
def reductions(f: Any, a: Any, b: Any = MISSING) -> Any:
    fn = unwrap(f, "reductions")
    if b is MISSING:
        items = seq("reductions", a)
        if not items:
            try:
                return vec((fn(),))
            except TypeError:
                reraise(f, 0)
                raise
        acc, rest = items[0], items[1:]
    else:
        acc, rest = a, seq("reductions", b)
    visit(len(rest))
    out = [acc]
    try:
        for x in rest:
            acc = fn(acc, x)
            out.append(acc)
    except TypeError:
        reraise(f, 2)
        raise
    return vec(out)


@add("reduce-kv", "(reduce-kv f init m)", "Combines the entries with (f acc k v).")
def reduce_kv(f: Any, init: Any, m: Any) -> Any:
    fn = to_fn(f, "reduce-kv")
    if m is None:
        return init
    if type(m) is dict or type(m) is Map:
        items: Any = map_items(m)
    elif type(m) is Vector:
        items = enumerate(m)
    else:
        raise type_error("reduce-kv", "a map or vector", m)
    visit(len(m))
    acc = init
    for k, v in items:
        acc = fn(acc, k, v)
    return acc


@add("some", "(some pred coll)", "The first truthy (pred x), or nil.")
def some(pred: Any, coll: Any) -> Any:
    fn = unwrap(pred, "some")
    try:
        for x in iterate("some", coll):
            r = fn(x)
            if r is not None and r is not False:
                return r
    except TypeError:
        reraise(pred, 1)
        raise
    return None


@add("every?", "(every? pred coll)", "True when (pred x) is truthy for every element.")
def every(pred: Any, coll: Any) -> bool:
    fn = unwrap(pred, "every?")
    try:
        for x in iterate("every?", coll):
            r = fn(x)
            if r is None or r is False:
                return False
    except TypeError:
        reraise(pred, 1)
        raise
    return True


@add("not-any?", "(not-any? pred coll)", "True when (pred x) is falsy for every element.")
def not_any(pred: Any, coll: Any) -> bool:
    return some(pred, coll) is None


@add("not-every?", "(not-every? pred coll)", "True when (pred x) is falsy for some element.")
def not_every(pred: Any, coll: Any) -> bool:
    return not every(pred, coll)


@add(
    "apply",
    "(apply f args) (apply f x & args)",
    "Calls f with the arguments, the last spread.",
    arity=(2, None),
)
def apply(f: Any, *args: Any) -> Any:
    if not args:
        raise LispError("arity", "apply needs a collection of arguments: (apply f [1 2])")
    fn = f if callable(f) else to_fn(f, "apply")
    spread = seq("apply", args[-1])
    visit(len(spread))
    return fn(*args[:-1], *spread)


@add("comp", "(comp & fs)", "The composition: ((comp f g) x) is (f (g x)).")
def comp(*fs: Any) -> Any:
    fns = [to_fn(f, "comp") for f in reversed(fs)]
    if not fns:
        return identity
    if len(fns) == 1:
        return fns[0]
    first, rest = fns[0], fns[1:]

    def composed(*args: Any) -> Any:
        r = first(*args)
        for g in rest:
            r = g(r)
        return r

    return composed


@add("partial", "(partial f & args)", "f with the leading arguments fixed.")
def partial(f: Any, *args: Any) -> Any:
    fn = to_fn(f, "partial")

    def partially(*more: Any) -> Any:
        return fn(*args, *more)

    return partially


@add("complement", "(complement f)", "A function returning (not (f ...)).")
def complement(f: Any) -> Any:
    fn = to_fn(f, "complement")

    def negated(*args: Any) -> bool:
        r = fn(*args)
        return r is None or r is False

    return negated


@add("constantly", "(constantly x)", "A function that ignores its arguments and returns x.")
def constantly(x: Any) -> Any:
    def const(*args: Any) -> Any:
        return x

    return const


@add("juxt", "(juxt f & fs)", "A function returning the vector [(f x) (g x) ...].")
def juxt(f: Any, *fs: Any) -> Any:
    fns = [to_fn(g, "juxt") for g in (f, *fs)]

    def juxtaposed(*args: Any) -> Any:
        return vec([g(*args) for g in fns])

    return juxtaposed


@add("identity", "(identity x)", "Returns x.")
def identity(x: Any) -> Any:
    return x


@add(
    "fnil",
    "(fnil f x) (fnil f x y) (fnil f x y z)",
    "f with nil arguments (first, second, third) replaced by the given defaults.",
    arity=(2, 4),
)
def fnil(f: Any, *defaults: Any) -> Any:
    fn = to_fn(f, "fnil")
    if not 1 <= len(defaults) <= 3:
        raise LispError("arity", "fnil takes 1 to 3 defaults: (fnil f 0)")

    def patched(*args: Any) -> Any:
        fixed = list(args)
        for i, d in enumerate(defaults):
            if i < len(fixed) and fixed[i] is None:
                fixed[i] = d
        return fn(*fixed)

    return patched


@add("every-pred", "(every-pred p & ps)", "A predicate true when all of the predicates are.")
def every_pred(p: Any, *ps: Any) -> Any:
    fns = [to_fn(g, "every-pred") for g in (p, *ps)]

    def all_true(*args: Any) -> bool:
        for x in args:
            for g in fns:
                r = g(x)
                if r is None or r is False:
                    return False
        return True

    return all_true


@add("some-fn", "(some-fn p & ps)", "A function returning the first truthy predicate result.")
def some_fn(p: Any, *ps: Any) -> Any:
    fns = [to_fn(g, "some-fn") for g in (p, *ps)]

    def first_true(*args: Any) -> Any:
        for x in args:
            for g in fns:
                r = g(x)
                if r is not None and r is not False:
                    return r
        return None

    return first_true


@add("run!", "(run! f coll)", "Calls f on each element for its side effects; returns nil.")
def run(f: Any, coll: Any) -> None:
    fn = to_fn(f, "run!")
    for x in iterate("run!", coll):
        fn(x)


@add("dorun", "(dorun coll)", "Returns nil (sequences are already eager).")
def dorun(coll: Any) -> None:
    return None
