"""The reader: literals, collections, dispatch, positions, errors, round trips."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.lisp import LispError, pr_str
from ptcflow.lisp._forms import ListForm, Lit, MapForm, SetForm, Sym, VecForm
from ptcflow.lisp._reader import MAX_NESTING, read, read_data, read_one
from ptcflow.lisp.values import Keyword, Regex, lisp_eq

from .helpers import K, L

DATA = [
    ("42", 42),
    ("-7", -7),
    ("+3", 3),
    ("0", 0),
    ("3.5", 3.5),
    ("-0.25", -0.25),
    ("1e3", 1000.0),
    ("2.5E-2", 0.025),
    ("1.", 1.0),
    ("0x1F", 31),
    ("-0xff", -255),
    ("42N", 42),
    ("1.5M", 1.5),
    ("##Inf", math.inf),
    ("##-Inf", -math.inf),
    ("nil", None),
    ("true", True),
    ("false", False),
    ('"hi"', "hi"),
    ('""', ""),
    ('"a\\nb"', "a\nb"),
    ('"tab\\there"', "tab\there"),
    ('"q\\"q"', 'q"q'),
    ('"back\\\\slash"', "back\\slash"),
    ('"\\u00e9t\\u00e9"', "été"),
    ('"multi\nline"', "multi\nline"),
    ("\\a", "a"),
    ("\\Z", "Z"),
    ("\\newline", "\n"),
    ("\\space", " "),
    ("\\tab", "\t"),
    ("\\u0041", "A"),
    ("\\(", "("),
    (":a", K("a")),
    (":user/id", K("user/id")),
    (":kebab-case?", K("kebab-case?")),
    ("[]", ()),
    ("[1 2 3]", (1, 2, 3)),
    ("[1, 2, 3]", (1, 2, 3)),
    ("[[1] [2 [3]]]", ((1,), (2, (3,)))),
    ("{}", {}),
    ("{:a 1 :b 2}", {K("a"): 1, K("b"): 2}),
    ("{:a 1, :b 2}", {K("a"): 1, K("b"): 2}),
    ('{"s" [1 {:x nil}]}', {"s": (1, {K("x"): None})}),
    ("#{}", frozenset()),
    ("#{1 2 3}", frozenset({1, 2, 3})),
    ("#{:a [1 2]}", frozenset({K("a"), (1, 2)})),
    ("[1 #_ 2 3]", (1, 3)),
    ("[1 #_ [2 3] 4]", (1, 4)),
    ("[1 #_ #_ 2 3 4]", (1, 4)),
    ("[1 ; comment\n 2]", (1, 2)),
    ("; leading comment\n[1]", (1,)),
    ("[\\a \\b]", ("a", "b")),
    ("[:a:b]", (K("a:b"),)),
]


@pytest.mark.parametrize(("source", "expected"), DATA)
def test_reads_data_literals(source: str, expected: Any) -> None:
    assert lisp_eq(read_data(source), L(expected))


def test_reads_nan() -> None:
    assert math.isnan(read_data("##NaN"))


SYMBOLS = [
    ("x", None, "x"),
    ("ctx/orders", "ctx", "orders"),
    ("memory/total", "memory", "total"),
    ("clojure.string/join", "clojure.string", "join"),
    ("/", None, "/"),
    ("even?", None, "even?"),
    ("->>", None, "->>"),
    ("a.b", None, "a.b"),
    ("%1", None, "%1"),
    ("<=", None, "<="),
    ("-", None, "-"),
    ("-x", None, "-x"),
    ("+", None, "+"),
]


@pytest.mark.parametrize(("source", "ns", "local"), SYMBOLS)
def test_reads_symbols_with_namespaces(source: str, ns: str | None, local: str) -> None:
    form = read_one(source)
    assert isinstance(form, Sym)
    assert (form.name, form.ns, form.local) == (source, ns, local)


def test_regex_literal_keeps_backslashes() -> None:
    form = read_one('#"\\d+\\.\\d*"')
    assert isinstance(form, Lit) and isinstance(form.value, Regex)
    assert form.value.source == "\\d+\\.\\d*"
    assert form.value.pattern.fullmatch("12.5")


def test_regex_literal_escaped_quote() -> None:
    form = read_one('#"a\\"b"')
    assert isinstance(form, Lit) and form.value.pattern.fullmatch('a"b')


def test_positions_are_line_and_column() -> None:
    forms = read("(+ 1\n   (* 2 3))\n  :k")
    outer, kw = forms
    assert (outer.line, outer.column) == (1, 1)
    assert isinstance(outer, ListForm)
    inner = outer.items[2]
    assert (inner.line, inner.column) == (2, 4)
    assert (kw.line, kw.column) == (3, 3)


def test_collection_form_types() -> None:
    forms = read("(a) [b] {c d} #{e}")
    assert [type(f) for f in forms] == [ListForm, VecForm, MapForm, SetForm]


ANON = [
    ("#(inc %)", ["%1"]),
    ("#(+ %1 %2)", ["%1", "%2"]),
    ("#(+ %2 1)", ["%1", "%2"]),
    ("#(apply + %&)", ["&", "%&"]),
    ("#(f % %&)", ["%1", "&", "%&"]),
    ("#(rand)", []),
]


@pytest.mark.parametrize(("source", "params"), ANON)
def test_anonymous_fn_expands_to_fn(source: str, params: list[str]) -> None:
    form = read_one(source)
    assert isinstance(form, ListForm)
    head, vec, _body = form.items
    assert isinstance(head, Sym) and head.name == "fn"
    assert isinstance(vec, VecForm)
    assert [p.name for p in vec.items if isinstance(p, Sym)] == params


def test_percent_becomes_percent_one_in_body() -> None:
    form = read_one("#(* % %)")
    assert isinstance(form, ListForm)
    body = form.items[2]
    assert isinstance(body, ListForm)
    assert [getattr(s, "name", None) for s in body.items] == ["*", "%1", "%1"]


ERRORS = [
    ("(+ 1", "unclosed (", 1, 1),
    ("[1 2", "unclosed [", 1, 1),
    ("{:a 1", "unclosed {", 1, 1),
    ("(+ 1))", "unexpected )", 1, 6),
    ("]", "unexpected ]", 1, 1),
    ("(]", "expected ) to close (", 1, 2),
    ("[1 2)", "expected ] to close [", 1, 5),
    ("'x", "quote", 1, 1),
    ("'(1 2)", "[1 2 3]", 1, 1),
    ("@state", "memory/put", 1, 1),
    ("`(a)", "syntax-quote", 1, 1),
    ("~x", "unquote", 1, 1),
    ("^:private x", "metadata", 1, 1),
    ("{:a}", "even number", 1, 1),
    ("{:a 1 :a 2}", "duplicate map key :a", 1, 7),
    ("#{1 1}", "duplicate set element", 1, 5),
    ('"abc', "unterminated string", 1, 1),
    ('"a\\qb"', "unknown escape \\q", 1, 3),
    ('"\\u12"', "four hex digits", 1, 2),
    ("\\foo", "unknown character", 1, 1),
    ("#(#(%))", "cannot be nested", 1, 3),
    ("#(%x)", "invalid #() argument", 1, 3),
    ("#?(:clj 1)", "unknown dispatch", 1, 1),
    ("##Foo", "##Inf", 1, 1),
    ("1/2", "(/ 1 2)", 1, 1),
    ("12abc", "invalid number", 1, 1),
    ("::kw", "auto-resolved", 1, 1),
    (":", "invalid keyword", 1, 1),
    ("[1 #_]", "#_ must be followed", 1, 4),
    ('#"(unclosed"', "regex", 1, 1),
    ("(\n  (+ 1 2)\n  (* 3", "unclosed (", 3, 3),
]


@pytest.mark.parametrize(("source", "fragment", "line", "column"), ERRORS)
def test_parse_errors_say_what_and_where(
    source: str, fragment: str, line: int, column: int
) -> None:
    with pytest.raises(LispError) as info:
        read(source)
    err = info.value
    assert err.category == "parse"
    assert fragment in err.message
    assert (err.line, err.column) == (line, column)


def test_nesting_limit() -> None:
    with pytest.raises(LispError, match="nested more than"):
        read("[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5))
    assert read_data("[" * 50 + "]" * 50) is not None


def test_read_one_needs_exactly_one_form() -> None:
    with pytest.raises(LispError, match="exactly one form"):
        read_one("1 2")


def test_read_data_refuses_symbols() -> None:
    with pytest.raises(LispError, match="data literal"):
        read_data("[a]")


def test_empty_source_reads_nothing() -> None:
    assert read("") == ()
    assert read("  ; just a comment\n ,,, ") == ()


# -- round trips: read(pr_str(x)) == x -------------------------------------------------

_names = st.from_regex(r"[a-z][a-z0-9\-?!*]{0,8}", fullmatch=True)
_keywords = st.builds(Keyword, st.one_of(_names, st.builds("{}/{}".format, _names, _names)))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),  # PTC-Lisp integers are 64-bit
    st.floats(allow_nan=False),
    st.text(max_size=20),
    _keywords,
)
_hashable = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4).map(tuple), max_leaves=10
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5).map(tuple),
        st.dictionaries(_hashable, inner, max_size=4),
        st.frozensets(_hashable, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_read_of_pr_str_round_trips(value: Any) -> None:
    value = L(value)
    assert lisp_eq(read_data(pr_str(value)), value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_reader_never_crashes_on_arbitrary_text(text: str) -> None:
    try:
        read(text)
    except LispError as e:
        assert e.category in ("parse", "limit")
        assert e.line is not None


def test_repeated_atoms_read_fresh_forms_with_their_own_positions() -> None:
    # Atom tokens are cached by text; each occurrence still gets its own form and position.
    forms = read("(f :k 1 x)\n(f :k 1 x)")
    first, second = forms
    assert isinstance(first, ListForm) and isinstance(second, ListForm)
    for a, b in zip(first.items, second.items, strict=True):
        assert a is not b
        assert (a.line, b.line) == (1, 2)
        assert a.column == b.column
    assert [type(f) for f in first.items] == [Sym, Lit, Lit, Sym]
    assert first.items[1].value is Keyword("k")  # type: ignore[attr-defined]


def test_atom_cache_stays_bounded() -> None:
    from ptcflow.lisp import _reader

    read(" ".join(f"a{i} :k{i} {i}" for i in range(3 * _reader._MAX_ATOMS // 2)))
    assert len(_reader._ATOMS) <= _reader._MAX_ATOMS
    assert read_one("a7").name == "a7"  # type: ignore[attr-defined]


def test_an_invalid_atom_is_an_error_every_time() -> None:
    for _ in range(2):  # errors are never cached as values
        with pytest.raises(LispError, match="invalid keyword"):
            read("(f :)")


@pytest.mark.parametrize(
    ("source", "column"),
    [
        ("9223372036854775808", 1),
        ("[1 -9223372036854775809]", 4),
        ("0x10000000000000000", 1),
        ("12345678901234567890N", 1),
        ("(+ 1 " + "9" * 5000 + ")", 6),  # past Python's 4,300-digit conversion limit
    ],
)
def test_integer_literals_outside_64_bits_are_parse_errors(source: str, column: int) -> None:
    with pytest.raises(LispError) as exc:
        read(source)
    assert exc.value.category == "parse" and "does not fit in 64 bits" in exc.value.message
    assert (exc.value.line, exc.value.column) == (1, column)


def test_the_64_bit_bounds_read() -> None:
    value = read_data("[9223372036854775807 -9223372036854775808 -0x8000000000000000]")
    assert list(value) == [2**63 - 1, -(2**63), -(2**63)]


@pytest.mark.parametrize("source", ['"\\ud800"', "\\uDFFF", '"a\\uDC00b"'])
def test_lone_surrogate_escapes_are_parse_errors(source: str) -> None:
    with pytest.raises(LispError, match="surrogate"):
        read(source)
