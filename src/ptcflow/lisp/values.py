"""The runtime values of PTC-Lisp and the Clojure semantics on top of plain Python objects.

=============  =====================================================================
PTC-Lisp       Python
=============  =====================================================================
``nil``        ``None``
booleans       ``bool``
integers       ``int`` (no ratios; ``/`` returns a float)
floats         ``float``
strings        ``str`` (a character is a 1-char ``str``)
keywords       :class:`Keyword` (interned: ``Keyword("a") is Keyword("a")``)
vectors, seqs  :data:`Vector` (a persistent vector; builtins are eager: there are no lazy
               seqs, lists print as ``[...]``)
maps           :class:`Map` (a persistent hash map) built by the program; host data (ctx,
               tool results) stays a ``dict`` with keyword keys, never mutated
sets           ``frozenset``
regexes        :class:`Regex` (prints as ``#"..."``)
functions      any Python callable; program functions are :class:`LispFn`, builtins
               are :class:`Builtin`
=============  =====================================================================

Equality (:func:`lisp_eq`) follows Clojure: ``1`` and ``1.0`` differ, ``1`` and ``true`` differ,
collections compare structurally. Map keys and set members are encoded (``_colls.mkey``) so
``1``, ``1.0`` and ``true`` are three keys, as in Clojure.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, final

from ptcflow.lisp._colls import (
    Map,
    Vector,
    equal,
    host_get,
    map_items,
    mkey,
    unkey,
    vec,
)
from ptcflow.lisp.errors import LispError, arity_error, type_error

if TYPE_CHECKING:
    from ptcflow.lisp.limits import Budget

__all__ = (
    "PLAIN_KEYS",
    "Builtin",
    "Keyword",
    "LispFn",
    "Regex",
    "check_plain",
    "eq_key",
    "from_python",
    "iter_of",
    "lisp_eq",
    "lookup",
    "to_fn",
    "to_python",
    "truthy",
    "vec",
)

# The intern table holds weak references, so keywords made by programs ((keyword s) on
# user data) do not accumulate in a long-lived process; a live keyword is always unique.
_KEYWORDS: dict[str, weakref.ref[Keyword]] = {}
_NO_ARG: Final[Any] = object()  # marks a missing positional argument


class _KeywordRef(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that remembers the keyword's name, to drop its table entry."""

    __slots__ = ("key",)

    def __init__(self, kw: Keyword, callback: Callable[[_KeywordRef], None]) -> None:
        super().__init__(kw, callback)  # type: ignore[call-arg]
        self.key = kw.name


def _forget(ref: _KeywordRef) -> None:
    """Drop a dead keyword's entry (unless the name was interned again meanwhile)."""
    if _KEYWORDS.get(ref.key) is ref:
        del _KEYWORDS[ref.key]


@final
class Keyword:
    """An interned, immutable keyword such as ``:a`` or ``:user/id``.

    Keywords are callable as a lookup function: ``(:a m)`` is ``(get m :a)`` and
    ``(:a m default)`` is ``(get m :a default)``; on a set ``(:a s)`` is ``:a`` when ``:a``
    is a member.

    Args:
        name: the name without the leading colon (may contain ``/``).

    Example:
        >>> Keyword("a") is Keyword("a")
        True
        >>> str(Keyword("a")), Keyword("a")({Keyword("a"): 1})
        (':a', 1)
    """

    __slots__ = ("__weakref__", "name")
    name: str

    def __new__(cls, name: str) -> Keyword:
        ref = _KEYWORDS.get(name)
        if ref is not None:
            kw = ref()
            if kw is not None:
                return kw
        if not isinstance(name, str):
            raise TypeError(f"Keyword name must be a str, got {type(name).__name__}")
        kw = object.__new__(cls)
        object.__setattr__(kw, "name", name)
        _KEYWORDS[name] = _KeywordRef(kw, _forget)
        return kw

    def __setattr__(self, attr: str, value: object) -> None:
        raise AttributeError("Keyword is immutable")

    def __delattr__(self, attr: str) -> None:
        raise AttributeError("Keyword is immutable")

    def __call__(self, coll: Any = _NO_ARG, default: object = None, *extra: object) -> Any:
        """Look this keyword up in a map (or a set); ``default`` when absent or not a map."""
        t = type(coll)
        if t is Map:
            return coll.get(self, default)
        if t is dict:
            return host_get(coll, self, default)
        if coll is _NO_ARG or extra:
            n = 0 if coll is _NO_ARG else 2 + len(extra)
            raise arity_error(
                f":{self.name}", n, f"1 or 2: (:{self.name} m) or (:{self.name} m default)"
            )
        if t is frozenset:
            return self if self in coll else default
        return default

    def __str__(self) -> str:
        return ":" + self.name

    def __repr__(self) -> str:
        return f"Keyword({self.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Keyword, (self.name,))

    def __lt__(self, other: object) -> bool:
        if type(other) is Keyword:
            return self.name < other.name
        return NotImplemented


@final
class Regex:
    """A compiled regular expression value; prints as ``#"pattern"``.

    Build them with the ``re-pattern`` builtin or the reader's ``#"..."`` literal, which
    compile the pattern on RE2 (linear-time matching).

    Args:
        pattern: the compiled RE2 pattern (``re2.compile``).
        source: the pattern text as the program wrote it.

    Example:
        >>> import re2
        >>> Regex(re2.compile("a+b"), "a+b").source
        'a+b'
    """

    __slots__ = ("pattern", "source")

    def __init__(self, pattern: Any, source: str) -> None:
        self.pattern: Any = pattern
        self.source: str = source

    def __eq__(self, other: object) -> bool:
        return type(other) is Regex and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def __repr__(self) -> str:
        return f"Regex({self.source!r})"


class LispFn:
    """Base class of functions defined by programs (``fn``, ``defn``); lisp-core subclasses it.

    Args:
        name: the function's name (``None`` for an anonymous ``fn``).
        min_arity: the fewest arguments it accepts.
        max_arity: the most arguments it accepts, ``None`` when variadic.
    """

    __slots__ = ("max_arity", "min_arity", "name")

    leaf1: tuple[Callable[[list[Any]], Any], Budget, tuple[Any, ...]] | None = None
    """For a one-argument function that calls no function: ``(body, budget, pad)``, so
    ``map``/``filter`` can run ``body([*captured, x, *pad])`` themselves, counting one step
    per element exactly as a call does (``captured`` is the instance's ``_cap``)."""

    def __init__(self, name: str | None, min_arity: int, max_arity: int | None) -> None:
        self.name = name
        self.min_arity = min_arity
        self.max_arity = max_arity

    def __call__(self, *args: Any) -> Any:
        """Apply the function to positional arguments."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<fn {self.name or 'anonymous'}>"


@final
class Builtin:
    """One whitelisted builtin function and its documentation.

    Args:
        name: the name programs use (``"get"``, ``"clojure.string/join"``).
        fn: the implementation; takes the run's :class:`~ptcflow.lisp.limits.Budget` as its
            first argument when ``needs_budget`` is true.
        min_arity: the fewest arguments.
        max_arity: the most arguments, ``None`` when variadic.
        needs_budget: the builtin builds input-sized results, prints, or matches regexes.
        doc: a one-line description.
        signature: the call shapes, e.g. ``"(get m k) (get m k default)"``.
        category: the group in the reference page (``"maps"``, ``"strings"``, ...).

    Calling a ``Builtin`` calls ``fn``; a ``needs_budget`` builtin must first be bound to a
    run's budget with :meth:`bind` (the runner does this per run).
    """

    __slots__ = (
        "category",
        "doc",
        "fn",
        "max_arity",
        "min_arity",
        "name",
        "needs_budget",
        "signature",
    )

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        min_arity: int,
        max_arity: int | None,
        needs_budget: bool = False,
        doc: str,
        signature: str,
        category: str,
    ) -> None:
        self.name = name
        self.fn = fn
        self.min_arity = min_arity
        self.max_arity = max_arity
        self.needs_budget = needs_budget
        self.doc = doc
        self.signature = signature
        self.category = category

    def __call__(self, *args: Any) -> Any:
        """Call the implementation (bind ``needs_budget`` builtins first)."""
        if self.needs_budget:
            raise LispError("analysis", f"builtin {self.name} used without a run budget")
        try:
            return self.fn(*args)
        except TypeError:
            if not self.accepts(len(args)):
                raise self.arity_error(len(args)) from None
            raise

    def arity_error(self, n_args: int) -> LispError:
        """The error for calling this builtin with ``n_args`` arguments."""
        return arity_error(self.name, n_args, f"usage {self.signature}")

    def bind(self, budget: Budget) -> Builtin:
        """Return this builtin with ``budget`` bound as the first argument (or ``self``).

        Args:
            budget: the run's budget.

        Returns:
            A ``Builtin`` with ``needs_budget`` false that can be called and passed as a value.
        """
        if not self.needs_budget:
            return self
        return Builtin(
            self.name,
            functools.partial(self.fn, budget),
            min_arity=self.min_arity,
            max_arity=self.max_arity,
            needs_budget=False,
            doc=self.doc,
            signature=self.signature,
            category=self.category,
        )

    def accepts(self, n_args: int) -> bool:
        """Whether a call with ``n_args`` arguments has a valid arity."""
        return n_args >= self.min_arity and (self.max_arity is None or n_args <= self.max_arity)

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


PLAIN_KEYS: Final = frozenset({str, int, Keyword, type(None)})
"""Types stored as map keys and set members as they are (``_colls.mkey`` is the identity)."""


def truthy(x: object) -> bool:
    """Clojure truthiness: only ``nil`` and ``false`` are falsy.

    Example:
        >>> truthy(0), truthy(""), truthy(None), truthy(False)
        (True, True, False, False)
    """
    return x is not None and x is not False


def eq_key(x: object) -> object:
    """A hashable key whose Python equality is Clojure equality (``1``, ``1.0``, ``true`` and
    equal-looking maps and sets get distinct or equal keys exactly as :func:`lisp_eq` says;
    ``##NaN`` equals itself here). It is the key maps and sets store (``_colls.mkey``).

    Example:
        >>> eq_key(1) == eq_key(1.0), eq_key({Keyword("a"): 1}) == eq_key({Keyword("a"): 1})
        (False, True)
    """
    return mkey(x)


def lisp_eq(a: object, b: object) -> bool:
    """Clojure ``=``: structural, and numbers of different kinds are not equal.

    ``1`` and ``1.0`` differ, ``1`` and ``true`` differ, ``nil`` equals only ``nil``, vectors
    compare element-wise, maps and sets structurally. ``##NaN`` is not equal to itself.
    Inside a run, comparing collections charges the elements visited to the run's budget.

    Example:
        >>> lisp_eq(vec([1, vec([2])]), vec([1, vec([2])])), lisp_eq(1, 1.0), lisp_eq(1, True)
        (True, False, False)
    """
    if a is b:
        return not (type(a) is float and math.isnan(a))
    ta = type(a)
    if ta is Vector or ta is dict or ta is Map or ta is frozenset:
        return equal(a, b)
    if ta is not type(b):
        return False
    return a == b


def _lookup_arity(what: str, args: tuple[Any, ...]) -> None:
    if not 1 <= len(args) <= 2:
        raise arity_error(what, len(args), f"1 or 2: ({what} key) or ({what} key default)")


def lookup(m: Any, k: Any, default: Any = None) -> Any:
    """``(get m k default)`` for a map: the program's maps exactly, host maps as models
    write keys (:func:`~ptcflow.lisp._colls.host_get`)."""
    if type(m) is dict:
        return host_get(m, k, default)
    return m.get(mkey(k), default)


def _map_fn(m: Any) -> Callable[..., Any]:
    def look(*args: Any) -> Any:
        _lookup_arity("a map used as a function", args)
        return lookup(m, args[0], args[1] if len(args) == 2 else None)

    return look


def _set_fn(s: frozenset[Any]) -> Callable[..., Any]:
    def member(*args: Any) -> Any:
        if len(args) != 1:
            raise arity_error("a set used as a function", len(args), "1: (#{:a :b} x)")
        k = args[0]
        return k if mkey(k) in s else None

    return member


def _vector_fn(v: Any) -> Callable[..., Any]:
    def index(*args: Any) -> Any:
        _lookup_arity("a vector used as a function", args)
        i = args[0]
        if type(i) is not int:
            raise type_error("a vector used as a function", "an integer index", i)
        if 0 <= i < len(v):
            return v[i]
        if len(args) == 2:
            return args[1]
        raise LispError(
            "type", f"index {i} is out of bounds for a vector of {len(v)}; use (get v i) for nil"
        )

    return index


def to_fn(x: object, fn_name: str = "this function") -> Callable[..., Any]:
    """Return a callable for ``x``: functions as they are, keywords, maps, sets and vectors
    as lookups.

    Args:
        x: a function, keyword, map (key lookup), set (membership), or vector (index lookup).
        fn_name: the builtin asking, for the error message.

    Returns:
        A Python callable taking positional arguments.

    Raises:
        LispError: ``x`` cannot be called (category ``"type"``).

    Example:
        >>> to_fn({Keyword("a"): 1})(Keyword("a"))
        1
    """
    if callable(x):
        return x
    t = type(x)
    if t is dict or t is Map:
        return _map_fn(x)
    if t is frozenset:
        return _set_fn(x)  # type: ignore[arg-type]
    if t is Vector:
        return _vector_fn(x)
    raise type_error(fn_name, "a function (or a keyword, map, set or vector)", x)


def iter_of(x: Any) -> Iterable[Any]:
    """Iterate a collection the way Clojure's ``seq`` does (maps yield ``[k v]`` pairs)."""
    t = type(x)
    if t is Vector or t is str:
        return x  # type: ignore[no-any-return]
    if x is None:
        return ()
    if t is frozenset:
        return map(unkey, x)
    if t is dict or t is Map:
        return map(vec, map_items(x))
    raise type_error("seq", "a collection", x)


# The conversions at the boundary live in _convert (which needs the classes above).
from ptcflow.lisp._convert import (  # noqa: E402
    check_plain as check_plain,
    from_python as from_python,
    to_python as to_python,
)
