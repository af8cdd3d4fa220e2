"""Converting between Python data and PTC-Lisp values at the boundary of a run.

:func:`from_python` turns ``ctx``, memory and tool results into PTC-Lisp values (lists become
vectors; dicts stay read-only host maps whose string keys become keywords); :func:`import_value`
does the same inside a run, charging the run's budget as it goes; :func:`check_plain` checks
without building anything; :func:`to_python` turns a program's value back into JSON-like data.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from ptcflow.lisp._colls import Map, Vector, mkey, unkey, vec
from ptcflow.lisp.errors import LimitExceeded, type_error
from ptcflow.lisp.values import Builtin, Keyword, LispFn, Regex

if TYPE_CHECKING:
    from ptcflow.lisp.limits import Budget

__all__ = ("check_plain", "from_python", "import_value", "to_python")


def to_python(x: object, *, keep_keywords: bool = False) -> Any:
    """Convert a PTC-Lisp value to JSON-like Python data.

    Keyword map keys become their name strings; keyword values become names too unless
    ``keep_keywords``. Vectors and sets become lists (sets sorted when their members can be
    compared), regexes their pattern text; a map key that is a collection becomes its printed
    form (``"[1 2]"``), as JSON keys are strings.

    Args:
        x: the value.
        keep_keywords: keep :class:`Keyword` values (not map keys) as keywords.

    Returns:
        ``None``, ``bool``, ``int``, ``float``, ``str``, ``list``, ``dict`` (or ``Keyword``).

    Raises:
        LispError: ``x`` contains a function (category ``"type"``).

    Example:
        >>> to_python(from_python({"a": [1, "b"]}))
        {'a': [1, 'b']}
    """
    t = type(x)
    if t is str or t is int or t is float or t is bool or x is None:
        return x
    if t is Keyword:
        return x if keep_keywords else x.name  # type: ignore[attr-defined]
    if t is Vector:
        return [to_python(v, keep_keywords=keep_keywords) for v in x]  # type: ignore[attr-defined]
    if t is dict or t is Map:
        return {
            python_key(k): to_python(v, keep_keywords=keep_keywords) for k, v in ordered_items(x)
        }
    if t is frozenset:
        from ptcflow.lisp.printer import ordered

        return [to_python(v, keep_keywords=keep_keywords) for v in ordered(x)]
    if t is Regex:
        return x.source  # type: ignore[attr-defined]
    if callable(x):
        raise type_error("returning a result", "data (a function cannot be returned)", x)
    raise type_error("returning a result", "data", x)


def ordered_items(m: Any, budget: Budget | None = None) -> list[tuple[Any, Any]]:
    """The entries of a map with decoded keys: host maps in their order, program maps sorted
    (a hash map's order is arbitrary, so printing and results stay deterministic); sorting
    keys that are collections is charged to ``budget``, and a large map is decoded and sorted
    in chunks, letting the event loop run in between (``budget.poll``)."""
    if budget is None or len(m) <= _CHUNK:
        items = [(unkey(k), v) for k, v in m.items()]
    else:
        items = []
        entries = iter(m.items())
        while chunk := [(unkey(k), v) for k, v in islice(entries, _CHUNK)]:
            items += chunk
            budget.poll()
    if type(m) is not dict:
        from ptcflow.lisp.printer import sort_values

        sort_values(items, budget, key=_first)
    return items


_CHUNK: Final = 8192  # entries decoded between two polls of the budget
_first: Final = operator.itemgetter(0)


def python_key(k: Any) -> Any:
    """A Python dict key for map key ``k``: names for keywords, scalars as they are, the
    printed form for collections."""
    t = type(k)
    if t is Keyword:
        return k.name
    if t is str or t is int or t is float or t is bool or k is None:
        return k
    from ptcflow.lisp.printer import pr_str

    return pr_str(k, limit=1000)


def from_python(x: object, *, keywordize_keys: bool = True) -> Any:
    """Convert JSON-like Python data into PTC-Lisp values.

    ``run`` converts each ``ctx`` value a program reads, in every run. A large value that many
    runs read (the turns of an agent) can be converted once with this function and passed
    as ``ctx`` to each of them: vectors and program maps are used as they are, and, being
    immutable, are safely shared by every run (a 10,000-row list: about 9 ms per run saved
    on the development machine, half of a small run).

    Args:
        x: ``dict``/``list``/``tuple``/``set``/``frozenset``/``str``/``int``/``float``/
            ``bool``/``None`` (nested), or values that already are PTC-Lisp values.
        keywordize_keys: turn ``str`` map keys into keywords, so programs write ``(:id row)``.

    Returns:
        The PTC-Lisp value (lists and tuples become vectors, sets sets, dicts host maps).

    Raises:
        TypeError: ``x`` contains an object of another type (at the boundary, a caller bug).

    Example:
        >>> from_python({"id": [1, 2]})
        {Keyword('id'): pvector([1, 2])}
        >>> from ptcflow.lisp import run_sync
        >>> rows = from_python([{"amount": 5}, {"amount": 7}])
        >>> run_sync("(reduce + (map :amount ctx/rows))", ctx={"rows": rows}).value
        12
    """
    return _Importer(_KeywordOf() if keywordize_keys else None, None).value(x)


def import_value(x: object, budget: Budget, what: str) -> Any:
    """Convert host data inside a run (tool results, ctx), charging ``budget`` as it goes.

    Every container counts its elements against ``max_collection_size`` and every element
    and character against ``max_memory_bytes``; the clock is checked and the event loop gets
    a turn every few thousand values, so a huge tool result ends in a ``limit`` error without
    stalling the host.

    Raises:
        LimitExceeded: the value is larger or deeper than the run's limits allow.
        TypeError: ``x`` is not plain data.
    """
    try:
        return _Importer(_KeywordOf(), _Meter(budget, what)).value(x)
    except RecursionError:
        raise LimitExceeded(
            "max_depth", f"{what} is nested too deeply to convert; ask for flatter data"
        ) from None


def check_plain(x: object) -> None:
    """Check that :func:`from_python` would accept ``x``, without building anything.

    Raises:
        TypeError: the same error :func:`from_python` raises.
    """
    t = type(x)
    if t in _SCALARS:
        return
    if t is dict:
        for k, v in x.items():  # type: ignore[attr-defined]
            if type(k) not in _SCALARS:
                check_plain(k)
            if type(v) not in _SCALARS:
                check_plain(v)
        return
    if t is list or t is tuple or t is set or t is frozenset or t is Vector or t is Map:
        for v in x:  # type: ignore[attr-defined]
            if type(v) not in _SCALARS:
                check_plain(unkey(v))  # a program set's members and map's keys are encoded
        return
    if t is Regex or isinstance(x, LispFn | Builtin):
        return
    for base, conv in _BASES:
        if isinstance(x, base):
            return check_plain(conv(x))
    raise _not_plain(x)


class _KeywordOf(dict[str, "Keyword"]):
    """The keywords made for string map keys during one conversion (made on first use)."""

    __slots__ = ()

    def __missing__(self, name: str) -> Keyword:
        kw = self[name] = Keyword(name)
        return kw


_SCALARS: Final = frozenset({str, int, float, bool, type(None), Keyword})
_PROGRESS_EVERY: Final = 4096


class _Meter:
    """Charges an import against a run's budget (size, memory, time, yields)."""

    __slots__ = ("budget", "next_tick", "seen", "what")

    def __init__(self, budget: Budget, what: str) -> None:
        self.budget = budget
        self.what = what
        self.seen = 0
        self.next_tick = _PROGRESS_EVERY

    def container(self, n: int) -> None:
        budget = self.budget
        if n > budget.limits.max_collection_size:
            raise LimitExceeded(
                "max_collection_size",
                f"{self.what} holds a collection of {n} values, over the limit of "
                f"{budget.limits.max_collection_size}; ask the tool for less (a page, a filter)",
            )
        budget.charge(16 * n, self.what)
        self.seen += n
        if self.seen >= self.next_tick:
            self.next_tick = self.seen + _PROGRESS_EVERY
            budget.step(1 + n // 64)
            budget.check_time()
            budget.maybe_yield()

    def string(self, s: str) -> None:
        if len(s) > 64:
            self.budget.charge(len(s), self.what)


class _Importer:
    """One conversion: ``kw`` caches the keywords of string keys (``None``: keep strings)."""

    __slots__ = ("kw", "meter")

    def __init__(self, kw: _KeywordOf | None, meter: _Meter | None) -> None:
        self.kw = kw
        self.meter = meter

    def value(self, x: Any) -> Any:
        t = type(x)
        if t in _SCALARS:
            if t is str and self.meter is not None:
                self.meter.string(x)
            return x
        if t is dict:
            return self.map(x)
        if t is list or t is tuple:
            return self.seq(x)
        if t is set or t is frozenset:
            if self.meter is not None:
                self.meter.container(len(x))
            # members of a program set are encoded already (memory of an earlier turn)
            return frozenset([mkey(self.value(unkey(v))) for v in x])
        if t is Vector or t is Map or t is Regex or isinstance(x, LispFn | Builtin):
            return x  # already a program value (memory from an earlier turn)
        # Subclasses of the plain types (IntEnum, str enums, dict subclasses) convert as their base.
        for base, conv in _BASES:
            if isinstance(x, base):
                return self.value(conv(x))
        raise _not_plain(x)

    def key(self, k: Any) -> Any:
        t = type(k)
        if t is str:
            return k if self.kw is None else self.kw[k]
        if t is int or t is Keyword or k is None:
            return k
        return mkey(self.value(k))

    def map(self, x: dict[Any, Any]) -> dict[Any, Any]:
        if self.meter is not None:
            self.meter.container(len(x))
        scalars, kw, key, value = _SCALARS, self.kw, self.key, self.value
        out = {}
        if kw is not None and self.meter is None:
            for k, v in x.items():
                out[kw[k] if type(k) is str else key(k)] = v if type(v) in scalars else value(v)
        else:
            for k, v in x.items():
                out[key(k)] = v if type(v) in scalars and type(v) is not str else value(v)
        return out

    def seq(self, x: list[Any] | tuple[Any, ...]) -> Any:
        meter = self.meter
        if meter is not None:
            meter.container(len(x))
        scalars, kw, key, value = _SCALARS, self.kw, self.key, self.value
        if kw is None:
            return vec([v if type(v) in scalars else value(v) for v in x])
        # Lists of records (rows of ctx) are the common large input: their maps are
        # converted inline, without a call per row (a metered import charges each row's
        # size and checks the clock every few thousand rows).
        items: list[Any] = []
        add = items.append
        pending = 0  # row entries not yet charged to the meter
        for v in x:
            tv = type(v)
            if tv is dict:
                if meter is not None:
                    pending += len(v)
                    if pending >= _PROGRESS_EVERY:
                        meter.container(pending)
                        pending = 0
                row = {}
                for k, w in v.items():
                    row[kw[k] if type(k) is str else key(k)] = w if type(w) in scalars else value(w)
                add(row)
            elif tv in scalars and (tv is not str or meter is None):
                add(v)
            else:
                add(value(v))
        if pending:
            meter.container(pending)  # type: ignore[union-attr]
        return vec(items)


def _not_plain(x: object) -> TypeError:
    return TypeError(
        f"cannot pass a {type(x).__name__} into PTC-Lisp: convert it to dict/list/str/int/"
        "float/bool/None first"
    )


_BASES: Final[tuple[tuple[type, Callable[[Any], Any]], ...]] = tuple(
    zip(
        (bool, int, float, str, dict, list, tuple, set, frozenset),
        (bool, int, float, str, dict, tuple, tuple, frozenset, frozenset),
        strict=True,
    )
)
