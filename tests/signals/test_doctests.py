"""The examples in the signals modules' docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ptcflow.signals._bus",
    "ptcflow.signals._envelope",
    "ptcflow.signals._journal",
    "ptcflow.signals._messages",
    "ptcflow.signals._pattern",
    "ptcflow.signals._runs",
    "ptcflow.signals._sanitize",
    "ptcflow.signals._secrets",
    "ptcflow.signals._signal",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
