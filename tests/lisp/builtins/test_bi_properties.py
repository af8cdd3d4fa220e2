"""Property tests: equality is an equivalence, printing round-trips, sorting is stable."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from ptcflow.lisp import run_sync
from ptcflow.lisp._colls import vec
from ptcflow.lisp.builtins import BUILTINS
from ptcflow.lisp.limits import Budget, Limits
from ptcflow.lisp.printer import pr_str
from ptcflow.lisp.values import Keyword, eq_key, from_python, lisp_eq, to_python

from ..helpers import L

keywords = st.sampled_from([Keyword(n) for n in ("a", "b", "id", "user/name", "x-y?")])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8),
    keywords,
)
hashable = st.one_of(st.integers(-5, 5), st.text(max_size=3), keywords, st.booleans())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(hashable, inner, max_size=4),
        st.frozensets(st.integers(-50, 50), max_size=4),
        st.frozensets(st.text(max_size=3), max_size=4),
    ),
    max_leaves=12,
).map(L)
# Small pools make equal-but-distinct values likely, so transitivity is really exercised.
small = st.recursive(
    st.sampled_from([0, 1, 1.0, True, False, None, "a", Keyword("a")]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2).map(tuple),
        st.dictionaries(st.sampled_from([0, 1, "k"]), inner, max_size=2),
    ),
    max_leaves=4,
).map(L)


@given(values)
def test_lisp_eq_is_reflexive(x: Any) -> None:
    assert lisp_eq(x, x)
    assert eq_key(x) == eq_key(x)


json_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(json_data)
def test_python_data_round_trips(j: Any) -> None:
    assert to_python(from_python(j)) == j


@given(small, small, small)
def test_lisp_eq_is_symmetric_and_transitive(a: Any, b: Any, c: Any) -> None:
    assert lisp_eq(a, b) == lisp_eq(b, a)
    if lisp_eq(a, b) and lisp_eq(b, c):
        assert lisp_eq(a, c)
    assert lisp_eq(a, b) == (eq_key(a) == eq_key(b))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_printed_values_read_back_equal(x: Any) -> None:
    text = pr_str(x)
    result = run_sync(f"[(pr-str {text}) (= {text} {text})]")
    assert result.error is None, (text, result.error)
    again, self_equal = result.value
    assert again == text
    assert self_equal is True


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers()), max_size=30))
def test_sort_by_is_stable(pairs: list[tuple[int, int]]) -> None:
    rows = vec({Keyword("k"): k, Keyword("i"): i} for i, (k, _) in enumerate(pairs))
    sort_by = BUILTINS["sort-by"].bind(Budget(Limits()))
    k = Keyword("k")
    assert sort_by(k, rows) == vec(sorted(rows, key=lambda r: r[k]))
    assert sort_by(k, BUILTINS[">"], rows) == vec(sorted(rows, key=lambda r: r[k], reverse=True))
    by_lisp_comparator = sort_by(k, lambda a, b: a < b, rows)
    assert by_lisp_comparator == vec(sorted(rows, key=lambda r: r[k]))


@given(st.lists(st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)), max_size=30))
def test_sort_orders_numbers_like_python(xs: list[float]) -> None:
    out = BUILTINS["sort"].bind(Budget(Limits()))(vec(xs))
    # Python's sort is stable too, so equal ints and floats keep their relative order.
    assert [(type(x), x) for x in out] == [(type(x), x) for x in sorted(xs)]


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=20))
def test_sum_and_avg_agree_with_python(xs: list[float]) -> None:
    total = BUILTINS["sum"].fn(vec(xs))
    assert total == sum(xs)
    avg = BUILTINS["avg"].fn(vec(xs))
    assert avg is None if not xs else math.isclose(avg, sum(xs) / len(xs), abs_tol=1e-6)
