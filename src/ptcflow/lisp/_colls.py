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

__all__ = (
    "EMPTY_MAP",
    "EMPTY_VEC",
    "Map",
    "Vector",
    "host_alternatives",
    "host_get",
    "is_map",
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
    by :func:`~ptcflow.lisp.values.eq_key`, so ``[1]`` and ``[1.0]`` stay apart)."""

    __slots__ = ("key", "value")

    def __init__(self, value: Any, key: Any) -> None:
        self.value = value
        self.key = key

    def __eq__(self, other: object) -> bool:
        return type(other) is _Distinct and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"_Distinct({self.value!r})"


_TRUE: Final = _Distinct(True, ("#bool", True))
_FALSE: Final = _Distinct(False, ("#bool", False))


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
        return _Distinct(k, ("#float", k if k == k else "nan"))
    if t is dict or t is Vector or t is Map or t is frozenset:
        from ptcflow.lisp.values import eq_key

        return _Distinct(k, eq_key(k))
    return k


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
