"""Maps: get, assoc, update, merge, select-keys, ... Maps are never mutated: every change
returns a new map. ``nil`` acts as an empty map (``(assoc nil :a 1)`` is ``{:a 1}``).
"""

from __future__ import annotations

from typing import Any

from ptcflow.lisp._colls import Map, Vector, host_get, map_items, mkey, vec
from ptcflow.lisp._convert import ordered_items
from ptcflow.lisp.builtins._registry import (
    MISSING,
    Registry,
    check_map,
    iterate,
    program_map,
    visit,
)
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import to_fn

REGISTRY = Registry("maps", "Maps")
add = REGISTRY.add


def _get(m: Any, k: Any, default: Any) -> Any:
    t = type(m)
    if t is Map:
        return m.get(mkey(k), default)
    if t is dict:
        return host_get(m, k, default)
    if t is Vector or t is str:
        if type(k) is int and 0 <= k < len(m):
            return m[k]
        return default
    if t is frozenset:
        return k if mkey(k) in m else default
    return default


@add(
    "get",
    "(get m k) (get m k default)",
    "The value of key k in map m (index k of a vector, member k of a set), or default (nil).",
)
def get(m: Any, k: Any, default: Any = None) -> Any:
    return _get(m, k, default)


@add(
    "get-in",
    "(get-in m ks) (get-in m ks default)",
    "The value at the path of keys ks in nested maps and vectors, or default (nil).",
)
def get_in(m: Any, ks: Any, default: Any = None) -> Any:
    for k in iterate("get-in", ks):
        m = _get(m, k, MISSING)
        if m is MISSING:
            return default
    return m


def _assoc1(fn: str, m: Any, k: Any, v: Any) -> Any:
    t = type(m)
    if t is Map:
        return m.set(mkey(k), v)
    if t is dict or m is None:
        return program_map(fn, m).set(mkey(k), v)
    if t is Vector:
        if type(k) is not int or not 0 <= k <= len(m):
            raise LispError(
                "type",
                f"{fn}: index {k!r} is out of range for a vector of {len(m)} "
                "(valid: 0 to the length)",
            )
        return m.append(v) if k == len(m) else m.set(k, v)
    raise type_error(fn, "a map, vector or nil", m)


@add(
    "assoc",
    "(assoc m k v & kvs)",
    "m with key k set to v (and more key/value pairs); on a vector, k is an index.",
    needs_budget=True,
)
def assoc(budget: Budget, m: Any, k: Any, v: Any, *kvs: Any) -> Any:
    if len(kvs) % 2:
        raise LispError("arity", "assoc needs key/value pairs: (assoc m :a 1 :b 2)")
    n = 1 + len(kvs) // 2
    if type(m) is dict:  # a host map becomes a program map: charged once, in full
        budget.check_size(len(m) + n, "assoc")
    elif type(m) is Map:
        budget.check_grow(len(m) + n, n, "assoc")
    m = _assoc1("assoc", m, k, v)
    for i in range(0, len(kvs), 2):
        m = _assoc1("assoc", m, kvs[i], kvs[i + 1])
    return m


def _path(fn: str, ks: Any) -> Any:
    if type(ks) is not Vector or not ks:
        raise type_error(fn, "a non-empty vector of keys as the path", ks)
    return ks


@add(
    "assoc-in",
    "(assoc-in m ks v)",
    "m with the value at the key path ks set to v, creating maps as needed.",
)
def assoc_in(m: Any, ks: Any, v: Any) -> Any:
    path = _path("assoc-in", ks)
    k = path[0]
    if len(path) == 1:
        return _assoc1("assoc-in", m, k, v)
    return _assoc1("assoc-in", m, k, assoc_in(_get(m, k, None), path[1:], v))


@add(
    "update",
    "(update m k f & args)",
    "m with the value at k replaced by (f old-value & args).",
)
def update(m: Any, k: Any, f: Any, *args: Any) -> Any:
    fn = to_fn(f, "update")
    return _assoc1("update", m, k, fn(_get(m, k, None), *args))


@add(
    "update-in",
    "(update-in m ks f & args)",
    "m with the value at the key path ks replaced by (f old-value & args).",
)
def update_in(m: Any, ks: Any, f: Any, *args: Any) -> Any:
    path = _path("update-in", ks)
    fn = to_fn(f, "update-in")
    k = path[0]
    if len(path) == 1:
        return _assoc1("update-in", m, k, fn(_get(m, k, None), *args))
    return _assoc1("update-in", m, k, update_in(_get(m, k, None), path[1:], fn, *args))


@add("dissoc", "(dissoc m & ks)", "m without the keys ks.")
def dissoc(m: Any, *ks: Any) -> Any:
    if m is None:
        return None
    out = program_map("dissoc", m)
    for k in ks:
        key = mkey(k)
        if key in out:
            out = out.delete(key)
    return out


@add(
    "merge",
    "(merge & maps)",
    "One map with the entries of all maps; later keys win; nil maps are skipped.",
    needs_budget=True,
)
def merge(budget: Budget, *maps: Any) -> Any:
    out: Map[Any, Any] | None = None
    for m in maps:
        if m is None:
            continue
        part = program_map("merge", m)
        if out is None:
            out = part
            if type(m) is dict:
                budget.check_size(len(part), "merge")
            continue
        budget.check_grow(len(out) + len(part), len(part), "merge")
        out = out.update(part)
    return out


@add(
    "merge-with",
    "(merge-with f & maps)",
    "Like merge, but values of keys in several maps are combined with (f old new).",
    needs_budget=True,
)
def merge_with(budget: Budget, f: Any, *maps: Any) -> Any:
    fn = to_fn(f, "merge-with")
    out: Map[Any, Any] | None = None
    for m in maps:
        if m is None:
            continue
        part = program_map("merge-with", m)
        if out is None:
            out = part
            continue
        budget.check_grow(len(out) + len(part), len(part), "merge-with")
        for k, v in part.items():
            old = out.get(k, MISSING)
            out = out.set(k, v if old is MISSING else fn(old, v))
    return out


@add("select-keys", "(select-keys m ks)", "A map with only the keys ks of m that are present.")
def select_keys(m: Any, ks: Any) -> Map[Any, Any]:
    src = check_map("select-keys", m)
    out = {}
    for k in iterate("select-keys", ks):
        v = _get(src, k, MISSING)
        if v is not MISSING:
            out[mkey(k)] = v
    return Map(out)


@add("keys", "(keys m)", "The keys of m as a sequence; nil when m is empty.")
def keys(m: Any) -> Any:
    src = check_map("keys", m)
    visit(len(src))
    return vec(k for k, _ in ordered_items(src)) or None


@add("vals", "(vals m)", "The values of m as a sequence (in the order of keys); nil when empty.")
def vals(m: Any) -> Any:
    src = check_map("vals", m)
    visit(len(src))
    return vec(v for _, v in ordered_items(src)) or None


@add(
    "find",
    "(find m k) (find pred coll)",
    "The entry [k v] of map m (or [i x] of a vector), or nil when k is absent; given a "
    "predicate and a collection, the first element for which it is truthy.",
)
def find(m: Any, k: Any) -> Any:
    t = type(m)
    if t is Vector:
        return vec((k, m[k])) if type(k) is int and 0 <= k < len(m) else None
    if t is Map or t is dict or m is None:
        v = _get(m, k, MISSING)
        return None if v is MISSING else vec((k, v))
    if callable(m) or t is frozenset:  # the reference's (find pred coll); Clojure would throw
        pred = to_fn(m, "find")
        for x in iterate("find", k):
            r = pred(x)
            if r is not None and r is not False:
                return x
        return None
    raise type_error("find", "a map (find m k) or a predicate (find pred coll)", m)


@add("key", "(key entry)", "The key of a map entry [k v].")
def key(entry: Any) -> Any:
    if type(entry) is Vector and len(entry) == 2:
        return entry[0]
    raise type_error("key", "a map entry [k v]", entry)


@add("val", "(val entry)", "The value of a map entry [k v].")
def val(entry: Any) -> Any:
    if type(entry) is Vector and len(entry) == 2:
        return entry[1]
    raise type_error("val", "a map entry [k v]", entry)


@add("update-vals", "(update-vals m f)", "m with every value v replaced by (f v).")
def update_vals(m: Any, f: Any) -> Map[Any, Any]:
    fn = to_fn(f, "update-vals")
    src = check_map("update-vals", m)
    visit(len(src))
    return Map({mkey(k): fn(v) for k, v in map_items(src)})


@add("update-keys", "(update-keys m f)", "m with every key k replaced by (f k).")
def update_keys(m: Any, f: Any) -> Map[Any, Any]:
    fn = to_fn(f, "update-keys")
    src = check_map("update-keys", m)
    visit(len(src))
    return Map({mkey(fn(k)): v for k, v in map_items(src)})


@add(
    "rename-keys",
    "(rename-keys m kmap)",
    "m with each key k renamed to (kmap k).",
    aliases=("clojure.set/rename-keys", "set/rename-keys"),
)
def rename_keys(m: Any, kmap: Any) -> Any:
    if m is None:
        return None
    src = program_map("rename-keys", m)
    renames = program_map("rename-keys", kmap)
    out = {k: v for k, v in src.items() if k not in renames}
    for old, new in map_items(renames):
        if mkey(old) in src:
            out[mkey(new)] = src[mkey(old)]
    return Map(out)
