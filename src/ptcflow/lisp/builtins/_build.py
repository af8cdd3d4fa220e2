"""Building collections: conj, concat, into, range, repeat, partition, group-by, ...

Every builtin whose result can be larger than its input checks the run's budget before
building it, so ``(range 1e12)`` fails at once with a ``limit`` error and never allocates.
"""

from __future__ import annotations

import math
from itertools import chain
from typing import Any

from ptcflow.lisp._colls import EMPTY_VEC, Map, Vector, host_get, make_set, mkey, vec
from ptcflow.lisp.builtins._registry import (
    MISSING,
    Registry,
    charged,
    count_arg,
    iterate,
    num,
    program_map,
    reraise,
    seq,
    unwrap,
)
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import PLAIN_KEYS, Keyword, lisp_eq, to_fn

REGISTRY = Registry("collections", "Building collections")
add = REGISTRY.add


@add("list", "(list & xs)", "A sequence of the arguments (prints as a vector).")
def list_(*xs: Any) -> Any:
    return vec(xs)


@add("vector", "(vector & xs)", "A vector of the arguments.")
def vector(*xs: Any) -> Any:
    return vec(xs)


@add("hash-map", "(hash-map & kvs)", "A map of the key/value arguments.")
def hash_map(*kvs: Any) -> Map[Any, Any]:
    if len(kvs) % 2:
        raise LispError("arity", "hash-map needs an even number of arguments: keys and values")
    return Map({mkey(k): v for k, v in zip(kvs[::2], kvs[1::2], strict=True)})


@add("hash-set", "(hash-set & xs)", "A set of the arguments.")
def hash_set(*xs: Any) -> frozenset[Any]:
    return make_set(xs)


@add("set", "(set coll)", "A set of the elements of coll.")
def set_(coll: Any) -> frozenset[Any]:
    if type(coll) is frozenset:
        return coll
    return make_set(iterate("set", coll))


@add(
    "cons", "(cons x coll)", "A sequence of x followed by the elements of coll.", needs_budget=True
)
def cons(budget: Budget, x: Any, coll: Any) -> Any:
    s = seq("cons", coll)
    budget.check_grow(len(s) + 1, len(s) + 1, "cons")
    return vec((x, *s))


def _conj1(fn: str, coll: Any, x: Any) -> Any:
    t = type(coll)
    if t is Map:
        tx = type(x)
        if tx is Map or tx is dict:
            return coll.update({mkey(k): v for k, v in x.items()} if tx is dict else x)
        if tx is Vector and len(x) == 2:
            return coll.set(mkey(x[0]), x[1])
        raise type_error(fn, "a [key value] pair or a map to add to a map", x)
    if t is frozenset:
        return coll | {mkey(x)}
    raise type_error(fn, "a vector, map, set or nil to add to", coll)


@add(
    "conj",
    "(conj coll & xs)",
    "coll with the elements added: at the end of a vector (nil gives a vector), "
    "[k v] pairs into a map, members into a set.",
    needs_budget=True,
    arity=(1, None),
)
def conj(budget: Budget, *args: Any) -> Any:
    if not args:
        return ()
    coll, xs = args[0], args[1:]
    t = type(coll)
    if t is Vector or coll is None:
        base = EMPTY_VEC if coll is None else coll
        budget.check_grow(len(base) + len(xs), len(xs), "conj")
        return base.append(xs[0]) if len(xs) == 1 else base.extend(xs)
    if t is dict:
        coll = program_map("conj", coll)
        t = Map
    if t is Map or t is frozenset:
        budget.check_grow(len(coll) + len(xs), len(xs), "conj")
        if t is frozenset:
            budget.work(len(coll) * len(xs))  # a set is copied whole for each member
    for x in xs:
        coll = _conj1("conj", coll, x)
    return coll


@add(
    "concat",
    "(concat & colls)",
    "A sequence of the elements of all colls in order.",
    needs_budget=True,
)
def concat(budget: Budget, *colls: Any) -> Any:
    parts = [seq("concat", c) for c in colls]
    sizes = [len(p) for p in parts]
    # the first part is shared, the others are added to it (as in a concat loop)
    budget.check_grow(sum(sizes), sum(sizes[1:]), "concat")
    if not parts:
        return EMPTY_VEC
    return parts[0].extend(chain.from_iterable(parts[1:]))


@add(
    "into",
    "(into to) (into to from)",
    "to with all elements of from added, as by conj (vectors, maps and sets).",
    needs_budget=True,
)
def into(budget: Budget, to: Any, src: Any = MISSING) -> Any:
    if src is MISSING:
        return to
    t = type(to)
    if t is Vector or to is None:
        s = seq("into", src)
        base = EMPTY_VEC if to is None else to
        budget.check_grow(len(base) + len(s), len(s), "into")
        return base.extend(s)
    if t is dict or t is Map:
        base = program_map("into", to)
        if type(src) is dict or type(src) is Map:
            budget.check_grow(len(base) + len(src), len(src), "into")
            return base.update(src if type(src) is Map else {mkey(k): v for k, v in src.items()})
        items = seq("into", src)
        budget.check_grow(len(base) + len(items), len(items), "into")
        with base.mutate() as out:
            for i, x in enumerate(items):
                if not i & 1023:
                    budget.poll()  # charged above, done here: let the loop turn meanwhile
                tx = type(x)
                if tx is Vector and len(x) == 2:
                    out[mkey(x[0])] = x[1]
                elif tx is Map:
                    out.update(x)
                elif tx is dict:
                    out.update({mkey(k): v for k, v in x.items()})
                else:
                    raise type_error("into", "[key value] pairs to put into a map", x)
            return out.finish()
    if t is frozenset:
        items = seq("into", src)
        budget.check_grow(len(to) + len(items), len(items), "into")
        budget.work(len(to))  # the set is copied
        return to | make_set(items)
    raise type_error("into", "a vector, map, set or nil to add to", to)


@add(
    "flatten",
    "(flatten coll)",
    "The non-vector leaves of nested vectors, as one flat sequence.",
    needs_budget=True,
)
def flatten(budget: Budget, coll: Any) -> Any:
    if type(coll) is not Vector:
        return EMPTY_VEC
    out: list[Any] = []
    stack = [iter(coll)]
    limit = budget.limits.max_collection_size
    visited, work = 0, 1024
    while stack:
        for x in stack[-1]:
            visited += 1
            if visited > work:  # shared sub-vectors: charge the walk, not only the result
                budget.step(visited)
                visited = 0
            if type(x) is Vector:
                stack.append(iter(x))
                break
            out.append(x)
            if len(out) > limit:
                budget.check_size(len(out), "flatten")
        else:
            stack.pop()
    budget.check_size(len(out), "flatten")
    return vec(out)


@add(
    "interleave",
    "(interleave & colls)",
    "The first element of each coll, then the second of each, ... (stops at the shortest).",
    needs_budget=True,
)
def interleave(budget: Budget, *colls: Any) -> Any:
    seqs = [seq("interleave", c) for c in colls]
    if not seqs:
        return EMPTY_VEC
    budget.check_size(min(map(len, seqs)) * len(seqs), "interleave")
    return vec([x for group in zip(*seqs, strict=False) for x in group])


@add(
    "interpose",
    "(interpose sep coll)",
    "The elements of coll with sep between each two.",
    needs_budget=True,
)
def interpose(budget: Budget, sep: Any, coll: Any) -> Any:
    s = seq("interpose", coll)
    budget.check_size(max(2 * len(s) - 1, 0), "interpose")
    out: list[Any] = []
    for i, x in enumerate(s):
        if i:
            out.append(sep)
        out.append(x)
    return vec(out)


@add("distinct", "(distinct coll)", "The elements without duplicates, first occurrence kept.")
def distinct(coll: Any) -> Any:
    seen: set[Any] = set()
    out: list[Any] = []
    for x in iterate("distinct", coll):
        k = mkey(x)
        if k not in seen:
            seen.add(k)
            out.append(x)
    return vec(out)


def _range_len(start: float, end: float, step: float) -> int:
    if step > 0:
        return max(0, math.ceil((end - start) / step))
    return max(0, math.ceil((start - end) / -step))


@add(
    "range",
    "(range end) (range start end) (range start end step)",
    "Numbers from start (default 0) up to but excluding end, by step (default 1).",
    needs_budget=True,
    arity=(1, 3),
)
def range_(budget: Budget, *args: Any) -> Any:
    if not args:
        raise LispError(
            "arity", "range needs an end: (range 10); infinite ranges are not supported"
        )
    if len(args) > 3:
        raise LispError(
            "arity", "range takes (range end), (range start end) or (range start end step)"
        )
    for a in args:
        num("range", a)
        if type(a) is float and not math.isfinite(a):
            raise type_error("range", "finite numbers", a)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], 1)
    if len(args) == 3:
        step = args[2]
    if step == 0:
        raise LispError("type", "range: step must not be 0 (that would be infinite)")
    n = _range_len(start, end, step)
    budget.check_size(n, "range")
    if type(start) is int and type(end) is int and type(step) is int:
        return vec(range(start, end, step))
    out = []
    x = start
    for _ in range(n + 1):  # repeated addition, as Clojure does; n + 1 bounds float drift
        if (step > 0 and x >= end) or (step < 0 and x <= end):
            break
        out.append(x)
        x += step
    return vec(out)


@add(
    "repeat",
    "(repeat n x)",
    "A sequence of n copies of x (infinite repeat is not supported).",
    needs_budget=True,
)
def repeat(budget: Budget, n: Any, x: Any) -> Any:
    k = max(count_arg("repeat", n), 0)
    budget.check_size(k, "repeat")
    return vec((x,) * k)


@add("zipmap", "(zipmap keys vals)", "A map pairing each key with the value at the same position.")
def zipmap(keys: Any, vals: Any) -> Map[Any, Any]:
    pairs = zip(iterate("zipmap", keys), iterate("zipmap", vals), strict=False)
    return Map({mkey(k): v for k, v in pairs})


def _chunks(
    budget: Budget, fn: str, n: Any, step: Any, coll: Any, pad: Any, keep_partial: bool
) -> Any:
    size = count_arg(fn, n)
    stride = count_arg(fn, step)
    if size <= 0 or stride <= 0:
        raise LispError(
            "type", f"{fn}: the size and step must be positive, got {size} and {stride}"
        )
    s = seq(fn, coll)
    n_chunks = -(-len(s) // stride)
    budget.check_size(n_chunks, fn)  # the chunks themselves (each at most `size` long)
    budget.charge(n_chunks * min(size, len(s)) * 16, fn)
    out = []
    for i in range(0, len(s), stride):
        chunk = s[i : i + size]
        if len(chunk) < size:
            if pad is not None:
                chunk = chunk.extend(seq(fn, pad)[: size - len(chunk)])
                out.append(chunk)
            elif keep_partial:
                out.append(chunk)
            break
        out.append(chunk)
    return vec(out)


@add(
    "partition",
    "(partition n coll) (partition n step coll) (partition n step pad coll)",
    "Chunks of n elements, each starting step after the previous; an incomplete last "
    "chunk is dropped unless pad fills it.",
    needs_budget=True,
)
def partition(budget: Budget, n: Any, a: Any, b: Any = MISSING, c: Any = MISSING) -> Any:
    if b is MISSING:
        return _chunks(budget, "partition", n, n, a, None, False)
    if c is MISSING:
        return _chunks(budget, "partition", n, a, b, None, False)
    return _chunks(budget, "partition", n, a, c, b if b is not None else (), False)


@add(
    "partition-all",
    "(partition-all n coll) (partition-all n step coll)",
    "Chunks of n elements; the last chunk may be shorter.",
    needs_budget=True,
)
def partition_all(budget: Budget, n: Any, a: Any, b: Any = MISSING) -> Any:
    if b is MISSING:
        return _chunks(budget, "partition-all", n, n, a, None, True)
    return _chunks(budget, "partition-all", n, a, b, None, True)


@add(
    "partition-by",
    "(partition-by f coll)",
    "Splits coll into runs of consecutive elements with equal (f x).",
)
def partition_by(f: Any, coll: Any) -> Any:
    fn = to_fn(f, "partition-by")
    out: list[Any] = []
    run: list[Any] = []
    mark: Any = None
    for x in iterate("partition-by", coll):
        k = fn(x)
        if run and not lisp_eq(k, mark):
            out.append(vec(run))
            run = []
        run.append(x)
        mark = k
    if run:
        out.append(vec(run))
    return vec(out)


@add("group-by", "(group-by f coll)", "A map from (f x) to the vector of elements with that key.")
def group_by(f: Any, coll: Any) -> Map[Any, Any]:
    fn = unwrap(f, "group-by")
    groups: dict[Any, list[Any]] = {}
    is_kw = type(f) is Keyword
    plain = PLAIN_KEYS
    try:
        for x in iterate("group-by", coll):
            if is_kw:
                t = type(x)
                if t is dict:
                    k = x.get(f)
                    if k is None:
                        k = host_get(x, f)
                elif t is Map:
                    k = x.get(f)
                else:
                    k = f(x)
            else:
                k = fn(x)
            if type(k) not in plain:
                k = mkey(k)
            g = groups.get(k)
            if g is None:
                groups[k] = [x]
            else:
                g.append(x)
    except TypeError:
        reraise(f, 1)
        raise
    return Map({k: vec(v) for k, v in charged(groups.items(), len(groups))})


@add("frequencies", "(frequencies coll)", "A map from each distinct element to its count.")
def frequencies(coll: Any) -> Map[Any, int]:
    counts: dict[Any, int] = {}
    get = counts.get
    for x in iterate("frequencies", coll):
        k = mkey(x)
        counts[k] = get(k, 0) + 1
    return Map(counts)
