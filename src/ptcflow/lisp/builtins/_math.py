"""Arithmetic and math: ``+ - * /`` and friends. Integers do not silently grow past 64 bits."""

from __future__ import annotations

import math
from typing import Any

from ptcflow.lisp.builtins._format import half_up
from ptcflow.lisp.builtins._registry import Registry, integer, num
from ptcflow.lisp.errors import LispError, type_error

REGISTRY = Registry("math", "Arithmetic and math")
add = REGISTRY.add

MAX_INT = _MAX = 2**63 - 1
MIN_INT = _MIN = -(2**63)


def _overflow(fn: str) -> LispError:
    return LispError(
        "arithmetic",
        f"integer overflow in {fn} (results must fit in 64 bits); use (double x) for very "
        "large numbers",
    )


def _fit(fn: str, r: Any) -> Any:
    if type(r) is int and not _MIN <= r <= _MAX:
        raise _overflow(fn)
    return r


@add("+", "(+ & xs)", "Sum of the numbers; (+) is 0.")
def plus(*xs: Any) -> Any:
    if len(xs) == 2:
        a, b = xs
        ta, tb = type(a), type(b)
        if (ta is int or ta is float) and (tb is int or tb is float):
            r = a + b
            if ta is int and tb is int and not _MIN <= r <= _MAX:
                raise _overflow("+")
            return r
    if len(xs) == 1 and xs[0] is None:
        return None  # Clojure 1.11: (+ x) is (cast Number x), and nil casts
    total: Any = 0
    for x in xs:
        total += num("+", x)
    return _fit("+", total)


@add("-", "(- x) (- x & ys)", "Negation of x, or x minus each of ys.")
def minus(x: Any, *ys: Any) -> Any:
    num("-", x)
    if not ys:
        return _fit("-", -x)
    for y in ys:
        x = x - num("-", y)
    return _fit("-", x)


@add("*", "(* & xs)", "Product of the numbers; (*) is 1.")
def times(*xs: Any) -> Any:
    if len(xs) == 1 and xs[0] is None:
        return None  # as (+ nil)
    total: Any = 1
    for x in xs:
        total *= num("*", x)
        if type(total) is int and not _MIN <= total <= _MAX:
            raise _overflow("*")
    return total


def _zero_div(fn: str) -> LispError:
    return LispError("arithmetic", f"{fn}: division by zero; check the divisor first")


@add(
    "/",
    "(/ x) (/ x & ys)",
    "Division, always a float; (/ x) is 1/x; dividing by 0 or 0.0 is an error.",
)
def divide(x: Any, *ys: Any) -> float:
    num("/", x)
    if not ys:
        if x == 0:
            raise _zero_div("/")
        return 1 / float(x)
    r = float(x)
    for y in ys:
        if num("/", y) == 0:
            raise _zero_div("/")
        r = r / y
    return r


def _two_ints(fn: str, a: Any, b: Any) -> None:
    num(fn, a)
    if num(fn, b) == 0:
        raise _zero_div(fn)


@add("quot", "(quot n d)", "Quotient of n / d rounded toward zero.")
def quot(n: Any, d: Any) -> Any:
    _two_ints("quot", n, d)
    if type(n) is int and type(d) is int:
        q = abs(n) // abs(d)
        return _fit("quot", q if (n >= 0) == (d >= 0) else -q)
    q = n / d
    if not math.isfinite(q):
        raise LispError("arithmetic", f"quot of {n} and {d} is not a finite number")
    return float(math.trunc(q))


@add("rem", "(rem n d)", "Remainder of n / d with the sign of n.")
def rem(n: Any, d: Any) -> Any:
    _two_ints("rem", n, d)
    if type(n) is int and type(d) is int:
        r = abs(n) % abs(d)  # never overflows: (rem Long/MIN_VALUE -1) is 0
        return r if n >= 0 else -r
    return math.fmod(n, d)


@add("mod", "(mod n d)", "Modulus of n and d with the sign of d.")
def mod(n: Any, d: Any) -> Any:
    _two_ints("mod", n, d)
    return n % d


@add("inc", "(inc x)", "x plus one.")
def inc(x: Any) -> Any:
    t = type(x)
    if t is int:
        if x == _MAX:
            raise _overflow("inc")
        return x + 1
    if t is float:
        return x + 1
    raise type_error("inc", "a number", x)


@add("dec", "(dec x)", "x minus one.")
def dec(x: Any) -> Any:
    t = type(x)
    if t is int:
        if x == _MIN:
            raise _overflow("dec")
        return x - 1
    if t is float:
        return x - 1
    raise type_error("dec", "a number", x)


@add("abs", "(abs x)", "Absolute value of x.")
def abs_(x: Any) -> Any:
    return _fit("abs", abs(num("abs", x)))


@add("max", "(max x & ys)", "The largest of the numbers.")
def max_(x: Any, *ys: Any) -> Any:
    best = num("max", x)
    for y in ys:
        if num("max", y) > best or (y != y):
            best = y
    return best


@add("min", "(min x & ys)", "The smallest of the numbers.")
def min_(x: Any, *ys: Any) -> Any:
    best = num("min", x)
    for y in ys:
        if num("min", y) < best or (y != y):
            best = y
    return best


def _finite(fn: str, x: Any) -> int | float:
    n = num(fn, x)
    if type(n) is float and not math.isfinite(n):
        raise LispError("arithmetic", f"{fn} cannot round {n} to an integer")
    return n


@add(
    "floor",
    "(floor x)",
    "The largest integer <= x (an integer, not a float).",
    aliases=("clojure.math/floor",),
)
def floor(x: Any) -> int:
    return _fit("floor", math.floor(_finite("floor", x)))  # type: ignore[no-any-return]


@add(
    "ceil",
    "(ceil x)",
    "The smallest integer >= x (an integer, not a float).",
    aliases=("clojure.math/ceil",),
)
def ceil(x: Any) -> int:
    return _fit("ceil", math.ceil(_finite("ceil", x)))  # type: ignore[no-any-return]


@add(
    "round",
    "(round x) (round x digits)",
    "x rounded half up to an integer, or to a float with `digits` decimals.",
    aliases=("clojure.math/round",),
)
def round_(x: Any, digits: Any = None) -> Any:
    _finite("round", x)
    if digits is None:
        return _fit("round", math.floor(x + 0.5)) if type(x) is float else x
    d = integer("round", digits, "an integer number of digits")
    if not -20 <= d <= 20:
        raise LispError("type", f"round: digits must be between -20 and 20, got {d}")
    return float(half_up(float(x), d))


@add(
    "sqrt",
    "(sqrt x)",
    "Square root of x as a float.",
    aliases=("clojure.math/sqrt",),
)
def sqrt(x: Any) -> float:
    if num("sqrt", x) < 0:
        raise LispError("arithmetic", f"sqrt of a negative number ({x}); use (abs x) first")
    return math.sqrt(x)


@add(
    "pow",
    "(pow x y)",
    "x to the power y as a float (##Inf when too large).",
    aliases=("clojure.math/pow",),
)
def pow_(x: Any, y: Any) -> float:
    num("pow", x)
    num("pow", y)
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


@add("log", "(log x)", "Natural logarithm of x.", aliases=("clojure.math/log",))
def log(x: Any) -> float:
    if num("log", x) <= 0:
        raise LispError("arithmetic", f"log of a number <= 0 ({x}); check the input first")
    return math.log(x)


@add(
    "log10",
    "(log10 x)",
    "Base-10 logarithm of x.",
    aliases=("clojure.math/log10",),
)
def log10(x: Any) -> float:
    if num("log10", x) <= 0:
        raise LispError("arithmetic", f"log10 of a number <= 0 ({x}); check the input first")
    return math.log10(x)


@add(
    "exp",
    "(exp x)",
    "e to the power x (##Inf when too large).",
    aliases=("clojure.math/exp",),
)
def exp(x: Any) -> float:
    try:
        return math.exp(num("exp", x))
    except OverflowError:
        return math.inf


@add("int", "(int x)", "x truncated toward zero to an integer.", aliases=("long",))
def int_(x: Any) -> int:
    t = type(x)
    if t is int:
        return x  # type: ignore[no-any-return]
    if t is float:
        if not math.isfinite(x):
            raise LispError("arithmetic", f"int cannot convert {x} to an integer")
        return _fit("int", int(x))  # type: ignore[no-any-return]
    if t is str:
        raise type_error("int", "a number (use parse-long for strings)", x)
    raise type_error("int", "a number", x)


@add("double", "(double x)", "x as a float.", aliases=("float",))
def double(x: Any) -> float:
    if type(x) is str:
        raise type_error("double", "a number (use parse-double for strings)", x)
    return float(num("double", x))
