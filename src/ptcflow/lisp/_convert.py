"""Converting between Python data and PTC-Lisp values at the boundary of a run.

:func:`from_python` turns ``ctx``, memory and tool results into PTC-Lisp values (string map
keys become keywords, lists tuples); :func:`check_plain` checks the same without building
anything (``ctx`` values a program never reads); :func:`to_python` turns a program's value
back into JSON-like data. All three are re-exported by :mod:`ptcflow.lisp.values`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp.errors import type_error
from ptcflow.lisp.values import Builtin, Keyword, LispFn, Regex

__all__ = ("check_plain", "from_python", "to_python")


def to_python(x: object, *, keep_keywords: bool = False) -> Any:
    """Convert a PTC-Lisp value to JSON-like Python data.

    Keyword map keys become their name strings; keyword values become names too unless
    ``keep_keywords``. Vectors and sets become lists (sets sorted when their members can be
    compared), regexes their pattern text.

    Args:
        x: the value.
        keep_keywords: keep :class:`Keyword` values (not map keys) as keywords.

    Returns:
        ``None``, ``bool``, ``int``, ``float``, ``str``, ``list``, ``dict`` (or ``Keyword``).

    Raises:
        LispError: ``x`` contains a function (category ``"type"``).

    Example:
        >>> to_python({Keyword("a"): (1, Keyword("b"))})
        {'a': [1, 'b']}
    """
    t = type(x)
    if t is str or t is int or t is float or t is bool or x is None:
        return x
    if t is Keyword:
        return x if keep_keywords else x.name  # type: ignore[attr-defined]
    if t is tuple:
        return [to_python(v, keep_keywords=keep_keywords) for v in x]  # type: ignore[attr-defined]
    if t is dict:
        return {
            (k.name if type(k) is Keyword else _python_key(k)): to_python(
                v, keep_keywords=keep_keywords
            )
            for k, v in x.items()  # type: ignore[attr-defined]
        }
    if t is frozenset:
        from ptcflow.lisp.printer import _ordered  # printer imports this module

        return [to_python(v, keep_keywords=keep_keywords) for v in _ordered(x)]  # type: ignore[arg-type]
    if t is Regex:
        return x.source  # type: ignore[attr-defined]
    if callable(x):
        raise type_error("returning a result", "data (a function cannot be returned)", x)
    raise type_error("returning a result", "data", x)


def _python_key(k: object) -> Any:
    if type(k) is tuple:
        return tuple(_python_key(v) for v in k)
    return to_python(k)


def from_python(x: object, *, keywordize_keys: bool = True) -> Any:
    """Convert JSON-like Python data into PTC-Lisp values.

    Args:
        x: ``dict``/``list``/``tuple``/``set``/``frozenset``/``str``/``int``/``float``/
            ``bool``/``None`` (nested), or values that already are PTC-Lisp values.
        keywordize_keys: turn ``str`` map keys into keywords, so programs write ``(:id row)``.

    Returns:
        The PTC-Lisp value (lists and tuples become tuples, sets frozensets).

    Raises:
        TypeError: ``x`` contains an object of another type (at the boundary, a caller bug).

    Example:
        >>> from_python({"id": [1, 2]})
        {Keyword('id'): (1, 2)}
    """
    return _from(x, _KeywordOf() if keywordize_keys else None)


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
    if t is list or t is tuple or t is set or t is frozenset:
        for v in x:  # type: ignore[attr-defined]
            if type(v) not in _SCALARS:
                check_plain(v)
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


def _from(x: Any, kw: _KeywordOf | None) -> Any:
    """Convert ``x``; ``kw`` caches the keywords made for string keys (``None``: keep them)."""
    t = type(x)
    if t in _SCALARS:
        return x
    scalars = _SCALARS
    if t is dict:
        out = {}
        if kw is None:
            for k, v in x.items():
                out[k if type(k) in scalars else _from(k, kw)] = (
                    v if type(v) in scalars else _from(v, kw)
                )
        else:
            for k, v in x.items():
                out[kw[k] if type(k) is str else _from(k, kw)] = (
                    v if type(v) in scalars else _from(v, kw)
                )
        return out
    if t is list or t is tuple:
        if kw is None:
            return tuple([v if type(v) in scalars else _from(v, kw) for v in x])
        # Lists of records (rows of a tool result) are the common large input: their maps
        # are converted inline, without a call per row.
        items: list[Any] = []
        add = items.append
        for v in x:
            tv = type(v)
            if tv is dict:
                row = {}
                for k, w in v.items():
                    row[kw[k] if type(k) is str else _from(k, kw)] = (
                        w if type(w) in scalars else _from(w, kw)
                    )
                add(row)
            elif tv in scalars:
                add(v)
            else:
                add(_from(v, kw))
        return tuple(items)
    if t is set or t is frozenset:
        return frozenset([_from(v, kw) for v in x])
    if t is Regex or isinstance(x, LispFn | Builtin):
        return x
    # Subclasses of the plain types (IntEnum, str enums, dict subclasses) convert as their base.
    for base, conv in _BASES:
        if isinstance(x, base):
            return _from(conv(x), kw)
    raise _not_plain(x)


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
