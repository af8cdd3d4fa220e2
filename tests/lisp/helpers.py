"""Shared helpers for the PTC-Lisp tests."""

from __future__ import annotations

from typing import Any

from ptcflow.lisp import Keyword, LispResult, run_sync


def K(name: str) -> Keyword:
    """A keyword (short name for tables)."""
    return Keyword(name)


def ev(source: str, **kwargs: Any) -> Any:
    """Run ``source`` and return its value; fail the test on a program error."""
    result = run_sync(source, **kwargs)
    assert result.error is None, str(result.error)
    return result.value


def err(source: str, **kwargs: Any) -> Any:
    """Run ``source`` and return its error (the test fails when there is none)."""
    result: LispResult = run_sync(source, **kwargs)
    assert result.error is not None, f"expected an error, got {result.value!r}"
    return result.error
