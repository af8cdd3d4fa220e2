"""values.py, errors.py, limits.py and printer.py as plain Python."""

from __future__ import annotations

import copy
import math
import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import ConfigError, ProgramError
from ptcflow.lisp.builtins import compile_regex
from ptcflow.lisp.errors import CATEGORIES, LimitExceeded, LispError, arity_error, type_error
from ptcflow.lisp.limits import Budget, Limits
from ptcflow.lisp.printer import pr_str, str_of, type_name
from ptcflow.lisp.values import (
    Builtin,
    Keyword,
    LispFn,
    check_plain,
    eq_key,
    from_python,
    iter_of,
    lisp_eq,
    to_fn,
    to_python,
    truthy,
)

K = Keyword

from ptcflow.lisp._colls import make_set, mkey, vec  # noqa: E402

from ..helpers import L  # noqa: E402


def test_keywords_are_interned_immutable_and_callable() -> None:
    assert K("a") is K("a")
    assert K("a") is not K("b")
    assert str(K("user/id")) == ":user/id" and K("user/id").name == "user/id"
    assert repr(K("a")) == "Keyword('a')"
    with pytest.raises(AttributeError):
        K("a").name = "b"
    with pytest.raises(AttributeError):
        del K("a").name
    assert pickle.loads(pickle.dumps(K("a"))) is K("a")
    assert copy.deepcopy(K("a")) is K("a") and copy.copy(K("a")) is K("a")
    m = {K("a"): 1}
    assert K("a")(m) == 1 and K("b")(m) is None and K("b")(m, 0) == 0
    assert K("a")(frozenset({K("a")})) is K("a") and K("a")(None) is None and K("a")(5) is None
    assert sorted([K("b"), K("a")]) == [K("a"), K("b")]
    with pytest.raises(TypeError):
        K(1)  # type: ignore[arg-type]


def test_keywords_made_at_runtime_do_not_accumulate() -> None:
    import gc

    from ptcflow.lisp import values

    before = len(values._KEYWORDS)
    made = [K(f"tmp-{i}") for i in range(500)]
    assert len(values._KEYWORDS) == before + 500
    assert K("tmp-7") is made[7]
    del made
    gc.collect()
    assert len(values._KEYWORDS) == before


def test_regex_values() -> None:
    r = compile_regex(r"\d+")
    assert r.source == r"\d+" and r == compile_regex(r"\d+") and r != r"\d+"
    assert hash(r) == hash(compile_regex(r"\d+"))
    assert repr(r) == "Regex('\\\\d+')"


def test_lisp_fn_base() -> None:
    class Double(LispFn):
        __slots__ = ()

        def __call__(self, *args: object) -> object:
            return 2 * args[0]  # type: ignore[operator]

    f = Double("double", 1, 1)
    assert f(3) == 6 and repr(f) == "<fn double>" and pr_str(f) == "#<fn double>"
    assert repr(Double(None, 0, None)) == "<fn anonymous>"
    with pytest.raises(NotImplementedError):
        LispFn("x", 0, 0)()


EQUAL = [
    (1, 1),
    ((1, (2, 3)), (1, (2, 3))),
    ({K("a"): (1,)}, {K("a"): (1,)}),
    (frozenset({1, 2}), frozenset({2, 1})),
    ({1: K("x")}, {1: K("x")}),
    (None, None),
    ("a", "a"),
    (math.inf, math.inf),
]
UNEQUAL = [
    (1, 1.0),
    (1, True),
    (0, False),
    (None, False),
    ((1,), (1.0,)),
    ((1, 2), (1, 2, 3)),
    ({K("a"): 1}, {K("a"): 1.0}),
    ({K("a"): 1}, {K("b"): 1}),
    ({1: K("a")}, {1.0: K("a")}),
    ({True: 1}, {1: 1}),
    (frozenset({1}), frozenset({1.0})),
    (frozenset({(1,)}), frozenset({(True,)})),
    ("a", K("a")),
    (math.nan, math.nan),
    ((1,), frozenset({1})),
]


@pytest.mark.parametrize(("a", "b"), EQUAL)
def test_lisp_eq_equal(a: object, b: object) -> None:
    a, b = L(a), L(b)
    assert lisp_eq(a, b) and lisp_eq(b, a)
    assert eq_key(a) == eq_key(b)


@pytest.mark.parametrize(("a", "b"), UNEQUAL)
def test_lisp_eq_unequal(a: object, b: object) -> None:
    a, b = L(a), L(b)
    assert not lisp_eq(a, b) and not lisp_eq(b, a)


def test_nan_is_not_equal_to_itself() -> None:
    x = math.nan
    assert not lisp_eq(x, x)


def test_truthy() -> None:
    assert [truthy(x) for x in (None, False, 0, "", (), True)] == [
        False,
        False,
        True,
        True,
        True,
        True,
    ]


def test_to_fn() -> None:
    assert to_fn(len) is len
    assert to_fn(L({K("a"): 1}))(K("a")) == 1
    assert to_fn({K("a"): 1})(K("b"), 7) == 7
    assert to_fn(L(frozenset({1})))(1) == 1 and to_fn(L(frozenset({1})))(2) is None
    assert to_fn(L((5, 6)))(1) == 6 and to_fn(L((5, 6)))(9, "d") == "d"
    with pytest.raises(LispError, match="out of bounds"):
        to_fn(L((5, 6)))(9)
    with pytest.raises(LispError, match="an integer index"):
        to_fn(L((5, 6)))("0")
    with pytest.raises(LispError, match=r'map expects a function .*got string "x"'):
        to_fn("x", "map")


def test_python_boundary() -> None:
    value = from_python({"a": [1, {"b": None}], "s": {1, 2}, 3: (True, 1.5)})
    assert lisp_eq(
        value, {K("a"): L((1, {K("b"): None})), K("s"): frozenset({1, 2}), 3: L((True, 1.5))}
    )
    assert from_python({"a": 1}, keywordize_keys=False) == {"a": 1}
    assert to_python(value) == {"a": [1, {"b": None}], "s": [1, 2], 3: [True, 1.5]}
    assert to_python(L((K("x"),))) == ["x"]
    assert to_python(L((K("x"),)), keep_keywords=True) == [K("x")]
    assert to_python(L({(1, K("a")): 1})) == {"[1 :a]": 1}
    assert to_python(compile_regex("a+")) == "a+"
    assert to_python(frozenset({1, "a"})) in ([1, "a"], ["a", 1])
    with pytest.raises(LispError, match="function"):
        to_python(L((len,)))
    with pytest.raises(LispError):
        to_python(object())
    with pytest.raises(TypeError, match="cannot pass a object"):
        from_python(object())

    class Color(str):
        pass

    assert from_python([Color("red")]) == L(("red",))
    assert list(iter_of({K("a"): 1})) == [L((K("a"), 1))] and list(iter_of(None)) == []
    with pytest.raises(LispError):
        iter_of(5)


def test_builtin_objects() -> None:
    b = Builtin(
        "twice",
        lambda x: 2 * x,
        min_arity=1,
        max_arity=1,
        doc="Twice x.",
        signature="(twice x)",
        category="math",
    )
    assert b(2) == 4 and repr(b) == "<builtin twice>" and pr_str(b) == "#<fn twice>"
    assert b.accepts(1) and not b.accepts(2)


def test_errors() -> None:
    err = LispError("type", "bad")
    assert isinstance(err, ProgramError)
    assert (err.line, err.column) == (None, None)
    assert str(err) == "type error: bad"
    assert err.with_position(2, 5) is err and str(err) == "type error at line 2, column 5: bad"
    err.with_position(9, 9)
    assert (err.line, err.column) == (2, 5), "the innermost (first) position wins"
    assert repr(err) == "LispError('type', 'bad', line=2, column=5)"
    again = pickle.loads(pickle.dumps(err))
    assert (again.category, again.message, again.line) == ("type", "bad", 2)
    with pytest.raises(ValueError, match="unknown LispError category"):
        LispError("nope", "x")
    lim = LimitExceeded("max_steps", "too many")
    assert lim.category == "limit" and lim.limit == "max_steps"
    assert pickle.loads(pickle.dumps(lim)).limit == "max_steps"
    assert "timeout" in CATEGORIES and len(CATEGORIES) == 11
    assert type_error("+", "numbers", "a").message == '+ expects numbers, got string "a"'
    assert type_error("f", "x", None).message == "f expects x, got nil"
    long_message = type_error("f", "x", "y" * 100).message
    assert long_message.endswith("...") and len(long_message) < 100
    assert arity_error("get", 1, "2 or 3").message == "get called with 1 argument, expects 2 or 3"
    assert "2 arguments" in arity_error("inc", 2, "1").message


def test_limits_validate_and_repr() -> None:
    assert Limits().max_steps == 1_000_000 and Limits().timeout_ms == 5000
    assert repr(Limits()).startswith("Limits(timeout_ms=5000, max_steps=1000000, ")
    assert "max_steps=10," in repr(Limits(max_steps=10))
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="max_depth must be a positive integer"):
            Limits(max_depth=bad)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        Limits().max_steps = 5  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(Limits(max_steps=7)), type=Limits) == Limits(
        max_steps=7
    )


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_budget_steps_and_timeout() -> None:
    clock = FakeClock()
    budget = Budget(Limits(max_steps=5000, timeout_ms=1000, yield_interval_ms=10), clock=clock)
    yields: list[int] = []
    budget.maybe_yield = lambda: yields.append(budget.steps)
    budget.step(1000)
    assert budget.steps == 1000 and not yields
    clock.now += 0.02
    budget.step(100)
    assert yields == [1100]
    clock.now += 2
    with pytest.raises(LispError) as exc:
        budget.step(2000)
    assert exc.value.category == "timeout" and "1000 ms" in exc.value.message


def test_budget_yields_at_the_first_clock_check() -> None:
    clock = FakeClock()
    budget = Budget(Limits(), clock=clock)
    yields: list[int] = []
    budget.maybe_yield = lambda: yields.append(budget.steps)
    budget.step(1023)
    assert yields == []
    budget.step()
    assert yields == [1024], "a long program yields once at once, even on a frozen clock"
    budget.step(1024)
    assert yields == [1024], "then only when yield_interval_ms has passed"


def test_budget_step_limit_is_exact() -> None:
    budget = Budget(Limits(max_steps=10))
    for _ in range(10):
        budget.step()
    with pytest.raises(LimitExceeded) as exc:
        budget.step()
    assert exc.value.limit == "max_steps" and "10 evaluation steps" in exc.value.message


def test_budget_sizes_strings_and_output() -> None:
    budget = Budget(Limits(max_collection_size=5, max_string_length=3, max_output_chars=4))
    budget.check_size(5, "x")
    with pytest.raises(LimitExceeded, match="x would build 6 elements") as exc:
        budget.check_size(6, "x")
    assert exc.value.limit == "max_collection_size"
    assert budget.check_string("abc") == "abc"
    with pytest.raises(LimitExceeded) as exc2:
        budget.check_string("abcd", "str")
    assert exc2.value.limit == "max_string_length"
    budget.print_("ab")
    budget.print_("cdef")
    budget.print_("more")
    assert budget.output == "abcd...[output truncated]" and budget.output_truncated
    assert "Budget(steps=5" in repr(budget)  # the 5 elements check_size counted


def test_budget_memory_estimate() -> None:
    budget = Budget(Limits(max_memory_bytes=1000))
    budget.charge(900)
    with pytest.raises(LimitExceeded) as exc:
        budget.check_size(10, "range")
    assert exc.value.limit == "max_memory_bytes"
    assert budget.allocated > 1000


PRINTED = [
    (None, "nil"),
    (True, "true"),
    (False, "false"),
    (1, "1"),
    (-2.5, "-2.5"),
    (1e100, "1e+100"),
    (math.inf, "##Inf"),
    (-math.inf, "##-Inf"),
    (math.nan, "##NaN"),
    ('a"b\\c\nd\te', '"a\\"b\\\\c\\nd\\te"'),
    ("", '""'),
    (K("k"), ":k"),
    (K("ns/k"), ":ns/k"),
    ((), "[]"),
    ((1, (2, "x")), '[1 [2 "x"]]'),
    ({}, "{}"),
    ({K("a"): 1, K("b"): (1, 2)}, "{:a 1, :b [1 2]}"),
    (frozenset(), "#{}"),
    (frozenset({3, 1, 2}), "#{1 2 3}"),
    (frozenset({1, "a", K("b"), (1,), None}), '#{:b nil [1] 1 "a"}'),
    (compile_regex('a"b'), '#"a\\"b"'),
    (len, "#<fn>"),
    (object(), "#<object>"),
]


@pytest.mark.parametrize(("value", "text"), PRINTED)
def test_pr_str(value: object, text: str) -> None:
    assert pr_str(L(value)) == text


def test_pr_str_limit() -> None:
    big = L(tuple(range(10_000)))
    out = pr_str(big, limit=20)
    assert out == "[0 1 2 3 4 5 6 7 ..." and len(out) == 20
    assert pr_str("abc", limit=10) == '"abc"'
    assert pr_str("abcdef", limit=2) == ".."


def test_str_of_and_type_name() -> None:
    assert [str_of(x) for x in (None, "s", 1, 1.5, K("a"), L((1, "s")))] == [
        "",
        "s",
        "1",
        "1.5",
        ":a",
        '[1 "s"]',
    ]
    assert str_of(compile_regex("x+")) == "x+"
    samples: tuple[object, ...] = (1, 1.0, True, None, "s", K("a"), L(()), {}, frozenset())
    assert [type_name(x) for x in samples] == [
        "integer",
        "float",
        "boolean",
        "nil",
        "string",
        "keyword",
        "vector",
        "map",
        "set",
    ]
    assert type_name(len) == "function" and type_name(object()) == "object"


# -- from_python against a plain recursive reference, and check_plain agreeing with it --

_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)
)
_KEYS = st.one_of(st.text(max_size=3), st.integers(), st.booleans())
_DATA = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_KEYS, inner, max_size=4),
        st.lists(st.dictionaries(st.text(max_size=2), inner, max_size=3), max_size=4),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=20,
)


def _reference(x: Any, keywordize: bool) -> Any:
    if isinstance(x, dict):
        return {
            (Keyword(k) if keywordize and type(k) is str else mkey(_reference(k, keywordize))): (
                _reference(v, keywordize)
            )
            for k, v in x.items()
        }
    if isinstance(x, list | tuple):
        return vec([_reference(v, keywordize) for v in x])
    if isinstance(x, set | frozenset):
        return make_set(_reference(v, keywordize) for v in x)
    return x


@settings(max_examples=200, deadline=None)
@given(data=_DATA, keywordize=st.booleans())
def test_from_python_matches_a_plain_recursive_conversion(data: Any, keywordize: bool) -> None:
    got = from_python(data, keywordize_keys=keywordize)
    want = _reference(data, keywordize)
    assert lisp_eq(got, want)
    assert repr(got) == repr(want)  # same container types (vectors, not lists) and key types
    check_plain(data)  # plain data passes the check


@pytest.mark.parametrize(
    "bad",
    [object(), [1, {"a": object()}], [{"a": 1}, {"b": [object()]}], {object(): 1}, {1, b"x"}],
)
def test_check_plain_refuses_what_from_python_refuses(bad: Any) -> None:
    with pytest.raises(TypeError) as from_error:
        from_python(bad)
    with pytest.raises(TypeError) as check_error:
        check_plain(bad)
    assert str(from_error.value) == str(check_error.value)
