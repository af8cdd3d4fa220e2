"""How values look to the model: a short Clojure-style preview, firewalled fields hidden.

Everything a model reads about data (the data inventory, a turn's value, tool results in
the turn summary) goes through :func:`preview`: ``_``-prefixed fields are replaced by
``<Firewalled>`` and the text is cut to a limit, with a note saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ("clj", "infer_type", "preview")

_NAME: Final = re.compile(r"[A-Za-z_*+!?<>=-][\w*+!?<>=./-]*")
_FIREWALLED: Final = "<Firewalled>"


class _Full(Exception):
    """The preview reached its limit."""


class _Out:
    __slots__ = ("limit", "parts", "size")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size > self.limit:
            raise _Full


def clj(value: Any, limit: int = 1_000_000) -> tuple[str, bool]:
    """Print plain data the way PTC-Lisp prints it (``{:id 1, :tags ["a"]}``).

    Returns:
        The text (cut to ``limit`` characters) and whether it was cut.

    Example:
        >>> clj({"id": 1, "tags": ["a"], "ok": None})
        ('{:id 1, :tags ["a"], :ok nil}', False)
    """
    return _bounded(value, limit, False)


def preview(value: Any, limit: int) -> tuple[str, bool]:
    """Like :func:`clj`, with firewalled (``_``) fields shown as ``<Firewalled>``.

    Only what fits in ``limit`` is visited: a preview of a large tool result costs what it
    shows (the fields are redacted as they are written, not by copying the data first).

    Example:
        >>> preview({"n": 2, "_ids": [1, 2]}, 100)
        ('{:n 2, :_ids <Firewalled>}', False)
    """
    return _bounded(value, limit, True)


def _bounded(value: Any, limit: int, redact: bool) -> tuple[str, bool]:
    out = _Out(limit)
    try:
        _write(value, out, 0, redact)
    except _Full:
        text = "".join(out.parts)[: max(0, limit - 3)]
        return text + "...", True
    return "".join(out.parts), False


def _firewalled(key: Any) -> bool:
    """Whether a map key names a firewalled field (``"_ids"``, ``":_ids"``, ``:_ids``)."""
    name = key if isinstance(key, str) else getattr(key, "name", None)
    return isinstance(name, str) and name.lstrip(":").startswith("_")


def _write(x: Any, out: _Out, depth: int, redact: bool) -> None:
    if depth > 50:
        out.add("...")
        return
    if x is None:
        out.add("nil")
    elif x is True:
        out.add("true")
    elif x is False:
        out.add("false")
    elif isinstance(x, str):
        out.add(_FIREWALLED if x == _FIREWALLED else _quote(x))
    elif isinstance(x, int):
        out.add(str(x))
    elif isinstance(x, float):
        out.add(repr(x) if math.isfinite(x) else ("##NaN" if math.isnan(x) else "##Inf"))
    elif isinstance(x, Mapping):
        out.add("{")
        for i, (k, v) in enumerate(x.items()):
            if i:
                out.add(", ")
            out.add(_key(k))
            out.add(" ")
            if redact and _firewalled(k):
                out.add(_FIREWALLED)
            else:
                _write(v, out, depth + 1, redact)
        out.add("}")
    elif isinstance(x, list | tuple | set | frozenset):
        out.add("[")
        for i, v in enumerate(x):
            if i:
                out.add(" ")
            _write(v, out, depth + 1, redact)
        out.add("]")
    else:
        out.add(_quote(str(x)))


def _key(k: Any) -> str:
    if isinstance(k, str) and _NAME.fullmatch(k):
        return ":" + k
    if isinstance(k, str):
        return _quote(k)
    return str(k)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def infer_type(value: Any, depth: int = 0) -> str:
    """The type of plain data in signature syntax (for the data inventory).

    Lists take the type of their first item; maps with many fields, and anything nested
    more than three levels, are ``:map``.

    Example:
        >>> infer_type([{"id": 1, "tags": ["x"], "note": None}])
        '[{id :int, tags [:string], note :any}]'
    """
    if value is None:
        return ":any"
    if isinstance(value, bool):
        return ":bool"
    if isinstance(value, int):
        return ":int"
    if isinstance(value, float):
        return ":float"
    if isinstance(value, str):
        return ":string"
    if isinstance(value, Mapping):
        names = [k for k in value if isinstance(k, str) and _NAME.fullmatch(k)]
        if depth >= 3 or not value or len(names) != len(value) or len(names) > 12:
            return ":map"
        fields = ", ".join(
            f"{k} {_FIREWALLED if k.startswith('_') else infer_type(value[k], depth + 1)}"
            for k in names
        )
        return "{" + fields + "}"
    if isinstance(value, list | tuple):
        if not value or depth >= 3:
            return "[:any]"
        return "[" + infer_type(value[0], depth + 1) + "]"
    return ":any"
