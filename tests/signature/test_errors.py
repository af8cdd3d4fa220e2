"""Caret excerpts and the error and warning classes."""

from __future__ import annotations

from ptcflow.errors import PtcflowError, UsageError
from ptcflow.signature import SignatureError, SignatureWarning
from ptcflow.signature._errors import caret_excerpt


def test_caret_excerpt_single_line() -> None:
    assert caret_excerpt("{a :intt}", 3) == "  {a :intt}\n     ^"


def test_caret_excerpt_at_end_of_text() -> None:
    assert caret_excerpt("(a", 2) == "  (a\n    ^"


def test_caret_excerpt_multiline_names_the_line() -> None:
    text = "(a :int,\n b :strin) -> :int"
    excerpt = caret_excerpt(text, text.index(":strin"))
    assert excerpt.splitlines() == ["  at line 2, column 4:", "   b :strin) -> :int", "     ^"]


def test_caret_excerpt_cuts_long_lines_around_the_position() -> None:
    text = "{" + ", ".join(f"f{i} :int" for i in range(40)) + ", bad :nope}"
    position = text.index(":nope")
    source, caret = caret_excerpt(text, position).splitlines()
    assert len(source) < 80
    assert source.startswith("  ...")
    assert source[caret.index("^") :].startswith(":nope")


def test_signature_error_without_text_is_just_the_reason() -> None:
    error = SignatureError("bad hint")
    assert str(error) == "bad hint"
    assert error.position is None and error.text is None
    assert isinstance(error, UsageError) and isinstance(error, PtcflowError)


def test_signature_warning_is_a_user_warning() -> None:
    assert issubclass(SignatureWarning, UserWarning)


def test_signature_errors_survive_pickling() -> None:
    import pickle

    from ptcflow.signature import parse

    try:
        parse("[]")
    except SignatureError as error:
        copy = pickle.loads(pickle.dumps(error))
        assert str(copy) == str(error)
        assert (copy.reason, copy.text, copy.position) == (error.reason, error.text, error.position)
    else:  # pragma: no cover
        raise AssertionError("parse('[]') must fail")
