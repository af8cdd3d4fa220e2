"""Sequence access and slicing: first, rest, nth, take, drop, count, ... (nil-punning)."""

from __future__ import annotations

from typing import Any

from ptcflow.lisp._colls import EMPTY_MAP, EMPTY_VEC, Map, Vector, vec as vector_of
from ptcflow.lisp.builtins._registry import Registry, count_arg, integer, seq, visit
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.values import to_fn

REGISTRY = Registry("sequences", "Sequences")
add = REGISTRY.add


def _sliced(v: Any) -> Any:
    """``v``, a slice just made: copying its elements counts as steps."""
    visit(len(v))
    return v


@add("first", "(first coll)", "The first element, or nil when coll is empty or nil.")
def first(coll: Any) -> Any:
    if type(coll) is Vector:
        return coll[0] if coll else None
    if coll is None:
        return None
    s = seq("first", coll)
    return s[0] if s else None


@add("second", "(second coll)", "The second element, or nil.")
def second(coll: Any) -> Any:
    if type(coll) is Vector:
        return coll[1] if len(coll) > 1 else None
    s = seq("second", coll)
    return s[1] if len(s) > 1 else None


@add("last", "(last coll)", "The last element, or nil.")
def last(coll: Any) -> Any:
    if type(coll) is Vector:
        return coll[-1] if coll else None
    s = seq("last", coll)
    return s[-1] if s else None


@add("rest", "(rest coll)", "All but the first element; [] when there are none.")
def rest(coll: Any) -> Any:
    return _sliced(seq("rest", coll)[1:])


@add("next", "(next coll)", "All but the first element; nil when there are none.")
def next_(coll: Any) -> Any:
    s = _sliced(seq("next", coll)[1:])
    return s or None


@add("butlast", "(butlast coll)", "All but the last element; nil when there are none.")
def butlast(coll: Any) -> Any:
    s = _sliced(seq("butlast", coll)[:-1])
    return s or None


@add(
    "nth",
    "(nth coll i) (nth coll i not-found)",
    "The element at index i; an error when out of range unless not-found is given.",
    arity=(2, 3),
)
def nth(coll: Any, i: Any, *not_found: Any) -> Any:
    integer("nth", i, "an integer index")
    if coll is None:
        return not_found[0] if not_found else None
    t = type(coll)
    if t is not Vector and t is not str:
        raise type_error("nth", "a vector or string (use get for maps)", coll)
    if 0 <= i < len(coll):
        return coll[i]
    if not_found:
        return not_found[0]
    raise LispError(
        "type",
        f"nth: index {i} is out of range for {len(coll)} elements; pass a default "
        "(nth coll i nil) or use get",
    )


@add("count", "(count coll)", "The number of elements (characters of a string); 0 for nil.")
def count(coll: Any) -> int:
    t = type(coll)
    if t is Vector or t is dict or t is str or t is frozenset or t is Map:
        return len(coll)
    if coll is None:
        return 0
    raise type_error("count", "a collection or string", coll)


@add("take", "(take n coll)", "The first n elements.")
def take(n: Any, coll: Any) -> Any:
    k = count_arg("take", n)
    return _sliced(seq("take", coll)[: max(k, 0)])


@add("drop", "(drop n coll)", "All but the first n elements.")
def drop(n: Any, coll: Any) -> Any:
    k = count_arg("drop", n)
    return _sliced(seq("drop", coll)[max(k, 0) :])


@add("take-last", "(take-last n coll)", "The last n elements; nil when there are none.")
def take_last(n: Any, coll: Any) -> Any:
    k = count_arg("take-last", n)
    s = seq("take-last", coll)
    return _sliced(s[-k:] if k > 0 else EMPTY_VEC) or None


@add(
    "drop-last",
    "(drop-last coll) (drop-last n coll)",
    "All but the last n (default 1).",
    arity=(1, 2),
)
def drop_last(n: Any, *coll: Any) -> Any:
    if not coll:
        return _sliced(seq("drop-last", n)[:-1])
    k = count_arg("drop-last", n)
    s = seq("drop-last", coll[0])
    return _sliced(s[: max(len(s) - k, 0)]) if k > 0 else s


@add(
    "take-while",
    "(take-while pred coll)",
    "The leading elements for which pred is truthy.",
)
def take_while(pred: Any, coll: Any) -> Any:
    f = to_fn(pred, "take-while")
    s = seq("take-while", coll)
    for i, x in enumerate(s):
        r = f(x)
        if r is None or r is False:
            return _sliced(s[:i])
    visit(len(s))
    return s


@add(
    "drop-while",
    "(drop-while pred coll)",
    "The elements from the first one for which pred is falsy.",
)
def drop_while(pred: Any, coll: Any) -> Any:
    f = to_fn(pred, "drop-while")
    s = seq("drop-while", coll)
    for i, x in enumerate(s):
        r = f(x)
        if r is None or r is False:
            visit(i)
            return _sliced(s[i:])
    visit(len(s))
    return EMPTY_VEC


@add("reverse", "(reverse coll)", "The elements in reverse order.")
def reverse(coll: Any) -> Any:
    return _sliced(seq("reverse", coll)[::-1])


@add("seq", "(seq coll)", "The elements as a sequence, or nil when empty.")
def seq_(coll: Any) -> Any:
    return seq("seq", coll) or None


@add("vec", "(vec coll)", "The elements as a vector.", aliases=("doall",))
def vec(coll: Any) -> Any:
    return seq("vec", coll)


@add("empty", "(empty coll)", "An empty collection of the same kind; nil for nil.")
def empty(coll: Any) -> Any:
    t = type(coll)
    if t is Vector:
        return EMPTY_VEC
    if t is dict or t is Map:
        return EMPTY_MAP
    if t is frozenset:
        return frozenset()
    if t is str:
        return ""
    if coll is None:
        return None
    raise type_error("empty", "a collection", coll)


@add("not-empty", "(not-empty coll)", "coll, or nil when it is empty.")
def not_empty(coll: Any) -> Any:
    t = type(coll)
    if t is Vector or t is dict or t is frozenset or t is str or t is Map:
        return coll if coll else None
    if coll is None:
        return None
    raise type_error("not-empty", "a collection", coll)


@add("peek", "(peek v)", "The last element of a vector; nil when empty.")
def peek(v: Any) -> Any:
    if v is None:
        return None
    if type(v) is not Vector:
        raise type_error("peek", "a vector", v)
    return v[-1] if v else None


@add("pop", "(pop v)", "The vector without its last element.")
def pop(v: Any) -> Any:
    if v is None:
        return None
    if type(v) is not Vector:
        raise type_error("pop", "a vector", v)
    if not v:
        raise LispError("type", "pop: cannot pop an empty vector; check (empty? v) first")
    return v[:-1]


@add("subvec", "(subvec v start) (subvec v start end)", "The elements from start to end.")
def subvec(v: Any, start: Any, end: Any = None) -> Any:
    if type(v) is not Vector:
        raise type_error("subvec", "a vector", v)
    s = integer("subvec", start, "integer indexes")
    e = len(v) if end is None else integer("subvec", end, "integer indexes")
    if not 0 <= s <= e <= len(v):
        raise LispError(
            "type",
            f"subvec: indexes {s}..{e} are out of range for {len(v)} elements; "
            "use take/drop for lenient slicing",
        )
    return v[s:e]


@add("dedupe", "(dedupe coll)", "coll without consecutive duplicates.")
def dedupe(coll: Any) -> Any:
    from ptcflow.lisp.values import lisp_eq

    out: list[Any] = []
    for x in _sliced(seq("dedupe", coll)):
        if not out or not lisp_eq(out[-1], x):
            out.append(x)
    return vector_of(out)


@add("ffirst", "(ffirst coll)", "(first (first coll)).")
def ffirst(coll: Any) -> Any:
    return first(first(coll))


@add("nthrest", "(nthrest coll n)", "All but the first n elements (like drop); [] when none.")
def nthrest(coll: Any, n: Any) -> Any:
    return drop(n, coll)


@add("nthnext", "(nthnext coll n)", "All but the first n elements; nil when none.")
def nthnext(coll: Any, n: Any) -> Any:
    return drop(n, coll) or None


@add("split-at", "(split-at n coll)", "[(take n coll) (drop n coll)].")
def split_at(n: Any, coll: Any) -> Any:
    return vector_of((take(n, coll), drop(n, coll)))


@add(
    "split-with",
    "(split-with pred coll)",
    "[(take-while pred coll) (drop-while pred coll)].",
)
def split_with(pred: Any, coll: Any) -> Any:
    head = take_while(pred, coll)
    return vector_of((head, _sliced(seq("split-with", coll)[len(head) :])))


@add("take-nth", "(take-nth n coll)", "Every n-th element, starting with the first.")
def take_nth(n: Any, coll: Any) -> Any:
    k = count_arg("take-nth", n)
    if k <= 0:
        raise LispError("type", f"take-nth: n must be positive, got {k} (0 would be infinite)")
    return _sliced(seq("take-nth", coll)[::k])


@add("nfirst", "(nfirst coll)", "(next (first coll)).")
def nfirst(coll: Any) -> Any:
    return next_(first(coll))


@add("nnext", "(nnext coll)", "(next (next coll)).")
def nnext(coll: Any) -> Any:
    return next_(next_(coll))


@add("fnext", "(fnext coll)", "(first (next coll)): the second element.")
def fnext(coll: Any) -> Any:
    return first(next_(coll))
