"""Output: println, print, prn (captured in the run's budget, never printed), pr-str.

Captured output is capped at ``max_output_chars``: a value is printed only as far as the room
left, so printing a huge value costs no more than the cap (the rest is dropped, with a
marker). ``pr-str`` builds a string: past ``max_string_length`` it is a ``limit`` error.
"""

from __future__ import annotations

from typing import Any

from ptcflow.lisp.builtins._registry import Registry
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.printer import render

REGISTRY = Registry("output", "Output")
add = REGISTRY.add


def _capture(budget: Budget, xs: tuple[Any, ...], mode: str, end: str) -> None:
    if budget.output_truncated:
        return  # the output is full: printing more would only be dropped
    room = budget.limits.max_output_chars - budget.output_chars
    # One character past the room, so print_ sees the overflow and adds its marker.
    budget.print_(render(xs, budget, what=None, mode=mode, sep=" ", limit=room + 1) + end)


@add(
    "println",
    "(println & xs)",
    "Captures the values as text (strings unquoted), separated by spaces, plus a newline; "
    "returns nil.",
    needs_budget=True,
)
def println(budget: Budget, *xs: Any) -> None:
    _capture(budget, xs, "print", "\n")


@add(
    "print",
    "(print & xs)",
    "Captures the values as text, separated by spaces; returns nil.",
    needs_budget=True,
)
def print_(budget: Budget, *xs: Any) -> None:
    _capture(budget, xs, "print", "")


@add(
    "prn",
    "(prn & xs)",
    "Captures the values as data (strings quoted), plus a newline; returns nil.",
    needs_budget=True,
)
def prn(budget: Budget, *xs: Any) -> None:
    _capture(budget, xs, "pr", "\n")


@add(
    "pr-str",
    "(pr-str & xs)",
    "The values printed as data (strings quoted), separated by spaces.",
    needs_budget=True,
)
def pr_str_(budget: Budget, *xs: Any) -> str:
    return render(xs, budget, what="pr-str", mode="pr", sep=" ")
