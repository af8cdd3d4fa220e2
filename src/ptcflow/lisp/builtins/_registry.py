"""How builtin modules declare their functions, and the checks they share."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, Final, TypeVar

from ptcflow.lisp._colls import EMPTY_MAP, EMPTY_VEC, Map, Vector, vec
from ptcflow.lisp.errors import type_error
from ptcflow.lisp.limits import Budget, active_budget
from ptcflow.lisp.values import Builtin, Keyword, iter_of, to_fn

F = TypeVar("F", bound=Callable[..., Any])


class Registry:
    """The builtins of one category, in declaration order.

    Args:
        category: the group name shown in the reference page.
        title: the heading of the group in the reference page.
    """

    def __init__(self, category: str, title: str) -> None:
        self.category = category
        self.title = title
        self.builtins: list[Builtin] = []

    def add(
        self,
        name: str,
        signature: str,
        doc: str,
        *,
        aliases: Iterable[str] = (),
        needs_budget: bool = False,
        arity: tuple[int, int | None] | None = None,
    ) -> Callable[[F], F]:
        """Register the decorated function as ``name`` (and ``aliases``).

        The arity comes from the Python signature (required positional parameters are the
        minimum, parameters with defaults raise the maximum, ``*args`` makes it variadic)
        unless ``arity`` gives it; a test checks it matches ``signature``.
        """

        def decorate(fn: F) -> F:
            lo, hi = arity if arity is not None else _arity(fn, needs_budget)
            for n in (name, *aliases):
                sig = re.sub(r"\(" + re.escape(name) + r"(?=[ )])", "(" + n, signature)
                self.builtins.append(
                    Builtin(
                        n,
                        fn,
                        min_arity=lo,
                        max_arity=hi,
                        needs_budget=needs_budget,
                        doc=doc,
                        signature=sig,
                        category=self.category,
                    )
                )
            return fn

        return decorate


def _arity(fn: Callable[..., Any], needs_budget: bool) -> tuple[int, int | None]:
    lo = 0
    hi: int | None = 0
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            hi = None
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is p.empty:
                lo += 1
            if hi is not None:
                hi += 1
    if needs_budget:
        lo -= 1
        if hi is not None:
            hi -= 1
    return lo, hi


class _Missing:
    """Marks an optional argument that was not given (``nil`` is a real value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def is_num(x: object) -> bool:
    """Whether ``x`` is a PTC-Lisp number (``int`` or ``float``, never ``bool``)."""
    t = type(x)
    return t is int or t is float


def num(fn: str, x: object) -> int | float:
    """Return ``x`` when it is a number, else raise the type error of ``fn``."""
    t = type(x)
    if t is int or t is float:
        return x  # type: ignore[return-value]
    raise type_error(fn, "numbers", x)


def integer(fn: str, x: object, what: str = "an integer") -> int:
    """Return ``x`` when it is an integer, else raise the type error of ``fn``."""
    if type(x) is int:
        return x
    raise type_error(fn, what, x)


def count_arg(fn: str, n: object) -> int:
    """A count argument (``take``, ``drop``, ``repeat``): an integer, or a float rounded up."""
    t = type(n)
    if t is int:
        return n  # type: ignore[return-value]
    if t is float and math.isfinite(n):  # type: ignore[arg-type]
        return math.ceil(n)  # type: ignore[call-overload, no-any-return]
    raise type_error(fn, "a number for the count", n)


_FREE: Final = 32  # elements a builtin may visit without a charge (bounded, tiny work)
_CHUNKED: Final = 8192  # a longer iteration is charged (and may yield) as it goes, ...
_CHUNK: Final = 2048  # ... every _CHUNK elements; a shorter one is charged at once


def visit(n: int) -> None:
    """Count ``n`` elements a builtin visits (or copies) as steps of the running program.

    Builtins over collections are single steps of the evaluator, so without this a loop of
    ``(frequencies v)`` over 100,000 elements would check the clock once a minute. Small
    counts are free; outside a run nothing is charged.
    """
    if n > _FREE:
        budget = active_budget()
        if budget is not None:
            budget.step(n)


def charged(src: Iterable[Any], n: int) -> Iterable[Any]:
    """``src`` (``n`` elements), counting them as steps: at once for up to
    :data:`_CHUNKED` elements (a few milliseconds of work), else as they are consumed, so a
    long iteration checks the clock and lets the event loop run every :data:`_CHUNK`
    elements instead of visiting 100,000 elements in one go."""
    if n <= _FREE:
        return src
    budget = active_budget()
    if budget is None:
        return src
    if n <= _CHUNKED:
        budget.step(n)
        return src
    return _chunks(iter(src), budget)


def _chunks(it: Iterator[Any], budget: Budget) -> Iterator[Any]:
    while chunk := list(islice(it, _CHUNK)):
        budget.step(len(chunk))
        yield from chunk


def seq(fn: str, coll: object) -> Any:
    """The elements of a collection as a vector (maps give ``[k v]`` entries, nil ``[]``).

    A vector is returned as it is (the caller charges what it visits or slices); any other
    collection is copied, and that counts its elements as steps (:func:`charged`).
    """
    t = type(coll)
    if t is Vector:
        return coll
    if coll is None:
        return EMPTY_VEC
    if t is dict or t is Map or t is frozenset or t is str:
        return vec(charged(iter_of(coll), len(coll)))  # type: ignore[arg-type]
    raise type_error(fn, "a collection", coll)


def iterate(fn: str, coll: object) -> Iterable[Any]:
    """The elements of a collection, without copying when possible; the builtin is taken to
    visit them all, so they count as steps as it does (:func:`charged`)."""
    t = type(coll)
    if t is Vector or t is str:
        return charged(coll, len(coll))  # type: ignore[arg-type]
    if coll is None:
        return ()
    if t is dict or t is Map or t is frozenset:
        return charged(iter_of(coll), len(coll))  # type: ignore[arg-type]
    raise type_error(fn, "a collection", coll)


def string(fn: str, x: object) -> str:
    """Return ``x`` when it is a string, else raise the type error of ``fn``."""
    if type(x) is str:
        return x
    raise type_error(fn, "a string", x)


def check_map(fn: str, m: object) -> Any:
    """Return ``m`` as a map: maps as they are, ``nil`` as ``{}``; else a type error."""
    t = type(m)
    if t is Map or t is dict:
        return m
    if m is None:
        return EMPTY_MAP
    raise type_error(fn, "a map", m)


def program_map(fn: str, m: Any) -> Map[Any, Any]:
    """``m`` as a program map to extend: host maps are copied once (keys kept), ``nil`` is
    ``{}``; else a type error."""
    t = type(m)
    if t is Map:
        return m  # type: ignore[no-any-return]
    if t is dict:
        return Map(m)
    if m is None:
        return EMPTY_MAP
    raise type_error(fn, "a map", m)


def keyword_name(x: object) -> str | None:
    """The name of a keyword or string, else ``None``."""
    if type(x) is Keyword:
        return x.name
    if type(x) is str:
        return x
    return None


def unwrap(f: object, fn_name: str) -> Callable[..., Any]:
    """The plain Python callable behind ``f`` (a builtin's implementation, skipping its
    ``__call__``), or ``f`` made callable by :func:`~ptcflow.lisp.values.to_fn`.

    Callers that use it must turn a ``TypeError`` into an arity error with :func:`reraise`.
    """
    if type(f) is Builtin and not f.needs_budget:
        return f.fn
    if callable(f):
        return f
    return to_fn(f, fn_name)


def reraise(f: object, n_args: int) -> None:
    """Raise the arity error when ``f`` is a builtin that does not take ``n_args`` arguments
    (call inside ``except TypeError``, then re-raise the original)."""
    if type(f) is Builtin and not f.accepts(n_args):
        raise f.arity_error(n_args) from None
