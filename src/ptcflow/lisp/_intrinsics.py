"""Inline fast paths for the hottest builtins (``+ - * < > <= >= = mod inc dec``).

When a call's head is one of these builtins and its arguments have the common types (two
numbers, two ints or strings or keywords for ``=``), the compiled closure computes the result
directly; any other case calls the builtin itself, so results and errors stay exactly the
builtin's.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp._colls import Map, host_get
from ptcflow.lisp.values import Keyword

__all__ = ("NAMES", "NO_CONST", "intrinsic")

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


def _mod(a0: Ev, a1: Ev, slow: Slow) -> Ev:
    def mod(frame: list[Any]) -> Any:
        x, y = a0(frame), a1(frame)
        tx, ty = type(x), type(y)
        if (tx is int or tx is float) and (ty is int or ty is float) and y:
            return x % y
        return slow(x, y)

    return mod


# -- a number literal as the second argument: ``(< i 1000)``, ``(+ acc 1)``, ``(mod x 7)`` --
#
# The literal is known at compile time, so the closure evaluates one argument and tests one
# type; other cases still go through ``slow`` (the builtin), with the literal.


def _arith_k(op: str) -> Callable[[Ev, int | float, Slow], Ev]:
    def build(a0: Ev, k: int | float, slow: Slow) -> Ev:
        k_int = type(k) is int
        if op == "+":

            def plus_k(frame: list[Any]) -> Any:
                x = a0(frame)
                tx = type(x)
                if tx is int and k_int:
                    r = x + k
                    if _MIN <= r <= _MAX:
                        return r
                elif tx is int or tx is float:
                    return x + k
                return slow(x, k)

            return plus_k
        if op == "-":

            def minus_k(frame: list[Any]) -> Any:
                x = a0(frame)
                tx = type(x)
                if tx is int and k_int:
                    r = x - k
                    if _MIN <= r <= _MAX:
                        return r
                elif tx is int or tx is float:
                    return x - k
                return slow(x, k)

            return minus_k

        def times_k(frame: list[Any]) -> Any:
            x = a0(frame)
            tx = type(x)
            if tx is int and k_int:
                r = x * k
                if _MIN <= r <= _MAX:
                    return r
            elif tx is int or tx is float:
                return x * k
            return slow(x, k)

        return times_k

    return build


def _compare_k(op: str) -> Callable[[Ev, int | float, Slow], Ev]:
    def build(a0: Ev, k: int | float, slow: Slow) -> Ev:
        fused = getattr(a0, "keyword_lookup", None)
        if fused is not None:
            kw, m0 = fused
            return _compare_kw_k(op, kw, m0, k, slow)
        if op == "<":

            def lt_k(frame: list[Any]) -> Any:
                x = a0(frame)
                tx = type(x)
                if tx is int or tx is float:
                    return x < k
                return slow(x, k)

            return lt_k
        if op == ">":

            def gt_k(frame: list[Any]) -> Any:
                x = a0(frame)
                tx = type(x)
                if tx is int or tx is float:
                    return x > k
                return slow(x, k)

            return gt_k
        if op == "<=":

            def le_k(frame: list[Any]) -> Any:
                x = a0(frame)
                tx = type(x)
                if tx is int or tx is float:
                    return x <= k
                return slow(x, k)

            return le_k

        def ge_k(frame: list[Any]) -> Any:
            x = a0(frame)
            tx = type(x)
            if tx is int or tx is float:
                return x >= k
            return slow(x, k)

        return ge_k

    return build


def _compare_kw_k(op: str, kw: Keyword, m0: Ev, k: int | float, slow: Slow) -> Ev:
    """``(op (:kw m) k)`` in one closure: the lookup of :func:`_calls._keyword_lookup` inlined."""
    cmp = _OPERATORS[op]

    def compare_kw_k(frame: list[Any]) -> Any:
        m = m0(frame)
        x: Any
        t = type(m)
        if t is dict:
            x = m.get(kw)
            if x is None:
                x = host_get(m, kw)
        elif t is Map:
            x = m.get(kw)
        else:
            x = kw(m)
        tx = type(x)
        if tx is int or tx is float:
            return cmp(x, k)
        return slow(x, k)

    if op == ">":  # the most common filter, without the operator call

        def gt_kw_k(frame: list[Any]) -> Any:
            m = m0(frame)
            x: Any
            t = type(m)
            if t is dict:
                x = m.get(kw)
                if x is None:
                    x = host_get(m, kw)
            elif t is Map:
                x = m.get(kw)
            else:
                x = kw(m)
            tx = type(x)
            if tx is int or tx is float:
                return x > k
            return slow(x, k)

        return gt_kw_k
    return compare_kw_k


_OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def _mod_k(a0: Ev, k: int | float, slow: Slow) -> Ev:
    if not k:
        return None  # type: ignore[return-value]  # the builtin reports division by zero

    def mod_k(frame: list[Any]) -> Any:
        x = a0(frame)
        tx = type(x)
        if tx is int or tx is float:
            return x % k
        return slow(x, k)

    return mod_k


def _eq_k(a0: Ev, k: Any, slow: Slow) -> Ev:
    tk = type(k)
    fused = getattr(a0, "keyword_lookup", None)
    if fused is not None:
        kw, m0 = fused

        def eq_kw_k(frame: list[Any]) -> Any:
            m = m0(frame)
            x: Any
            t = type(m)
            if t is dict:
                x = m.get(kw)
                if x is None:
                    x = host_get(m, kw)
            elif t is Map:
                x = m.get(kw)
            else:
                x = kw(m)
            if type(x) is tk:
                return x == k
            return slow(x, k)

        return eq_kw_k

    def eq_k(frame: list[Any]) -> Any:
        x = a0(frame)
        if type(x) is tk:
            return x == k
        return slow(x, k)

    return eq_k


_BINARY: Final[dict[str, Callable[[Ev, Ev, Slow], Ev]]] = {
    "+": _plus,
    "-": _minus,
    "*": _times,
    "<": _compare("<"),
    ">": _compare(">"),
    "<=": _compare("<="),
    ">=": _compare(">="),
    "=": _eq,
    "mod": _mod,
}
_BINARY_K: Final[dict[str, Callable[[Ev, Any, Slow], Ev]]] = {
    "+": _arith_k("+"),
    "-": _arith_k("-"),
    "*": _arith_k("*"),
    "<": _compare_k("<"),
    ">": _compare_k(">"),
    "<=": _compare_k("<="),
    ">=": _compare_k(">="),
    "mod": _mod_k,
}
_UNARY: Final[dict[str, Callable[[Ev, Slow], Ev]]] = {"inc": _inc, "dec": _dec}

NAMES: Final = frozenset(_BINARY) | frozenset(_UNARY)
"""The builtins that have an inline fast path."""

NO_CONST: Final[Any] = object()
"""Marks an argument whose value is not a literal known at compile time."""


def intrinsic(name: str, args: list[Ev], slow: Slow, consts: list[Any] | None = None) -> Ev | None:
    """A fast closure for ``(name args...)``, or ``None`` when there is none.

    Args:
        name: the builtin's name.
        args: the compiled arguments.
        slow: calls the builtin (with the compiler's error handling) for other cases.
        consts: per argument, its literal value when it is one, else :data:`NO_CONST`.
    """
    if len(args) == 2:
        k = consts[1] if consts is not None else NO_CONST
        tk = type(k)
        fast: Ev | None = None
        if tk is int or tk is float:
            build_k = _BINARY_K.get(name)
            if build_k is not None and not (tk is int and not _MIN <= k <= _MAX):
                fast = build_k(args[0], k, slow)
        elif name == "=" and (tk is int or tk is str or tk is Keyword):
            fast = _eq_k(args[0], k, slow)
        if fast is not None:
            return fast
        build2 = _BINARY.get(name)
        if build2 is not None:
            return build2(args[0], args[1], slow)
    if len(args) == 1:
        build1 = _UNARY.get(name)
        if build1 is not None:
            return build1(args[0], slow)
    return None
