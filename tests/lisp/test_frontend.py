"""The lenient front end: one code block out of a model's response."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ptcflow.lisp import LispError, extract_code
from ptcflow.lisp._frontend import normalize

EXTRACT = [
    ("```clojure\n(return 1)\n```", "(return 1)"),
    ("```lisp\n(+ 1 2)\n```", "(+ 1 2)"),
    ("```clj\n(+ 1 2)\n```", "(+ 1 2)"),
    ("```\n(+ 1 2)\n```", "(+ 1 2)"),
    ("```Clojure\n(+ 1 2)\n```", "(+ 1 2)"),
    ("Sure! Here it is:\n\n```clojure\n(def x 1)\n(+ x 1)\n```\nThat adds.", "(def x 1)\n(+ x 1)"),
    ("  ```clojure\n  (inc 1)\n  ```", "(inc 1)"),
    ("```clojure\n(inc 1)", "(inc 1)"),
    ("~~~clojure\n(inc 1)\n~~~", "(inc 1)"),
    ("(return {:a 1})", "(return {:a 1})"),
    ("   \n(+ 1 2)\n", "(+ 1 2)"),
    ("```clojure\n(str \u201chi\u201d)\n```", '(str "hi")'),
    ("(str\u00a0\u201ca\u201d)", '(str "a")'),
    ("(+\u200b 1 2)", "(+ 1 2)"),
    ("\ufeff(+ 1 2)", "(+ 1 2)"),
    ("(+ 1\r\n 2)", "(+ 1\n 2)"),
    ('```clojure\n(println "```")\n```', '(println "```")'),
    ("Plan:\n```text\nstep 1\n```\nHmm.\n```clojure\n(inc 1)\n```", "(inc 1)"),
]


@pytest.mark.parametrize(("text", "code"), EXTRACT)
def test_extracts_the_program(text: str, code: str) -> None:
    assert extract_code(text) == code


EXTRACT_ERRORS = [
    ("```clojure\n(a)\n```\n```clojure\n(b)\n```", "found 2 code blocks"),
    ("```lisp\n(a)\n```\n```\n(b)\n```", "exactly one"),
    ("I think the answer is 42.", "no program found"),
    ("", "no program found"),
    ("```python\nprint(1)\n```", "python"),
    ("```clojure\n\n```", "empty"),
]


@pytest.mark.parametrize(("text", "fragment"), EXTRACT_ERRORS)
def test_extract_errors_teach_the_model(text: str, fragment: str) -> None:
    with pytest.raises(LispError) as info:
        extract_code(text)
    assert info.value.category == "parse"
    assert fragment in info.value.message


@given(st.text())
def test_normalize_never_leaves_smart_quotes_or_zero_width(text: str) -> None:
    out = normalize(text)
    for ch in "\u201c\u201d\u2018\u2019\u200b\u200d\ufeff\u00a0":
        assert ch not in out


@given(st.text(alphabet=st.characters(blacklist_characters="`~\u2028\u2029\r")))
def test_extract_code_returns_text_or_parse_error(text: str) -> None:
    try:
        code = extract_code(text)
    except LispError as e:
        assert e.category == "parse"
    else:
        assert code.startswith("(")
