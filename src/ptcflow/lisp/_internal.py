"""Helpers the macros call through ``#``-names that programs cannot write or shadow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NoReturn

from ptcflow.lisp.errors import LispError

__all__ = ("INTERNAL",)


def _some(x: Any) -> bool:
    return x is not None


def _no_match(form: str, value: Any) -> NoReturn:
    from ptcflow.lisp.printer import pr_str

    raise LispError(
        "type",
        f"{form}: no clause matches {pr_str(value, limit=60)}; add a default as the last form",
    )


def _lt(i: int, n: Any) -> bool:
    if type(n) is not int and type(n) is not float:
        from ptcflow.lisp.errors import type_error

        raise type_error("dotimes", "a number of times", n)
    return i < n


INTERNAL: Final[dict[str, Callable[..., Any]]] = {
    "#<": _lt,
    "#inc": lambda i: i + 1,
    "#some?": _some,
    "#no-match": _no_match,
}
