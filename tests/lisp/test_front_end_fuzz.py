"""Fuzzing the reader and the analyzer: whatever the text, they return forms or a program,
or raise a ``LispError`` with a position; never another exception (a model's text is
hostile input). ``HYPOTHESIS_PROFILE=thorough`` runs 1,000 examples of each."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ptcflow.lisp import LispError, analyze, parse
from ptcflow.lisp.errors import CATEGORIES

# Tokens the reader gives a meaning to, plus digits (long integers) and a few others.
_PIECES = st.sampled_from(
    [*"()[]{}#\"\\;,'`~@^:%&/.+-_ \n\t09azAZé", "\\u", "\\ud800", "##", "#_", "#(", '#"']
)
_SNIPPETS = st.lists(_PIECES, max_size=40).map("".join)
_PROGRAM = """
(defn score [{:keys [amount tags] :or {amount 0}} & more]
  (cond (> amount 400) (+ amount 10)
        (some #{"vip"} tags) (* amount 2)
        :else amount))
(let [rows (call "list" {:n 5}) top (->> rows (filter #(> (:amount %) 1)) (take 3))]
  (loop [i 0 acc []] (if (< i 3) (recur (inc i) (conj acc i)) acc))
  (for [r rows :when (odd? (:id r)) :let [s (score r)]] [s #"\\d+" \\a 1.5e3 ##Inf])
  (case (count top) 0 :none 1 :one :many)
  (return {:top top :n (count rows)}))
"""
_TOOLS = ["list"]


def _check(error: LispError) -> None:
    assert error.message
    assert error.category in CATEGORIES
    assert "failed unexpectedly" not in error.message


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    """The sample program with a few random edits: deletions, insertions, swaps."""
    text = _PROGRAM
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)) :]
        elif op == "insert":
            text = (
                text[:i] + draw(st.lists(_PIECES, min_size=1, max_size=4).map("".join)) + text[i:]
            )
        else:
            j = draw(st.integers(i, min(len(text), i + 30)))
            text = text[:j] + text[i:j] + text[j:]
    return text


_NUMBERS = st.builds(
    lambda sign, digits, suffix: sign + digits + suffix,
    st.sampled_from(["", "-", "+", "0x", "-0x"]),
    st.text(st.sampled_from(list("0123456789abcdefABCDEF")), min_size=1, max_size=5000),
    st.sampled_from(["", "N", "M", ".5", "e308", "e999", "/3"]),
)

_TEXTS = st.one_of(_SNIPPETS, st.text(max_size=40), _mutated(), _NUMBERS)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_the_reader_raises_only_positioned_lisp_errors(text: str) -> None:
    try:
        parse(text)
    except LispError as error:
        _check(error)
        assert error.line is not None and error.column is not None


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_the_analyzer_raises_only_lisp_errors(text: str) -> None:
    try:
        program = analyze(text, tool_names=_TOOLS, ctx_keys=["items"])
    except LispError as error:
        _check(error)
    else:
        assert program.nslots >= 0
        assert program.tools_used <= frozenset(_TOOLS)
