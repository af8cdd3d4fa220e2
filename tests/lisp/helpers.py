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


def L(x: Any) -> Any:
    """Python test data as a program value: tuples become vectors, dicts program maps,
    frozensets sets (nested)."""
    from ptcflow.lisp._colls import Map, make_set, mkey, vec

    if type(x) is tuple:
        return vec([L(v) for v in x])
    if type(x) is dict:
        return Map({mkey(L(k)): L(v) for k, v in x.items()})
    if type(x) is frozenset:
        return make_set([L(v) for v in x])
    return x
