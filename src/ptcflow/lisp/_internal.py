"""Helpers the macros call through ``#``-names that programs cannot write or shadow."""

from __future__ import annotations

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


def _seq(coll: Any) -> Any:
    from ptcflow.lisp.builtins._seqs import seq_

    return seq_(coll)


def _where(*args: Any) -> Any:
    from ptcflow.lisp.builtins._extras import where

    return where(*args)


def _first(coll: Any) -> Any:
    from ptcflow.lisp.builtins._seqs import first

    return first(coll)


_UNSET: Final = object()


INTERNAL: Final[dict[str, Any]] = {
    "#unset": _UNSET,
    "#unset?": lambda v: v is _UNSET,
    "#seq": _seq,
    "#where": _where,
    "#first": _first,
    "#<": _lt,
    "#inc": lambda i: i + 1,
    "#some?": _some,
    "#no-match": _no_match,
}
