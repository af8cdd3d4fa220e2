"""Output: println, print, prn (captured in the run's budget, never printed), pr-str."""

from __future__ import annotations

from typing import Any

from ptcflow.lisp.builtins._registry import Registry
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.printer import pr_str, print_str

REGISTRY = Registry("output", "Output")
add = REGISTRY.add


def _text(x: Any) -> str:
    return "nil" if x is None else print_str(x)


@add(
    "println",
    "(println & xs)",
    "Captures the values as text (strings unquoted), separated by spaces, plus a newline; "
    "returns nil.",
    needs_budget=True,
)
def println(budget: Budget, *xs: Any) -> None:
    budget.print_(" ".join([_text(x) for x in xs]) + "\n")


@add(
    "print",
    "(print & xs)",
    "Captures the values as text, separated by spaces; returns nil.",
    needs_budget=True,
)
def print_(budget: Budget, *xs: Any) -> None:
    budget.print_(" ".join([_text(x) for x in xs]))


@add(
    "prn",
    "(prn & xs)",
    "Captures the values as data (strings quoted), plus a newline; returns nil.",
    needs_budget=True,
)
def prn(budget: Budget, *xs: Any) -> None:
    budget.print_(" ".join([pr_str(x) for x in xs]) + "\n")


@add(
    "pr-str",
    "(pr-str & xs)",
    "The values printed as data (strings quoted), separated by spaces.",
    needs_budget=True,
)
def pr_str_(budget: Budget, *xs: Any) -> str:
    limit = budget.limits.max_string_length
    text = " ".join([pr_str(x, limit=limit + 1) for x in xs])
    return budget.check_string(text, "pr-str")
