"""The examples in the docstrings of ``ptcflow.trace`` run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ptcflow.trace._follow",
    "ptcflow.trace._live",
    "ptcflow.trace._mission",
    "ptcflow.trace._node",
    "ptcflow.trace._otlp",
    "ptcflow.trace._page",
    "ptcflow.trace._redact",
    "ptcflow.trace._summary",
    "ptcflow.trace._text",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
