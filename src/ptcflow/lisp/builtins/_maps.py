"""Maps: get, assoc, update, merge, select-keys, ... Maps are never mutated: every change
returns a new map. ``nil`` acts as an empty map (``(assoc nil :a 1)`` is ``{:a 1}``).
"""

from __future__ import annotations

from typing import Any

from ptcflow.lisp.builtins._registry import MISSING, Registry, check_map, iterate, unhashable
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import to_fn

REGISTRY = Registry("maps", "Maps")
add = REGISTRY.add


def _get(m: Any, k: Any, default: Any) -> Any:
    t = type(m)
    if t is dict:
        try:
            return m.get(k, default)
        except TypeError:
            return default
    if t is tuple or t is str:
        if type(k) is int and 0 <= k < len(m):
            return m[k]
        return default
    if t is frozenset:
        try:
            return k if k in m else default
        except TypeError:
            return default
    return default


@add(
    "get",
    "(get m k) (get m k default)",
    "The value of key k in map m (index k of a vector, member k of a set), or default (nil).",
)
def get(m: Any, k: Any, default: Any = None) -> Any:
    if type(m) is dict:
        try:
            return m.get(k, default)
        except TypeError:
            return default
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
    if t is dict:
        try:
            return {**m, k: v}
        except TypeError:
            raise unhashable(fn, k) from None
    if m is None:
        try:
            return {k: v}
        except TypeError:
            raise unhashable(fn, k) from None
    if t is tuple:
        if type(k) is not int or not 0 <= k <= len(m):
            raise LispError(
                "type",
                f"{fn}: index {k!r} is out of range for a vector of {len(m)} "
                "(valid: 0 to the length)",
            )
        return (*m[:k], v, *m[k + 1 :])
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
    if type(m) is dict and not kvs:
        budget.check_grow(len(m) + 1, 1, "assoc")
        try:
            return {**m, k: v}
        except TypeError:
            raise unhashable("assoc", k) from None
    if type(m) is dict:
        budget.check_grow(len(m) + 1 + len(kvs) // 2, 1 + len(kvs) // 2, "assoc")
    m = _assoc1("assoc", m, k, v)
    for i in range(0, len(kvs), 2):
        m = _assoc1("assoc", m, kvs[i], kvs[i + 1])
    return m


def _path(fn: str, ks: Any) -> tuple[Any, ...]:
    if type(ks) is not tuple or not ks:
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
    if type(m) is not dict:
        raise type_error("dissoc", "a map", m)
    out = dict(m)
    for k in ks:
        try:
            out.pop(k, None)
        except TypeError:
            pass
    return out


@add(
    "merge",
    "(merge & maps)",
    "One map with the entries of all maps; later keys win; nil maps are skipped.",
    needs_budget=True,
)
def merge(budget: Budget, *maps: Any) -> Any:
    out: dict[Any, Any] | None = None
    for m in maps:
        if m is None:
            continue
        if type(m) is not dict:
            raise type_error("merge", "maps", m)
        out = dict(m) if out is None else {**out, **m}
    if out is not None:
        largest = max(len(m) for m in maps if m is not None)
        budget.check_grow(len(out), len(out) - largest, "merge")
    return out


@add(
    "merge-with",
    "(merge-with f & maps)",
    "Like merge, but values of keys in several maps are combined with (f old new).",
    needs_budget=True,
)
def merge_with(budget: Budget, f: Any, *maps: Any) -> Any:
    fn = to_fn(f, "merge-with")
    out: dict[Any, Any] | None = None
    for m in maps:
        if m is None:
            continue
        if type(m) is not dict:
            raise type_error("merge-with", "maps", m)
        if out is None:
            out = dict(m)
            continue
        for k, v in m.items():
            out[k] = fn(out[k], v) if k in out else v
    if out is not None:
        largest = max(len(m) for m in maps if m is not None)
        budget.check_grow(len(out), len(out) - largest, "merge-with")
    return out


@add("select-keys", "(select-keys m ks)", "A map with only the keys ks of m that are present.")
def select_keys(m: Any, ks: Any) -> dict[Any, Any]:
    src = check_map("select-keys", m)
    out = {}
    for k in iterate("select-keys", ks):
        try:
            if k in src:
                out[k] = src[k]
        except TypeError:
            pass
    return out


@add("keys", "(keys m)", "The keys of m as a sequence; nil when m is empty.")
def keys(m: Any) -> tuple[Any, ...] | None:
    return tuple(check_map("keys", m)) or None


@add("vals", "(vals m)", "The values of m as a sequence; nil when m is empty.")
def vals(m: Any) -> tuple[Any, ...] | None:
    return tuple(check_map("vals", m).values()) or None


@add("find", "(find m k)", "The entry [k v] of m, or nil when k is absent.")
def find(m: Any, k: Any) -> tuple[Any, Any] | None:
    src = check_map("find", m)
    try:
        if k in src:
            return (k, src[k])
    except TypeError:
        pass
    return None


@add("key", "(key entry)", "The key of a map entry [k v].")
def key(entry: Any) -> Any:
    if type(entry) is tuple and len(entry) == 2:
        return entry[0]
    raise type_error("key", "a map entry [k v]", entry)


@add("val", "(val entry)", "The value of a map entry [k v].")
def val(entry: Any) -> Any:
    if type(entry) is tuple and len(entry) == 2:
        return entry[1]
    raise type_error("val", "a map entry [k v]", entry)


@add("update-vals", "(update-vals m f)", "m with every value v replaced by (f v).")
def update_vals(m: Any, f: Any) -> dict[Any, Any]:
    fn = to_fn(f, "update-vals")
    return {k: fn(v) for k, v in check_map("update-vals", m).items()}


@add("update-keys", "(update-keys m f)", "m with every key k replaced by (f k).")
def update_keys(m: Any, f: Any) -> dict[Any, Any]:
    fn = to_fn(f, "update-keys")
    try:
        return {fn(k): v for k, v in check_map("update-keys", m).items()}
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        raise unhashable("update-keys", m) from None


@add(
    "rename-keys",
    "(rename-keys m kmap)",
    "m with each key k renamed to (kmap k).",
    aliases=("clojure.set/rename-keys", "set/rename-keys"),
)
def rename_keys(m: Any, kmap: Any) -> Any:
    if m is None:
        return None
    src = check_map("rename-keys", m)
    renames = check_map("rename-keys", kmap)
    out = {k: v for k, v in src.items() if k not in renames}
    for old, new in renames.items():
        if old in src:
            try:
                out[new] = src[old]
            except TypeError:
                raise unhashable("rename-keys", new) from None
    return out
