"""The docstring parser: Google, NumPy and Sphinx styles, and robustness on any text."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ptcflow.tools._docstrings import DocInfo, parse_docstring


def test_empty_and_none() -> None:
    assert parse_docstring(None) == DocInfo()
    assert parse_docstring("   \n  ") == DocInfo()


def test_summary_only_joins_wrapped_first_paragraph() -> None:
    info = parse_docstring("""Search the
    project docs.

    More detail here.
    """)
    assert info.summary == "Search the project docs."
    assert info.description == "Search the project docs.\n\nMore detail here."
    assert info.params == {}


def test_google_style() -> None:
    doc = """Search for items.

    Args:
        query: the text to look for.
        limit (int): at most this many
            results, newest first.
        *tags: extra tags.
        **options: ignored.

    Returns:
        Matching ids.

    Raises:
        ValueError: never listed as a parameter.
    """
    info = parse_docstring(doc)
    assert info.summary == "Search for items."
    assert info.description == "Search for items."
    assert info.params == {
        "query": "the text to look for.",
        "limit": "at most this many results, newest first.",
        "tags": "extra tags.",
        "options": "ignored.",
    }
    assert info.returns == "Matching ids."


def test_google_keyword_args_section_and_blank_lines_inside_entries() -> None:
    info = parse_docstring("""Do it.

    Keyword Args:
        a: first line.

            second paragraph.
        b: other.
    """)
    assert info.params == {"a": "first line.\nsecond paragraph.", "b": "other."}


def test_google_types_with_parentheses_and_separators() -> None:
    info = parse_docstring("""Plot points.

    ---

    Args:
        pts (list(tuple(int, int))): the points.
        color (str): line color.
    """)
    assert info.params == {"pts": "the points.", "color": "line color."}
    assert info.description == "Plot points.\n\n---"


def test_numpy_style() -> None:
    doc = """Search for items.

    Parameters
    ----------
    query : str
        The text to look for.
    limit : int, optional
        At most this many
        results.
    x, y : float
        Coordinates.
    flag

    Returns
    -------
    list of int
        Matching ids.
    """
    info = parse_docstring(doc)
    assert info.summary == "Search for items."
    assert info.params == {
        "query": "The text to look for.",
        "limit": "At most this many results.",
        "x": "Coordinates.",
        "y": "Coordinates.",
        "flag": "",
    }
    assert info.returns == "Matching ids."


def test_sphinx_style() -> None:
    doc = """Search for items.

    Longer text.

    :param query: the text to look for.
    :param int limit: at most this many
        results.
    :type query: str
    :returns: matching ids.
    :raises ValueError: on bad input.
    """
    info = parse_docstring(doc)
    assert info.summary == "Search for items."
    assert info.description == "Search for items.\n\nLonger text."
    assert info.params == {
        "query": "the text to look for.",
        "limit": "at most this many results.",
    }
    assert info.returns == "matching ids."


def test_sections_without_params_leave_description_alone() -> None:
    info = parse_docstring("""Summary line.

    Example:
        >>> 1 + 1
        2
    """)
    assert info.summary == "Summary line."
    assert info.params == {}


_names = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)
_text = st.from_regex(r"[A-Za-z][A-Za-z0-9 ,.]{0,30}[A-Za-z0-9.]", fullmatch=True)


@given(st.dictionaries(_names, _text, min_size=1, max_size=5), _text)
def test_round_trip_every_style(params: dict[str, str], summary: str) -> None:
    google = "\n".join([summary, "", "Args:", *(f"    {k}: {v}" for k, v in params.items())])
    numpy = "\n".join(
        [
            summary,
            "",
            "Parameters",
            "----------",
            *(f"{k} : str\n    {v}" for k, v in params.items()),
        ]
    )
    sphinx = "\n".join([summary, "", *(f":param {k}: {v}" for k, v in params.items())])
    expected = {k: " ".join(v.split()) for k, v in params.items()}
    for doc in (google, numpy, sphinx):
        info = parse_docstring(doc)
        assert " ".join(info.summary.split()) == " ".join(summary.split())
        assert {k: " ".join(v.split()) for k, v in info.params.items()} == expected


@given(st.text())
def test_never_raises(text: str) -> None:
    info = parse_docstring(text)
    assert isinstance(info.params, dict)
