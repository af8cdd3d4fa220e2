"""Reader output: forms with positions.

The reader turns text into a tree of small immutable form objects, each remembering the line
and column where it starts. Data literals (numbers, strings, keywords, regexes, ``nil``,
``true``/``false``) are :class:`Lit`; names are :class:`Sym`; the four bracket kinds are
:class:`ListForm`, :class:`VecForm`, :class:`MapForm` and :class:`SetForm`. The analyzer is
the only consumer; :func:`form_to_value` turns a data-only form into a runtime value (used by
``read_data`` and the reader round-trip tests).
"""

from __future__ import annotations

from typing import Any

__all__ = (
    "Form",
    "ListForm",
    "Lit",
    "MapForm",
    "SetForm",
    "Sym",
    "VecForm",
    "form_to_value",
)


class Form:
    """Base of every form :func:`ptcflow.lisp.parse` returns: ``line`` and ``column`` are
    1-based."""

    __slots__ = ("column", "line")

    line: int
    column: int


class Lit(Form):
    """A literal value (number, string, keyword, regex, nil, boolean)."""

    __slots__ = ("value",)

    def __init__(self, value: Any, line: int, column: int) -> None:
        self.value = value
        self.line = line
        self.column = column

    def __repr__(self) -> str:
        return f"Lit({self.value!r})"


class Sym(Form):
    """A symbol such as ``x``, ``ctx/orders`` or ``clojure.string/join``.

    ``ns`` is the part before the first ``/`` (``None`` when there is none, and for the
    division symbol ``/`` itself); ``local`` is the rest.
    """

    __slots__ = ("local", "name", "ns")

    def __init__(self, name: str, line: int, column: int) -> None:
        self.name = name
        self.line = line
        self.column = column
        if "/" in name and name != "/" and not name.startswith("/"):
            ns, _, local = name.partition("/")
            self.ns: str | None = ns
            self.local = local
        else:
            self.ns = None
            self.local = name

    def __repr__(self) -> str:
        return f"Sym({self.name})"


class _Coll(Form):
    __slots__ = ("items",)

    def __init__(self, items: tuple[Form, ...], line: int, column: int) -> None:
        self.items = items
        self.line = line
        self.column = column

    def __repr__(self) -> str:
        return f"{type(self).__name__}{list(self.items)!r}"


class ListForm(_Coll):
    """``( ... )``: a call or a special form."""

    __slots__ = ()


class VecForm(_Coll):
    """``[ ... ]``."""

    __slots__ = ()


class MapForm(_Coll):
    """``{ ... }``; ``items`` alternates keys and values (the reader checks the count)."""

    __slots__ = ()


class SetForm(_Coll):
    """``#{ ... }``."""

    __slots__ = ()


def form_to_value(form: Form) -> Any:
    """Convert a form made only of literals and collections into a runtime value.

    Vectors and lists become vectors, maps maps, sets sets. Symbols raise ``ValueError``.
    """
    from ptcflow.lisp._colls import Map, make_set, mkey, vec

    if isinstance(form, Lit):
        return form.value
    if isinstance(form, VecForm | ListForm):
        return vec([form_to_value(f) for f in form.items])
    if isinstance(form, SetForm):
        return make_set([form_to_value(f) for f in form.items])
    if isinstance(form, MapForm):
        it = iter(form.items)
        return Map({mkey(form_to_value(k)): form_to_value(v) for k, v in zip(it, it, strict=True)})
    raise ValueError(f"not a data literal: {form!r}")
