"""Carrying memory and function definitions between runs as plain text.

An agent's programs share memory across turns (``def``, ``defn``, ``memory/put``). A run's
``LispResult.memory`` holds PTC-Lisp values, functions included, which a journal or a
durable worker cannot store. This module turns them into plain data and back:

* a value is kept as its PTC-Lisp text (``pr-str``), read back exactly (keywords, sets,
  nested maps, regexes): :func:`memory_to_data` / :func:`memory_from_data`;
* a function is kept as the source text of the top-level ``(defn name ...)`` (or
  ``(def name (fn ...))``) that defined it, evaluated again before the next program
  (``run(functions=...)``): :func:`kept_functions`.

What cannot be carried is reported by name with the reason, for the model to read: a
function defined inside another form (it may close over local values, tool results
included), a function built by another function (``(def inc2 (partial + 2))``), a function
stored with ``memory/put`` or inside a collection.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, Final, Literal

from ptcflow.errors import UsageError
from ptcflow.lisp._colls import Map, Vector, unkey
from ptcflow.lisp._convert import ordered_items
from ptcflow.lisp._forms import Form, ListForm, Lit, MapForm, SetForm, Sym, VecForm
from ptcflow.lisp._reader import read, read_data
from ptcflow.lisp.errors import LimitExceeded, LispError
from ptcflow.lisp.printer import float_text, ordered, pr_str, quote
from ptcflow.lisp.values import Keyword, Regex

__all__ = ("form_text", "kept_functions", "memory_from_data", "memory_to_data")

MAX_MEMORY_TEXT: Final = 1_000_000
"""The longest text of one memory value, by default (the SubAgent's default memory limit)."""
_PLAIN_KEYWORD: Final = re.compile(r"[A-Za-z_*+!?<>=.$&%-][\w*+!?<>=.$&%'/-]*")
_DEFINERS: Final = frozenset({"defn", "defn-"})
_FN: Final = frozenset({"fn", "fn*"})
_NOT_TOP_LEVEL: Final = (
    "is not kept for the next turn: only functions defined at the top level of a program "
    "with (defn {name} [args] ...) are kept; define it that way and pass data as arguments "
    "(or keep data with def)"
)


def memory_to_data(
    memory: Mapping[str, Any],
    *,
    max_chars: int = MAX_MEMORY_TEXT,
    too_large: Literal["drop", "raise"] = "drop",
) -> tuple[dict[str, str], dict[str, str]]:
    """Return the memory's values as PTC-Lisp text, and what could not be kept.

    Functions are skipped here (see :func:`kept_functions`). A value that holds a function
    inside a collection, or anything else that has no readable text, is reported in the
    second mapping with the reason. So is a value whose text would pass ``max_chars``
    characters (or it raises, with ``too_large="raise"``): the work is bounded by
    ``max_chars`` per value, whatever structure the value shares.

    Args:
        memory: ``LispResult.memory`` of a run.
        max_chars: the longest text of one value.
        too_large: ``"drop"`` a value whose text is too long (with the reason) or
            ``"raise"``.

    Returns:
        ``(values, dropped)``: ``{name: text}`` and ``{name: why it was not kept}``.

    Raises:
        LimitExceeded: with ``too_large="raise"``, a value's text passes ``max_chars``
            (``limit`` is ``"max_chars"``).

    Example:
        >>> from ptcflow.lisp import run_sync
        >>> memory_to_data(run_sync("(def seen #{:a}) (defn f [] 1)").memory)
        ({'seen': '#{:a}'}, {})
    """
    values: dict[str, str] = {}
    dropped: dict[str, str] = {}
    written: dict[int, tuple[str, int]] = {}  # shared by the values (see _Writer)
    for name, value in memory.items():
        if _is_function(value):
            continue
        try:
            values[name] = _Writer(max_chars, written).text(value, 0)
        except _NoText as why:
            if too_large == "raise" and isinstance(why, _TooLarge):
                raise LimitExceeded("max_chars", f"memory value {name} {why}") from None
            dropped[name] = f"{name} is not kept for the next turn: it {why}"
    return values, dropped


def memory_from_data(values: Mapping[str, str]) -> dict[str, Any]:
    """Read the values :func:`memory_to_data` wrote back into PTC-Lisp values.

    Args:
        values: ``{name: text}``.

    Returns:
        The memory to pass as ``run(memory=...)``.

    Raises:
        UsageError: a text is not a PTC-Lisp data literal (it was not written by
            :func:`memory_to_data`).

    Example:
        >>> memory_from_data({"n": "[1 :a]"})
        {'n': pvector([1, Keyword('a')])}
    """
    out: dict[str, Any] = {}
    for name, text in values.items():
        try:
            out[name] = read_data(text)
        except LispError as err:
            raise UsageError(
                f"memory value {name!r} is not PTC-Lisp data ({err}); pass the texts "
                "memory_to_data() returned"
            ) from None
    return out


def kept_functions(
    source: str,
    memory: Mapping[str, Any],
    previous: Mapping[str, str] | None = None,
    *,
    forms: Sequence[Form] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Return the functions to keep after a run of ``source``, and those that cannot be.

    Call it after a run that completed (its memory committed): ``previous`` are the
    functions the run was given (``run(functions=...)``), ``memory`` its
    ``LispResult.memory``. A top-level ``(defn name ...)`` or ``(def name (fn ...))``
    keeps (or replaces) ``name``; a name the program redefined any other way is dropped
    with the reason, as is any other function found in memory.

    Args:
        source: the program's text.
        memory: the memory after the run.
        previous: ``{name: source}`` of the functions kept before the run.
        forms: the program's forms as the run read them (``LispResult.forms``), so the
            source is not read again.

    Returns:
        ``({name: source text}, {name: why it is not kept})``, in definition order.

    Example:
        >>> from ptcflow.lisp import run_sync
        >>> src = "(defn twice [x] (* 2 x)) (let [k 3] (defn add-k [x] (+ x k)))"
        >>> kept, dropped = kept_functions(src, run_sync(src).memory)
        >>> kept, sorted(dropped)
        ({'twice': '(defn twice [x] (* 2 x))'}, ['add-k'])
    """
    functions = dict(previous or {})
    dropped: dict[str, str] = {}
    forms = read(source) if forms is None else forms
    top: dict[str, str] = {}
    for form in _top_level(forms):
        name = _defined_name(form)
        if name is not None:
            if _defines_function(form):
                top[name] = form_text(form)
            else:
                top.pop(name, None)
                functions.pop(name, None)
    for name, text in top.items():
        functions.pop(name, None)  # a redefinition moves to the end
        functions[name] = text
    redefined = set(getattr(forms, "defs", ())) - set(top)
    for name in list(functions):
        value = memory.get(name)
        if not _is_function(value) or name in redefined:
            del functions[name]
    for name, value in memory.items():
        if name in functions or not _is_function(value):
            continue
        if name in redefined:
            dropped[name] = f"{name} " + _NOT_TOP_LEVEL.format(name=name)
        else:
            dropped[name] = (
                f"{name} is not kept for the next turn: it holds a function that was not "
                f"defined with a top-level (defn {name} [args] ...); define it that way"
            )
    return functions, dropped


def form_text(form: Form) -> str:
    """Print a form back as PTC-Lisp source (``#(...)`` comes back as ``(fn [%1] ...)``).

    Example:
        >>> form_text(read('(defn f [x] (str x "!"))')[0])
        '(defn f [x] (str x "!"))'
    """
    if isinstance(form, Lit):
        return pr_str(form.value)
    if isinstance(form, Sym):
        return form.name
    if isinstance(form, ListForm):
        return "(" + _joined(form.items) + ")"
    if isinstance(form, VecForm):
        return "[" + _joined(form.items) + "]"
    if isinstance(form, MapForm):
        return "{" + _joined(form.items) + "}"
    if isinstance(form, SetForm):
        return "#{" + _joined(form.items) + "}"
    raise TypeError(f"not a form: {form!r}")  # pragma: no cover - the reader makes only these


def _joined(items: Iterable[Form]) -> str:
    return " ".join(form_text(f) for f in items)


def _top_level(forms: Iterable[Form]) -> Iterable[Form]:
    """The program's top-level forms, looking inside top-level ``(do ...)``."""
    for form in forms:
        if _head(form) == "do" and isinstance(form, ListForm):
            yield from _top_level(form.items[1:])
        else:
            yield form


def _head(form: Form) -> str | None:
    if isinstance(form, ListForm) and form.items and isinstance(form.items[0], Sym):
        return form.items[0].name
    return None


def _defined_name(form: Form) -> str | None:
    head = _head(form)
    if head not in _DEFINERS and head != "def":
        return None
    assert isinstance(form, ListForm)
    if len(form.items) < 2 or not isinstance(form.items[1], Sym):
        return None
    return form.items[1].name


def _defines_function(form: Form) -> bool:
    if _head(form) in _DEFINERS:
        return True
    assert isinstance(form, ListForm)
    return len(form.items) == 3 and _head(form.items[2]) in _FN


def _is_function(value: Any) -> bool:
    return callable(value) and not isinstance(value, Keyword | dict | Map | Vector | frozenset)


class _NoText(Exception):
    """A value has no text that reads back exactly (the message says why)."""


class _TooLarge(_NoText):
    """A value's text would pass the writer's cap."""


class _Writer:
    """Writes one value's ``pr-str`` text in one walk, or raises :class:`_NoText`.

    The same text as :func:`ptcflow.lisp.pr_str` (a test holds them equal), without its
    budget accounting: memory is written outside any run. What has no text that reads back
    (a function inside a collection, an odd keyword) is found on the way, and the text is
    bounded: a value that shares structure (``[v v]`` doubled 60 times) would print for
    ever, so every character is counted as it is written (a collection's brackets and
    separators before its elements are sorted or visited) and the value is refused once
    the count passes ``cap``. Each element counts at least one character, so the walk
    visits at most ``cap`` elements. Scalars, most of any data, are written through one
    table lookup each.

    A collection met again (``(def big (filter ...))`` keeps rows of ``orders``) is not
    walked again: ``written`` keeps each collection's text by identity for the writers of
    one :func:`memory_to_data` call (every value it holds is alive until the call ends),
    and the text counts again wherever it is used.
    """

    __slots__ = ("cap", "left", "written")

    def __init__(self, cap: int, written: dict[int, tuple[str, int]]) -> None:
        self.cap = cap
        self.left = cap
        self.written = written
        """``{id(collection): (text, the depth it was written at)}``."""

    def text(self, x: Any, depth: int) -> str:
        """The text of ``x`` (at ``depth`` collections down), counted."""
        return self.texts((x,), depth)[0]

    def texts(self, xs: Iterable[Any], depth: int) -> list[str]:
        """The texts of ``xs`` (a collection's elements), each counted."""
        out: list[str] = []
        for x in xs:
            scalar = _SCALAR_TEXT.get(type(x))
            if scalar is None:
                out.append(self.collection(x, depth))
            else:
                text: str = scalar(x)
                self.count(len(text))
                out.append(text)
        return out

    def collection(self, x: Any, depth: int) -> str:
        """The text of ``x``, which is not a scalar."""
        known = self.written.get(id(x))
        if known is not None and depth <= known[1]:  # no deeper than where it was written
            self.count(len(known[0]))
            return known[0]
        if depth > 200:
            raise _NoText("is nested too deeply to be kept")
        t = type(x)
        d = depth + 1
        if t is Vector or t is frozenset:
            # brackets ("[]" or "#{}") and one space between two elements
            self.count((2 if t is Vector else 3) + max(len(x) - 1, 0))
            items = " ".join(self.texts(x if t is Vector else ordered(x), d))
            text = f"[{items}]" if t is Vector else f"#{{{items}}}"
        elif t is dict or t is Map:  # a host map (its order) or a program map (sorted)
            # "{}", ", " between two entries and " " between a key and its value
            self.count(2 + 2 * max(len(x) - 1, 0) + len(x))
            pairs = x.items() if t is dict else ordered_items(x)  # (a host map's keys below)
            kv = iter(self.texts(chain.from_iterable(pairs), d))  # key, value, key, ...
            text = "{" + ", ".join(map(" ".join, zip(kv, kv, strict=True))) + "}"
        elif t is Regex:
            text = pr_str(x)
            self.count(len(text))
        elif unkey(x) is not x:  # a host map's key stored encoded (true, 1.5, a vector)
            return self.text(unkey(x), depth)
        elif callable(x):
            raise _NoText(
                "holds a function inside a collection; keep data only, and functions with defn"
            )
        else:
            raise _NoText(f"holds a {t.__name__}, which has no PTC-Lisp text")
        self.written[id(x)] = (text, depth)
        return text

    def count(self, n: int) -> None:
        """Count ``n`` more characters of the text; :class:`_TooLarge` past the cap."""
        self.left -= n
        if self.left < 0:
            raise _TooLarge(
                f"is too large to be kept (its text passes {self.cap:,} characters); keep a "
                "smaller summary, or fetch the data again when you need it"
            )


@functools.lru_cache(maxsize=4096)
def _keyword_text(kw: Keyword) -> str:
    """``:name``, or :class:`_NoText` for a keyword that does not read back."""
    if not _PLAIN_KEYWORD.fullmatch(kw.name):
        problem = _odd_keyword(kw)
        if problem is not None:
            raise _NoText(problem)
    return ":" + kw.name


_SCALAR_TEXT: Final[dict[type, Callable[[Any], str]]] = {
    str: quote,
    int: str,
    float: float_text,
    bool: lambda b: "true" if b else "false",
    type(None): lambda _: "nil",
    Keyword: _keyword_text,
}


def _odd_keyword(kw: Keyword) -> str | None:
    """Why keyword ``kw`` (not a plain name) cannot be kept, or ``None`` when it reads back."""
    try:
        return None if read_data(":" + kw.name) is kw else "holds an odd keyword"
    except LispError:
        return f"holds the keyword {kw.name!r}, which has no PTC-Lisp text"
