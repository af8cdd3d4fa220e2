"""Fuzzing the signature parser with near-misses of valid signatures: rendered signatures with
random edits, deep and long inputs. It returns a signature or raises a ``SignatureError``
with a position inside the text, never another exception."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ptcflow.signature import Signature, SignatureError, parse, parse_type

from .strategies import signatures

_PIECES = st.sampled_from(
    [*"()[]{}:?,-> _abz|\n\"'09\\#^.é", "->", ":int", ":string?", "[", "{", " :map", "\x00"]
)


@st.composite
def _edited(draw: st.DrawFn) -> str:
    """A rendered signature with a few deletions, insertions or duplications."""
    text = draw(signatures).render()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 5)) :]
        elif op == "insert":
            text = (
                text[:i] + draw(st.lists(_PIECES, min_size=1, max_size=3).map("".join)) + text[i:]
            )
        else:
            j = draw(st.integers(i, min(len(text), i + 20)))
            text = text[:j] + text[i:j] + text[j:]
    return text


_DEEP = st.builds(
    lambda opener, n, inner: opener * n + inner,
    st.sampled_from(["[", "{a ", "(a ", "[{x "]),
    st.integers(1, 3000),
    st.sampled_from(["", ":int", ":int]", "}"]),
)
_TEXTS = st.one_of(_edited(), _DEEP, st.lists(_PIECES, max_size=60).map("".join))


def _check(error: SignatureError, text: str) -> None:
    assert error.reason
    if error.position is not None:
        assert error.text == text
        assert 0 <= error.position <= len(text)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_parse_returns_a_signature_or_a_positioned_signature_error(text: str) -> None:
    try:
        sig = parse(text)
    except SignatureError as error:
        _check(error, text)
    else:
        assert isinstance(sig, Signature)
        assert parse(sig.render()) == sig


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_parse_type_returns_a_type_or_a_positioned_signature_error(text: str) -> None:
    try:
        parse_type(text)
    except SignatureError as error:
        _check(error, text)
