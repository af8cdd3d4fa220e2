"""The persistent collections behind PTC-Lisp values, and the keys that keep Clojure's equality.

Vectors are ``pyrsistent`` vectors (:data:`Vector`, a C extension), maps are
``immutables.Map`` hash array mapped tries: ``conj`` and ``assoc`` share structure with the
collection they extend, so ``(reduce #(assoc %1 (:id %2) %2) {} rows)`` is linear. Maps that
came from the host (``ctx``, tool results) stay Python ``dict`` objects with keyword keys,
never mutated: they are read the way models read them (:func:`host_get`), and the first
``assoc``/``merge`` on one gives a program map.

Python's ``1 == 1.0 == True`` would merge keys Clojure keeps apart, and Python cannot hash a
``dict``, so map keys and set members are *encoded* (:func:`mkey`): ``true``/``false``, floats
and collections are wrapped with a key that compares them the way ``=`` does. Iteration
decodes them (:func:`unkey`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any, Final, final

from immutables import Map
from pyrsistent import pvector

from ptcflow.lisp.limits import Budget, active_budget

__all__ = (
    "EMPTY_MAP",
    "EMPTY_VEC",
    "Map",
    "Vector",
    "equal",
    "host_alternatives",
    "host_get",
    "is_map",
    "key_hash",
    "kw_get",
    "make_set",
    "map_items",
    "map_keys",
    "mkey",
    "set_items",
    "unkey",
    "vec",
)

Vector: Final[Any] = type(pvector())
"""The type of PTC-Lisp vectors (and sequences): ``pyrsistent``'s C ``PVector``."""
EMPTY_VEC: Final[Any] = pvector()
EMPTY_MAP: Final[Map[Any, Any]] = Map()

vec = pvector
"""Build a vector from an iterable (``vec([1, 2])``)."""


@final
class _Distinct:
    """A stored key whose equality is Clojure's: ``true``, floats, and collections (compared
    by :func:`equal`, so ``[1]`` and ``[1.0]`` stay apart). The hash is computed once, by a
    walk charged to the run's budget (:func:`key_hash`)."""

    __slots__ = ("hash", "value")

    def __init__(self, value: Any, hash_: int) -> None:
        self.value = value
        self.hash = hash_

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is _Distinct
            and self.hash == other.hash
            and (self.value is other.value or equal(self.value, other.value, nan_equal=True))
        )

    def __hash__(self) -> int:
        return self.hash

    def __repr__(self) -> str:
        return f"_Distinct({self.value!r})"


_TRUE: Final = _Distinct(True, hash(("#bool", True)))
_FALSE: Final = _Distinct(False, hash(("#bool", False)))
_NAN_HASH: Final = hash(("#float", "nan"))


def mkey(k: Any) -> Any:
    """The key under which ``k`` is stored in a map or set (itself for the common types).

    Example:
        >>> mkey(1) == mkey(1.0), mkey("a")
        (False, 'a')
    """
    t = type(k)
    if t is bool:
        return _TRUE if k else _FALSE
    if t is float:
        return _Distinct(k, hash(("#float", k)) if k == k else _NAN_HASH)
    if t is dict or t is Vector or t is Map or t is frozenset:
        return _Distinct(k, key_hash(k, active_budget()))
    return k


def key_hash(x: Any, budget: Budget | None) -> int:
    """The hash of ``x`` as a map key, consistent with :func:`equal` (``nan_equal=True``).

    Every collection walked charges its elements to ``budget`` as steps, so hashing a value
    that shares structure (``[v v]`` doubled 64 times) ends in a ``limit`` error.
    """
    t = type(x)
    if t is str or t is int or x is None:
        return hash(x)
    if t is bool:
        return hash(_TRUE if x else _FALSE)
    if t is float:
        return hash(("#float", x)) if x == x else _NAN_HASH
    if t is Vector:
        if budget is not None:
            budget.step(1 + len(x))
        return hash(("#vec", *[key_hash(v, budget) for v in x]))
    if t is dict or t is Map:  # keys are stored encoded: their hash is cheap
        if budget is not None:
            budget.step(1 + len(x))
        return hash(("#map", frozenset([(hash(k), key_hash(v, budget)) for k, v in x.items()])))
    if t is frozenset:  # members are stored encoded
        if budget is not None:
            budget.step(1 + len(x))
        return hash(("#set", x))
    return hash(x)


def equal(a: Any, b: Any, *, nan_equal: bool = False) -> bool:
    """Clojure ``=`` on two values, charging the elements it visits to the active budget.

    Args:
        a: a value.
        b: another value.
        nan_equal: ``##NaN`` equals itself (map keys and set members), as in ``mkey``.

    Example:
        >>> equal(vec([1, 2]), vec([1, 2])), equal(vec([1]), vec([1.0]))
        (True, False)
    """
    return _equal(a, b, nan_equal, active_budget())


def _equal(a: Any, b: Any, nan_equal: bool, budget: Budget | None) -> bool:
    if a is b:
        return nan_equal or not (type(a) is float and a != a)
    ta, tb = type(a), type(b)
    if ta is not tb:
        if (ta is dict or ta is Map) and (tb is dict or tb is Map):
            return _map_equal(a, b, nan_equal, budget)
        return False
    if ta is Vector:
        if len(a) != len(b):
            return False
        if budget is not None:
            budget.step(1 + len(a))
        for x, y in zip(a, b, strict=True):
            if x is y and type(x) is not float:
                continue
            tx = type(x)
            if tx is str or tx is int:
                if tx is not type(y) or x != y:
                    return False
            elif not _equal(x, y, nan_equal, budget):
                return False
        return True
    if ta is dict or ta is Map:
        return _map_equal(a, b, nan_equal, budget)
    if ta is frozenset:
        if budget is not None:
            budget.step(1 + len(a))
        return a == b  # type: ignore[no-any-return]  # members are encoded keys
    if ta is float and nan_equal and a != a:
        return b != b  # type: ignore[no-any-return]
    return a == b  # type: ignore[no-any-return]


def _map_equal(a: Any, b: Any, nan_equal: bool, budget: Budget | None) -> bool:
    """Maps are equal when they hold equal values under the same (encoded) keys."""
    if len(a) != len(b):
        return False
    if budget is not None:
        budget.step(1 + len(a))
    for k, v in a.items():
        w = b.get(k, _MISS)
        if w is _MISS or not (v is w or _equal(v, w, nan_equal, budget)):
            return False
    return True


def unkey(k: Any) -> Any:
    """The value of a stored key (undoes :func:`mkey`)."""
    return k.value if type(k) is _Distinct else k


def is_map(x: Any) -> bool:
    """Whether ``x`` is a PTC-Lisp map (a program :class:`Map` or a host ``dict``)."""
    t = type(x)
    return t is Map or t is dict


def map_items(m: Any) -> Iterator[tuple[Any, Any]]:
    """The ``(key, value)`` pairs of a map, keys decoded."""
    for k, v in m.items():
        yield (k.value if type(k) is _Distinct else k), v


def map_keys(m: Any) -> Iterable[Any]:
    """The keys of a map, decoded."""
    return [k.value if type(k) is _Distinct else k for k in m]


# -- host data: the lookups models write -------------------------------------------------


@functools.lru_cache(maxsize=4096)
def host_alternatives(k: Any) -> tuple[Any, ...]:
    """Other spellings of key ``k`` to try in a host map (see :func:`host_get`)."""
    from ptcflow.lisp.values import Keyword

    t = type(k)
    if t is Keyword:
        name = k.name
    elif t is str:
        name = k
    else:
        return ()
    names = [name, name.replace("-", "_"), name.replace("_", "-")]
    out: list[Any] = []
    for n in dict.fromkeys(names):
        kw = Keyword(n)
        if kw is not k:
            out.append(kw)
        if n != name or t is Keyword:
            out.append(n)
    return tuple(out)


_MISS: Final[Any] = object()


def host_get(m: dict[Any, Any], k: Any, default: Any = None) -> Any:
    """Look ``k`` up in a host map the way models write it.

    Tool results and ``ctx`` are JSON: their string keys become keywords, and models read them
    with a keyword or a string (``(get r "content")``), kebab-case or snake_case
    (``:user-id`` for ``user_id``). The exact key wins; otherwise the other spellings are tried.

    Example:
        >>> from ptcflow.lisp.values import Keyword
        >>> host_get({Keyword("user_id"): 7}, Keyword("user-id"))
        7
    """
    v = m.get(mkey(k), _MISS)
    if v is not _MISS:
        return v
    if type(k) is str or hasattr(k, "name"):  # a keyword or string has other spellings
        alts = host_alternatives(k)
    else:
        return default
    for alt in alts:
        v = m.get(alt, _MISS)
        if v is not _MISS:
            return v
    return default


def make_set(items: Iterable[Any]) -> frozenset[Any]:
    """A PTC-Lisp set of ``items`` (members encoded with :func:`mkey`)."""
    return frozenset(map(mkey, items))


def set_items(s: frozenset[Any]) -> Iterable[Any]:
    """The members of a set, decoded."""
    return [k.value if type(k) is _Distinct else k for k in s]


def kw_get(m: Any, kw: Any) -> Any:
    """``(kw m)`` for a keyword ``kw``: a map lookup without a call through the keyword
    (host maps also find the other spellings of the key, see :func:`host_get`)."""
    t = type(m)
    if t is Map:
        return m.get(kw)
    if t is dict:
        v = m.get(kw)
        return v if v is not None else host_get(m, kw)
    return kw(m)
