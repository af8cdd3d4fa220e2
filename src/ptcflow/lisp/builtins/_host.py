"""The Java methods and static members models write, as ordinary builtins (a whitelist).

``(.indexOf s "x")``, ``(Math/sqrt 2)``, ``Double/NaN``: each name here is bound to a
builtin function or a constant; nothing reaches a Python attribute, and any other interop
name is still refused by the analyzer with the list of these.
"""

from __future__ import annotations

import math
from typing import Any, Final

from ptcflow.lisp.builtins._registry import Registry, integer, string

REGISTRY = Registry("host", "Java methods models write")
add = REGISTRY.add


@add(
    ".indexOf",
    "(.indexOf s sub) (.indexOf s sub from)",
    "The index of the first sub in s, or -1 (Java's String.indexOf).",
)
def index_of(s: Any, sub: Any, start: Any = 0) -> int:
    return string(".indexOf", s).find(string(".indexOf", sub), max(integer(".indexOf", start), 0))


@add(
    ".lastIndexOf",
    "(.lastIndexOf s sub)",
    "The index of the last sub in s, or -1 (Java's String.lastIndexOf).",
)
def last_index_of(s: Any, sub: Any) -> int:
    return string(".lastIndexOf", s).rfind(string(".lastIndexOf", sub))


HOST_ALIASES: Final[dict[str, str]] = {
    ".startsWith": "starts-with?",
    ".endsWith": "ends-with?",
    ".contains": "includes?",
    ".toLowerCase": "lower-case",
    ".toUpperCase": "upper-case",
    ".trim": "trim",
    ".substring": "subs",
    ".length": "count",
    ".isEmpty": "empty?",
    "Math/sqrt": "sqrt",
    "Math/pow": "pow",
    "Math/abs": "abs",
    "Math/floor": "floor",
    "Math/ceil": "ceil",
    "Math/round": "round",
    "Math/log": "log",
    "Math/log10": "log10",
    "Math/exp": "exp",
    "Math/max": "max",
    "Math/min": "min",
    "Integer/parseInt": "parse-int",
    "Long/parseLong": "parse-long",
    "Double/parseDouble": "parse-double",
    "String/valueOf": "str",
}
"""Java name -> the builtin it stands for."""

HOST_CONSTANTS: Final[dict[str, Any]] = {
    "Double/NaN": math.nan,
    "Double/POSITIVE_INFINITY": math.inf,
    "Double/NEGATIVE_INFINITY": -math.inf,
    "Double/MAX_VALUE": 1.7976931348623157e308,
    "Math/PI": math.pi,
    "Math/E": math.e,
    "Long/MAX_VALUE": 2**63 - 1,
    "Long/MIN_VALUE": -(2**63),
    "Integer/MAX_VALUE": 2**31 - 1,
    "Integer/MIN_VALUE": -(2**31),
}
"""Java constants models write, as values."""
