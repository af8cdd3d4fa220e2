"""The examples in the docstrings of the providers, the model server and the GenAI message
format run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ptcflow.providers._anthropic",
    "ptcflow.providers._anthropic_wire",
    "ptcflow.providers._config_file",
    "ptcflow.providers._errors",
    "ptcflow.providers._openai",
    "ptcflow.providers._openai_wire",
    "ptcflow.providers._registry",
    "ptcflow.providers._sse",
    "ptcflow.providers._wire",
    "ptcflow.core._frozen",
    "ptcflow.runtime._genai_messages",
    "ptcflow.testing._server",
    "ptcflow.testing._server_script",
    "ptcflow.testing._wire",
    "ptcflow.tools._dispatch",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doctest-0123456789")
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
