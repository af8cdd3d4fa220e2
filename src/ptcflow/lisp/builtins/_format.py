"""``format``: a safe subset of Java's format strings, interpreted here (never Python's).

Supported: ``%s %d %f %e %g %x %X %o %b %c %n %%`` with flags ``- + 0 , #`` and space, a width,
a precision (``%.2f``, ``%10.3s``) and explicit argument indexes (``%2$s``). Widths and
precisions are capped at 100 so a format string cannot build a huge string.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Final

from ptcflow.lisp.builtins._registry import Registry, string
from ptcflow.lisp.errors import LispError, type_error
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.printer import render
from ptcflow.lisp.values import truthy

REGISTRY = Registry("strings", "Strings")

_SPEC = re.compile(r"%(?:(\d+)\$)?([-#+ 0,]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])")
_CAP = 100


def _bad(conv: str, expected: str, x: Any) -> LispError:
    return type_error(f"format %{conv}", expected, x)


def _one(
    conv: str, flags: str, width: str | None, prec: str | None, x: Any, budget: Budget, room: int
) -> str:
    w = int(width) if width and len(width) < 4 else (_CAP + 1 if width else 0)
    if w > _CAP or (prec is not None and (len(prec) > 3 or int(prec) > _CAP)):
        raise LispError("limit", f"format: widths and precisions above {_CAP} are not allowed")
    if conv == "s" or conv == "S":
        if x is None:
            text = "nil"
        else:  # printed under the budget, refused before it outgrows the string limit
            limit = room if prec is None else min(room, int(prec))
            text = render((x,), budget, what=None if prec is not None else "format", limit=limit)
        if prec is not None:
            text = text[: int(prec)]
        text = text.ljust(w) if "-" in flags else text.rjust(w)
        return text.upper() if conv == "S" else text
    if conv == "b" or conv == "B":
        text = "true" if truthy(x) else "false"
        return text.ljust(w) if "-" in flags else text.rjust(w)
    if conv == "c":
        if type(x) is not str or len(x) != 1:
            raise _bad(conv, "a one-character string", x)
        return x.ljust(w) if "-" in flags else x.rjust(w)
    if conv in "dxXo":
        if type(x) is not int:
            raise _bad(conv, "an integer (use %.0f for floats, or (int x))", x)
        if prec is not None:
            raise LispError("type", f"format: %{conv} takes no precision")
    elif conv in "feEgG":
        if type(x) is not int and type(x) is not float:
            raise _bad(conv, "a number", x)
        x = float(x)
        if not math.isfinite(x):  # Java spells these out
            text = "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
            return text.ljust(w) if "-" in flags else text.rjust(w)
    else:
        raise LispError(
            "type",
            f"format: unsupported conversion %{conv}; use %s %d %f %.2f %x %e %g %b %c %n %%",
        )
    align = "<" if "-" in flags else ""
    sign = "+" if "+" in flags else (" " if " " in flags else "")
    zero = "0" if "0" in flags and not align else ""
    alt = "#" if "#" in flags else ""
    group = "," if "," in flags and conv in "dfeEgG" else ""
    precision = f".{prec}" if prec is not None else (".6" if conv in "feE" else "")
    spec = f"{align}{sign}{alt}{zero}{w or ''}{group}{precision}{conv}"
    if conv == "f":
        # Java rounds the shortest decimal form half up: (format "%.2f" 2.675) is "2.68"
        return format(half_up(x, int(prec) if prec is not None else 6), spec)
    return format(x, spec)


def half_up(x: float, digits: int) -> Decimal:
    """``x`` rounded half up at ``digits`` decimals, from its shortest decimal form."""
    return Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), context=_WIDE)


_WIDE: Final = Context(prec=500, rounding=ROUND_HALF_UP)  # 1e308 with 100 decimals fits


def _literal(chunk: str) -> str:
    if "%" in chunk:
        raise LispError("type", f"format: a stray % in {chunk!r}; write %% for a percent sign")
    return chunk


@REGISTRY.add(
    "format",
    "(format fmt & args)",
    "Text with %s %d %f %.2f %x %% ... directives filled from args (Java style).",
    needs_budget=True,
)
def format_(budget: Budget, fmt: Any, *args: Any) -> str:
    text = string("format", fmt)
    out: list[str] = []
    pos = 0
    next_arg = 0
    cap = budget.limits.max_string_length
    size = 0
    for m in _SPEC.finditer(text):
        out.append(_literal(text[pos : m.start()]))
        pos = m.end()
        index, flags, width, prec, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if conv == "n":
            out.append("\n")
            continue
        if index is not None:
            i = int(index) - 1
        else:
            i = next_arg
            next_arg += 1
        if not 0 <= i < len(args):
            raise LispError(
                "type",
                f"format: the format string needs more arguments than the {len(args)} given "
                f"(directive {m.group(0)!r})",
            )
        size += len(out[-1])
        piece = _one(conv, flags, width, prec, args[i], budget, max(cap - size, 0))
        out.append(piece)
        size += len(piece)
        if size > cap:  # checked as it grows: the text is built once, at the end
            budget.check_string_length(size, "format")
    out.append(_literal(text[pos:]))
    return budget.check_string("".join(out), "format")
