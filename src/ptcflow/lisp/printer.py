"""Print PTC-Lisp values as EDN-style text, the way the model reads them back.

``pr_str`` is Clojure's ``pr-str``: strings are quoted, maps print as ``{:a 1, :b [1 2]}``,
sets as ``#{...}``, sequences as vectors ``[...]`` (there are no lazy seqs), regexes as
``#"..."``. ``str_of`` is Clojure's ``str`` of one value: strings unquoted, ``nil`` empty.
"""

from __future__ import annotations

import math
from typing import Any, Final

from ptcflow.lisp._colls import Map, Vector, set_items
from ptcflow.lisp.values import Builtin, Keyword, LispFn, Regex

__all__ = ("ordered", "pr_str", "print_str", "str_of", "type_name")

_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\b": "\\b",
    "\f": "\\f",
}
_NEEDS_ESCAPE: Final = frozenset(_ESCAPES)


class Full(Exception):
    """Raised once the output reached its limit (``pr_str`` catches it and cuts the text)."""


def _quote(s: str) -> str:
    if _NEEDS_ESCAPE.isdisjoint(s):
        return '"' + s + '"'
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


def _float(x: float) -> str:
    if math.isnan(x):
        return "##NaN"
    if math.isinf(x):
        return "##Inf" if x > 0 else "##-Inf"
    return repr(x)


def _fn_name(x: object) -> str:
    if isinstance(x, Builtin | LispFn):
        return f"#<fn {x.name or 'anonymous'}>"
    return "#<fn>"


class _Writer:
    __slots__ = ("limit", "parts", "readably", "size")

    def __init__(self, limit: int | None, readably: bool = True) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.readably = readably

    def add(self, s: str) -> None:
        self.parts.append(s)
        if self.limit is not None:
            self.size += len(s)
            if self.size > self.limit:
                raise Full

    def value(self, x: object) -> None:
        t = type(x)
        if t is str:
            self.add(_quote(x) if self.readably else x)  # type: ignore[arg-type]
        elif t is Keyword:
            self.add(":" + x.name)  # type: ignore[attr-defined]
        elif t is int:
            self.add(str(x))
        elif x is None:
            self.add("nil")
        elif t is bool:
            self.add("true" if x else "false")
        elif t is float:
            self.add(_float(x))  # type: ignore[arg-type]
        elif t is Vector:
            self.seq("[", x, "]")
        elif t is dict or t is Map:
            from ptcflow.lisp._convert import ordered_items

            self.add("{")
            first = True
            for k, v in ordered_items(x):
                if not first:
                    self.add(", ")
                first = False
                self.value(k)
                self.add(" ")
                self.value(v)
            self.add("}")
        elif t is frozenset:
            self.seq("#{", ordered(x), "}")
        elif t is Regex:
            self.add('#"' + x.source.replace('"', '\\"') + '"')  # type: ignore[attr-defined]
        elif callable(x):
            self.add(_fn_name(x))
        else:
            self.add(f"#<{type(x).__name__}>")

    def seq(self, open_: str, items: Any, close: str) -> None:
        self.add(open_)
        first = True
        for item in items:
            if not first:
                self.add(" ")
            first = False
            self.value(item)
        self.add(close)


def ordered(s: Any) -> list[object]:
    """Set members (or map keys) decoded, in a deterministic order: sorted when they can be
    compared, else by type and printed form (hash order varies from process to process)."""
    items = list(set_items(s))
    try:
        items.sort()
    except TypeError:
        items.sort(key=lambda v: (type(v).__name__, pr_str(v, limit=200)))
    return items


def pr_str(x: object, limit: int | None = None) -> str:
    """Print ``x`` as EDN text (Clojure ``pr-str``), cut to ``limit`` characters with ``...``.

    Args:
        x: any PTC-Lisp value.
        limit: the maximum length of the result (``...`` included); ``None`` for no limit.

    Returns:
        The printed text.

    Example:
        >>> pr_str({Keyword("a"): 1, Keyword("b"): (1, 2)})
        '{:a 1, :b [1 2]}'
        >>> pr_str("a" * 100, limit=10)
        '"aaaaaa...'
    """
    w = _Writer(None if limit is None else limit + 1)
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


def print_str(x: object) -> str:
    """Clojure ``print-str`` of one value: like :func:`pr_str` but strings are not quoted,
    also inside collections (``println`` uses it).

    Example:
        >>> print_str(("a", Keyword("b"), None))
        '[a :b nil]'
    """
    if type(x) is str:
        return x
    w = _Writer(None, readably=False)
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
