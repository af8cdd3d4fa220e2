"""Print PTC-Lisp values as EDN-style text, the way the model reads them back.

``pr_str`` is Clojure's ``pr-str``: strings are quoted, maps print as ``{:a 1, :b [1 2]}``,
sets as ``#{...}``, sequences as vectors ``[...]`` (there are no lazy seqs), regexes as
``#"..."``. ``str_of`` is Clojure's ``str`` of one value: strings unquoted, ``nil`` empty.
"""

from __future__ import annotations

import heapq
import math
import sys
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, Final

from ptcflow.lisp._colls import Map, Vector, set_items
from ptcflow.lisp.errors import LimitExceeded
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Builtin, Keyword, LispFn, Regex

__all__ = (
    "float_text",
    "ordered",
    "pr_str",
    "print_str",
    "quote",
    "render",
    "sort_values",
    "str_of",
    "type_name",
)

_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\b": "\\b",
    "\f": "\\f",
}


class Full(Exception):
    """Raised once the output reached its limit (the caller cuts the text or refuses it)."""


_UNLIMITED: Final = sys.maxsize
_CHUNK: Final = 256  # elements printed between two charges to the budget
_CHUNK_MASK: Final = _CHUNK - 1


def quote(s: str) -> str:
    """A string as a PTC-Lisp string literal (``"a\\nb"``).

    Example:
        >>> quote('say "hi"')
        '"say \\\\"hi\\\\""'
    """
    if '"' not in s and "\\" not in s and s.isprintable():  # nothing to escape: most strings
        return f'"{s}"'
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


def float_text(x: float) -> str:
    """A float as PTC-Lisp reads it back (``1.5``, ``##Inf``, ``##-Inf``, ``##NaN``).

    Example:
        >>> float_text(float("inf"))
        '##Inf'
    """
    if math.isfinite(x):
        return repr(x)
    if math.isnan(x):
        return "##NaN"
    return "##Inf" if x > 0 else "##-Inf"


def _fn_name(x: object) -> str:
    if isinstance(x, Builtin | LispFn):
        return f"#<fn {x.name or 'anonymous'}>"
    return "#<fn>"


class _Writer:
    """Prints values into ``parts``; raises :class:`Full` past ``limit`` characters, and
    charges every collection's elements to ``budget`` as steps (so a value that shares
    structure cannot make printing run away, and long prints yield to the event loop)."""

    __slots__ = ("budget", "limit", "parts", "readably", "size")

    def __init__(
        self, limit: int = _UNLIMITED, readably: bool = True, budget: Budget | None = None
    ) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.readably = readably
        self.budget = budget

    def add(self, s: str) -> None:
        self.parts.append(s)
        self.size += len(s)
        if self.size > self.limit:
            raise Full

    def value(self, x: object) -> None:
        t = type(x)
        if t is str:
            self.add(quote(x) if self.readably else x)  # type: ignore[arg-type]
        elif t is Keyword:
            self.add(":" + x.name)  # type: ignore[attr-defined]
        elif t is int:
            self.add(str(x))
        elif x is None:
            self.add("nil")
        elif t is bool:
            self.add("true" if x else "false")
        elif t is float:
            self.add(float_text(x))  # type: ignore[arg-type]
        elif t is Vector:
            self.seq("[", x, "]")
        elif t is dict or t is Map:
            from ptcflow.lisp._convert import ordered_items

            budget = self.budget
            self.add("{")
            n = 0
            for k, v in ordered_items(x, budget):
                if n:
                    self.add(", ")
                n += 1
                if budget is not None and not n & _CHUNK_MASK:
                    budget.step(_CHUNK)
                self.value(k)
                self.add(" ")
                self.value(v)
            self.add("}")
            if budget is not None:
                budget.step(1 + (n & _CHUNK_MASK))
        elif t is frozenset:
            self.seq("#{", ordered(x, self.budget), "}")
        elif t is Regex:
            self.add('#"' + x.source.replace('"', '\\"') + '"')  # type: ignore[attr-defined]
        elif callable(x):
            self.add(_fn_name(x))
        else:
            self.add(f"#<{type(x).__name__}>")

    def seq(self, open_: str, items: Any, close: str) -> None:
        # Each element is a step, charged every _CHUNK elements: the clock is checked and
        # the event loop gets its turns while a wide collection prints.
        budget = self.budget
        self.add(open_)
        n = 0
        for item in items:
            if n:
                self.add(" ")
            n += 1
            if budget is not None and not n & _CHUNK_MASK:
                budget.step(_CHUNK)
            self.value(item)
        self.add(close)
        if budget is not None:
            budget.step(1 + (n & _CHUNK_MASK))


def ordered(s: Any, budget: Budget | None = None) -> list[object]:
    """Set members (or map keys) decoded, in a deterministic order (see :func:`sort_values`).

    Example:
        >>> ordered(frozenset({3, 1, 2}))
        [1, 2, 3]
    """
    items = list(set_items(s))
    sort_values(items, budget)
    return items


def sort_values(
    items: list[Any], budget: Budget | None = None, key: Callable[[Any], Any] | None = None
) -> None:
    """Sort ``items`` (by ``key(item)``) in place, deterministically: plainly when the keys
    are all numbers, all strings or all keywords, else by type and printed form (hash order
    varies from process to process). Collections are never compared directly, which would
    walk them in C, uncharged: each is printed (at most 200 characters, charged to
    ``budget``)."""
    keys = items if key is None else [key(x) for x in items]
    if _comparable(keys):
        if budget is not None and len(items) > 2 * _SORT_CHUNK:
            _sort_in_chunks(items, budget, key)
        else:
            items.sort(key=key)
        return
    get: Callable[[Any], Any] = _same if key is None else key
    items.sort(key=lambda x: (type(get(x)).__name__, _bounded(get(x), 200, budget)))


_SORT_CHUNK: Final = 8192  # elements sorted (or merged) between two polls of the budget


def _sort_in_chunks(items: list[Any], budget: Budget, key: Callable[[Any], Any] | None) -> None:
    """Sort a long list in runs of :data:`_SORT_CHUNK` elements, then merge them, polling the
    budget in between: one ``list.sort`` of 100,000 strings holds the event loop for tens of
    milliseconds. The merge takes equal elements from earlier runs first, so the order is
    that of a stable sort."""
    runs = []
    for i in range(0, len(items), _SORT_CHUNK):
        run = items[i : i + _SORT_CHUNK]
        run.sort(key=key)
        runs.append(run)
        budget.poll()
    merged = heapq.merge(*runs, key=key)
    out: list[Any] = []
    while part := list(islice(merged, _SORT_CHUNK)):
        out += part
        budget.poll()
    items[:] = out


def _same(x: Any) -> Any:
    return x


def _comparable(items: list[Any]) -> bool:
    if not items:
        return True
    t0 = type(items[0])
    if t0 is int or t0 is float:
        return all(type(v) is int or type(v) is float for v in items)
    if t0 is str or t0 is Keyword:
        return all(type(v) is t0 for v in items)
    return False


def _bounded(x: object, limit: int, budget: Budget | None) -> str:
    w = _Writer(limit + 1, True, budget)
    try:
        w.value(x)
    except Full:
        pass
    return "".join(w.parts)[:limit]


def pr_str(x: object, limit: int | None = None) -> str:
    """Print ``x`` as EDN text (Clojure ``pr-str``), cut to ``limit`` characters with ``...``.

    Args:
        x: any PTC-Lisp value.
        limit: the maximum length of the result (``...`` included); ``None`` for no limit
            (for the host's own values: a program's builtins print with :func:`render`).

    Returns:
        The printed text.

    Example:
        >>> pr_str({Keyword("a"): 1, Keyword("b"): (1, 2)})
        '{:a 1, :b [1 2]}'
        >>> pr_str("a" * 100, limit=10)
        '"aaaaaa...'
    """
    w = _Writer(_UNLIMITED if limit is None else limit + 1)
    try:
        w.value(x)
    except Full:
        pass
    text = "".join(w.parts)
    if limit is not None and len(text) > limit:
        if limit < 3:
            return "..."[: max(limit, 0)]
        return text[: limit - 3] + "..."
    return text


def render(
    xs: Iterable[Any],
    budget: Budget,
    *,
    what: str | None,
    mode: str = "str",
    sep: str = "",
    limit: int | None = None,
) -> str:
    """Print the values ``xs`` under a run's budget, joined by ``sep``: what ``str``,
    ``join``, ``format``, ``pr-str`` and the output builtins build.

    The length is checked as the text grows, before it is built: a program cannot allocate a
    huge string and only then learn it is too long. Every collection element printed counts
    as a step (see :class:`_Writer`).

    Args:
        xs: the values.
        budget: the run's budget.
        what: the builtin, for the error message; ``None`` to cut the text at ``limit``
            instead of failing (captured output).
        mode: ``"str"`` (Clojure ``str``: strings as they are, ``nil`` empty, collections
            readably), ``"pr"`` (``pr-str``: everything readably) or ``"print"``
            (``print``: strings never quoted, ``nil`` as ``nil``).
        sep: text between two values.
        limit: the most characters (default ``max_string_length``).

    Returns:
        The text (charged to ``max_memory_bytes``).

    Raises:
        LimitExceeded: the text would be longer than ``limit`` (when ``what`` is given), or
            printing visited more elements than ``max_steps`` allows.
    """
    cap = budget.limits.max_string_length if limit is None else limit
    w = _Writer(cap, mode != "print", budget)
    add, value = w.add, w.value
    bare = mode != "pr"  # top-level strings as they are
    n = 0
    try:
        for x in xs:
            if sep and n:
                add(sep)
            n += 1
            if not n & _CHUNK_MASK:  # many values (apply str ...) count as steps too
                budget.step(_CHUNK)
            t = type(x)
            if t is str and bare:
                add(x)
            elif x is None and mode == "str":
                continue
            elif t is Regex and mode == "str":
                add(x.source)
            elif t is float and mode == "str" and not math.isfinite(x):
                add(str_of(x))
            else:
                value(x)
    except Full:
        if what is not None:
            raise LimitExceeded(
                "max_string_length",
                f"{what} would build a string of more than {cap} characters, over the limit; "
                "build a shorter string (take, subs, or count instead of printing)",
            ) from None
        text = "".join(w.parts)[:cap]
    else:
        text = "".join(w.parts)
    budget.charge(len(text), what or "output")
    return text


def print_str(x: object) -> str:
    """Clojure ``print-str`` of one value: like :func:`pr_str` but strings are not quoted,
    also inside collections (``println`` uses it).

    Example:
        >>> print_str(("a", Keyword("b"), None))
        '[a :b nil]'
    """
    if type(x) is str:
        return x
    w = _Writer(readably=False)
    w.value(x)
    return "".join(w.parts)


def str_of(x: Any) -> str:
    """Clojure ``str`` of one value: strings as they are, ``nil`` as ``""``, others printed.

    Example:
        >>> str_of("a"), str_of(None), str_of(Keyword("k")), str_of(1.5)
        ('a', '', ':k', '1.5')
    """
    t = type(x)
    if t is str:
        return x  # type: ignore[no-any-return]
    if x is None:
        return ""
    if t is int:
        return str(x)
    if t is float and not math.isfinite(x):  # (str ##Inf) is "Infinity", as in Java
        return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
    if t is Regex:
        return x.source  # type: ignore[no-any-return]
    return pr_str(x)


_TYPE_NAMES: Final[dict[type, str]] = {
    str: "string",
    int: "integer",
    float: "float",
    bool: "boolean",
    type(None): "nil",
    Keyword: "keyword",
    Vector: "vector",
    dict: "map",
    Map: "map",
    frozenset: "set",
    Regex: "regex",
}


def type_name(x: object) -> str:
    """A short human name of the value's type, for error messages (``"string"``, ``"map"``).

    Example:
        >>> type_name("a"), type_name((1,)), type_name(None)
        ('string', 'vector', 'nil')
    """
    name = _TYPE_NAMES.get(type(x))
    if name is not None:
        return name
    if callable(x):
        return "function"
    return type(x).__name__
