"""Inline fast paths for the hottest builtins (``+ - * < > <= >= = inc dec``).

When a call's head is one of these builtins and its arguments have the common types (two
numbers, two ints or strings or keywords for ``=``), the compiled closure computes the result
directly; any other case calls the builtin itself, so results and errors stay exactly the
builtin's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp.values import Keyword

__all__ = ("intrinsic",)

Ev = Callable[[list[Any]], Any]
Slow = Callable[..., Any]

_MAX: Final = 2**63 - 1
_MIN: Final = -(2**63)


def _plus(a0: Ev, a1: Ev, slow: Slow) -> Ev:
    def plus(frame: list[Any]) -> Any:
        x, y = a0(frame), a1(frame)
        tx, ty = type(x), type(y)
        if tx is int and ty is int:
            r = x + y
            if _MIN <= r <= _MAX:
                return r
        elif (tx is float or tx is int) and (ty is float or ty is int):
            return x + y
        return slow(x, y)

    return plus


def _minus(a0: Ev, a1: Ev, slow: Slow) -> Ev:
    def minus(frame: list[Any]) -> Any:
        x, y = a0(frame), a1(frame)
        tx, ty = type(x), type(y)
        if tx is int and ty is int:
            r = x - y
            if _MIN <= r <= _MAX:
                return r
        elif (tx is float or tx is int) and (ty is float or ty is int):
            return x - y
        return slow(x, y)

    return minus


def _times(a0: Ev, a1: Ev, slow: Slow) -> Ev:
    def times(frame: list[Any]) -> Any:
        x, y = a0(frame), a1(frame)
        tx, ty = type(x), type(y)
        if tx is int and ty is int:
            r = x * y
            if _MIN <= r <= _MAX:
                return r
        elif (tx is float or tx is int) and (ty is float or ty is int):
            return x * y
        return slow(x, y)

    return times


def _compare(op: str) -> Callable[[Ev, Ev, Slow], Ev]:
    def build(a0: Ev, a1: Ev, slow: Slow) -> Ev:
        if op == "<":

            def lt(frame: list[Any]) -> Any:
                x, y = a0(frame), a1(frame)
                tx, ty = type(x), type(y)
                if (tx is int or tx is float) and (ty is int or ty is float):
                    return x < y
                return slow(x, y)

            return lt
        if op == ">":

            def gt(frame: list[Any]) -> Any:
                x, y = a0(frame), a1(frame)
                tx, ty = type(x), type(y)
                if (tx is int or tx is float) and (ty is int or ty is float):
                    return x > y
                return slow(x, y)

            return gt
        if op == "<=":

            def le(frame: list[Any]) -> Any:
                x, y = a0(frame), a1(frame)
                tx, ty = type(x), type(y)
                if (tx is int or tx is float) and (ty is int or ty is float):
                    return x <= y
                return slow(x, y)

            return le

        def ge(frame: list[Any]) -> Any:
            x, y = a0(frame), a1(frame)
            tx, ty = type(x), type(y)
            if (tx is int or tx is float) and (ty is int or ty is float):
                return x >= y
            return slow(x, y)

        return ge

    return build


def _eq(a0: Ev, a1: Ev, slow: Slow) -> Ev:
    def eq(frame: list[Any]) -> Any:
        x, y = a0(frame), a1(frame)
        tx = type(x)
        if tx is type(y) and (tx is int or tx is str or tx is Keyword):
            return x == y
        return slow(x, y)

    return eq


def _inc(a0: Ev, slow: Slow) -> Ev:
    def inc(frame: list[Any]) -> Any:
        x = a0(frame)
        if type(x) is int and x < _MAX:
            return x + 1
        return slow(x)

    return inc


def _dec(a0: Ev, slow: Slow) -> Ev:
    def dec(frame: list[Any]) -> Any:
        x = a0(frame)
        if type(x) is int and x > _MIN:
            return x - 1
        return slow(x)

    return dec


_BINARY: Final[dict[str, Callable[[Ev, Ev, Slow], Ev]]] = {
    "+": _plus,
    "-": _minus,
    "*": _times,
    "<": _compare("<"),
    ">": _compare(">"),
    "<=": _compare("<="),
    ">=": _compare(">="),
    "=": _eq,
}
_UNARY: Final[dict[str, Callable[[Ev, Slow], Ev]]] = {"inc": _inc, "dec": _dec}


def intrinsic(name: str, args: list[Ev], slow: Slow) -> Ev | None:
    """A fast closure for ``(name args...)``, or ``None`` when there is none.

    Args:
        name: the builtin's name.
        args: the compiled arguments.
        slow: calls the builtin (with the compiler's error handling) for other cases.
    """
    if len(args) == 2:
        build2 = _BINARY.get(name)
        if build2 is not None:
            return build2(args[0], args[1], slow)
    if len(args) == 1:
        build1 = _UNARY.get(name)
        if build1 is not None:
            return build1(args[0], slow)
    return None
