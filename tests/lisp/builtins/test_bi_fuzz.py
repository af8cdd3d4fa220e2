"""Every builtin, called with every combination of odd arguments, either returns or raises a
LispError: never a bare Python exception that would reach the model as a traceback."""

from __future__ import annotations

import itertools
import math

import pytest

from ptcflow.lisp.builtins import BUILTINS, compile_regex
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.limits import Budget, Limits
from ptcflow.lisp.values import Keyword

from ..helpers import L

POOL: tuple[object, ...] = (
    None,
    True,
    0,
    1,
    -1,
    2.5,
    math.nan,
    1e300,
    -0.0,
    "ab",
    "",
    Keyword("a"),
    (),
    (1, 2),
    ((Keyword("a"), 1),),
    {Keyword("a"): 1},
    {},
    frozenset({1}),
    BUILTINS["inc"],
    BUILTINS["+"],
    BUILTINS["<"],
    compile_regex("a"),
    ("x", "y"),
    {(1, 2): {}},  # a program map with a vector key
)
POOL = (*(L(x) for x in POOL), {Keyword("a"): 1})  # and a host map
SMALL_POOL = (None, 1, 2.5, "ab", Keyword("a"), L((1, 2)), {Keyword("a"): 1}, BUILTINS["inc"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_raises_only_lisp_errors(name: str) -> None:
    b = BUILTINS[name]
    fn = b.bind(Budget(Limits(max_memory_bytes=10**12)))
    top = b.max_arity if b.max_arity is not None else b.min_arity + 2
    for n in range(b.min_arity, min(top, 3) + 1):
        pool = POOL if n <= 2 else SMALL_POOL
        for args in itertools.product(pool, repeat=n):
            try:
                fn(*args)
            except LispError:
                pass
            except Exception as exc:  # pragma: no cover - the failure message
                pytest.fail(f"({name} {args!r}) raised {type(exc).__name__}: {exc}")
