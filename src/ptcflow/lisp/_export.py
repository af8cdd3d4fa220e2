"""Bounded conversion of program values to plain Python data (results and tool arguments).

Values can share structure: ``(reduce (fn [v _] [v v]) [] (range 60))`` is a small object
graph that denotes 2**60 leaves. Converting it naively would never end, so :func:`export`
counts the nodes it produces and refuses values larger than ``max_collection_size`` (or
nested deeper than :data:`MAX_EXPORT_DEPTH`) with a ``limit`` error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp._colls import Map, Vector
from ptcflow.lisp._convert import ordered_items, python_key
from ptcflow.lisp.errors import LimitExceeded
from ptcflow.lisp.limits import active_budget
from ptcflow.lisp.printer import ordered
from ptcflow.lisp.values import Keyword, Regex, to_python

__all__ = ("MAX_EXPORT_DEPTH", "export")

MAX_EXPORT_DEPTH: Final = 200


_PROGRESS_EVERY: Final = 8192


class _Counter:
    __slots__ = ("budget", "left", "limit", "next_progress", "progress", "what")

    def __init__(self, limit: int, what: str, progress: Callable[[], None] | None) -> None:
        self.budget = active_budget()  # the run's, for sorting large maps and sets in chunks
        self.left = limit
        self.limit = limit
        self.what = what
        self.progress = progress
        self.next_progress = limit - _PROGRESS_EVERY

    def tick(self) -> None:
        self.next_progress = self.left - _PROGRESS_EVERY
        if self.progress is not None:
            self.progress()

    def too_big(self) -> LimitExceeded:
        return LimitExceeded(
            "max_collection_size",
            f"{self.what} holds more than {self.limit} values; return a smaller summary "
            "(take, count, select-keys)",
        )

    def too_deep(self) -> LimitExceeded:
        return LimitExceeded(
            "max_depth",
            f"{self.what} is nested more than {MAX_EXPORT_DEPTH} levels deep; return flatter data",
        )


def export(
    value: Any,
    max_nodes: int,
    *,
    keep_keywords: bool,
    what: str,
    progress: Callable[[], None] | None = None,
) -> Any:
    """Convert ``value`` like ``values.to_python``, refusing oversized or too-deep values.

    Args:
        value: a PTC-Lisp value.
        max_nodes: the most values (scalars and collections) the result may contain.
        keep_keywords: keep keyword *values* as :class:`Keyword` (map keys become strings).
        what: what is being converted, for the message (``"the result"``).
        progress: called every few thousand values (the runner checks the clock and lets
            the event loop run).

    Raises:
        LimitExceeded: the value is too large or too deeply nested.
        LispError: the value contains a function (category ``"type"``).
    """
    return _conv(value, _Counter(max_nodes, what, progress), 0, keep_keywords)


def _conv(x: Any, budget: _Counter, depth: int, keep: bool) -> Any:
    budget.left -= 1
    if budget.left < budget.next_progress:
        if budget.left < 0:
            raise budget.too_big()
        budget.tick()
    t = type(x)
    if t is str or t is int or t is float or t is bool or x is None:
        return x
    if t is Keyword:
        return x if keep else x.name
    if depth >= MAX_EXPORT_DEPTH:
        raise budget.too_deep()
    d = depth + 1
    if t is Vector:
        if len(x) > budget.left:
            raise budget.too_big()
        return [_conv(v, budget, d, keep) for v in x]
    if t is dict or t is Map:
        if 2 * len(x) > budget.left:  # a key and a value per entry: refused before sorting
            raise budget.too_big()
        return {
            (k.name if type(k) is Keyword else _key(k, budget)): _conv(v, budget, d, keep)
            for k, v in ordered_items(x, budget.budget)
        }
    if t is frozenset:
        if len(x) > budget.left:
            raise budget.too_big()
        return [_conv(v, budget, d, keep) for v in ordered(x, budget.budget)]
    if t is Regex:
        return x.source
    return to_python(x)  # raises the standard type error for functions


def _key(k: Any, budget: _Counter) -> Any:
    budget.left -= 1
    return python_key(k)
