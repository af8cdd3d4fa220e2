"""Compiling calls: static heads (builtins, keywords), inlined fast paths, dynamic heads.

Every call attaches its source position to a :class:`LispError` passing through, and turns
the Python exceptions a builtin may leak into typed errors (:func:`convert_exception`), so no
Python traceback reaches the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ptcflow.lisp import _ast as A
from ptcflow.lisp._colls import Map, host_get
from ptcflow.lisp._intrinsics import NAMES as INTRINSICS, NO_CONST, intrinsic
from ptcflow.lisp.errors import LimitExceeded, LispError, arity_error
from ptcflow.lisp.values import Builtin, Keyword, to_fn

__all__ = ("compile_call", "convert_exception")

Ev = Callable[[list[Any]], Any]


def convert_exception(exc: BaseException, f: Any, nargs: int) -> LispError:
    """Turn a Python exception escaping a call into a typed :class:`LispError`."""
    name = getattr(f, "name", None) or "this function"
    if isinstance(exc, LispError):
        return exc
    if isinstance(exc, RecursionError):
        return LimitExceeded(
            "max_depth", "the program nests calls too deeply; use loop/recur or reduce"
        )
    if isinstance(exc, ZeroDivisionError):
        return LispError("arithmetic", f"{name}: division by zero; check the divisor first")
    if isinstance(exc, OverflowError):
        return LispError("arithmetic", f"{name}: number too large ({exc})")
    if isinstance(exc, MemoryError):
        return LimitExceeded("max_memory_bytes", f"{name} ran out of memory; use less data")
    if isinstance(exc, TypeError) and isinstance(f, Builtin) and not f.accepts(nargs):
        return arity_error(f.name, nargs, f.signature)
    return LispError("type", f"{name} failed: {exc}")


def _not_callable(f: Any) -> Callable[..., Any]:
    if callable(f):
        return f  # type: ignore[no-any-return]
    return to_fn(f, "calling a value")


def compile_call(node: A.Call, args: list[Ev], static: Any, fn: Ev | None) -> Ev:
    """Compile a call: ``static`` is the head's value when known at compile time (a builtin,
    bound to the run, or a constant), else ``fn`` evaluates the head."""
    line, col = node.line, node.column
    n = len(args)
    head = node.fn
    if fn is None:
        label: Any = head.builtin if isinstance(head, A.BuiltinRef) else static
        if type(static) is Keyword and n == 1:
            return _keyword_lookup(static, args[0])
        f = getattr(static, "fn", static) if isinstance(static, Builtin) else static
        if isinstance(head, A.BuiltinRef) and head.builtin.name in INTRINSICS:
            consts = [a.value if type(a) is A.Const else NO_CONST for a in node.args]
            slow = _slow_call(f, label, n, line, col)
            fast = intrinsic(head.builtin.name, args, slow, consts)
            if fast is not None:
                return fast
        return _static_call(f, label, args, line, col)
    return _dynamic_call(fn, args, line, col)


def _dynamic_call(fn: Ev, args: list[Ev], line: int, col: int) -> Ev:
    n = len(args)

    def to_callable(f: Any) -> Callable[..., Any]:
        try:
            return _not_callable(f)
        except LispError as e:
            raise e.with_position(line, col) from None

    if n == 1:
        a0 = args[0]

        def dynamic1(frame: list[Any]) -> Any:
            f = fn(frame)
            x = a0(frame)
            if not callable(f):
                f = to_callable(f)
            try:
                return f(x)
            except LispError as e:
                raise e.with_position(line, col) from None
            except Exception as e:
                raise convert_exception(e, f, n).with_position(line, col) from None

        return dynamic1

    def dynamic(frame: list[Any]) -> Any:
        f = fn(frame)
        vals = [a(frame) for a in args]
        if not callable(f):
            f = to_callable(f)
        try:
            return f(*vals)
        except LispError as e:
            raise e.with_position(line, col) from None
        except Exception as e:
            raise convert_exception(e, f, n).with_position(line, col) from None

    return dynamic


def _keyword_lookup(kw: Keyword, a0: Ev) -> Ev:
    """``(:k m)``: an inline map lookup (sets and other values go through the keyword)."""

    def lookup(frame: list[Any]) -> Any:
        m = a0(frame)
        t = type(m)
        if t is dict:  # host data: a miss tries the other spellings of the key
            v = m.get(kw)
            return v if v is not None else host_get(m, kw)
        if t is Map:
            return m.get(kw)
        return kw(m)

    # Lets an inline comparison fuse the lookup into its own closure: (> (:amount o) 100).
    lookup.keyword_lookup = (kw, a0)  # type: ignore[attr-defined]
    return lookup


def _slow_call(f: Any, label: Any, n: int, line: int, col: int) -> Callable[..., Any]:
    def slow(*vals: Any) -> Any:
        try:
            return f(*vals)
        except LispError as e:
            raise e.with_position(line, col) from None
        except Exception as e:
            raise convert_exception(e, label, n).with_position(line, col) from None

    return slow


def _static_call(f: Any, label: Any, args: list[Ev], line: int, col: int) -> Ev:
    n = len(args)
    if n == 0:

        def call0(frame: list[Any]) -> Any:
            try:
                return f()
            except LispError as e:
                raise e.with_position(line, col) from None
            except Exception as e:
                raise convert_exception(e, label, n).with_position(line, col) from None

        return call0
    if n == 1:
        a0 = args[0]

        def call1(frame: list[Any]) -> Any:
            x = a0(frame)
            try:
                return f(x)
            except LispError as e:
                raise e.with_position(line, col) from None
            except Exception as e:
                raise convert_exception(e, label, n).with_position(line, col) from None

        return call1
    if n == 2:
        a0, a1 = args

        def call2(frame: list[Any]) -> Any:
            x, y = a0(frame), a1(frame)
            try:
                return f(x, y)
            except LispError as e:
                raise e.with_position(line, col) from None
            except Exception as e:
                raise convert_exception(e, label, n).with_position(line, col) from None

        return call2

    def calln(frame: list[Any]) -> Any:
        vals = [a(frame) for a in args]
        try:
            return f(*vals)
        except LispError as e:
            raise e.with_position(line, col) from None
        except Exception as e:
            raise convert_exception(e, label, n).with_position(line, col) from None

    return calln
