"""The examples in docs/signatures.md and in the module docstrings run and say the truth."""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "signatures.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)

MODULES = [
    "ptcflow.signature",
    "ptcflow.signature._errors",
    "ptcflow.signature._ast",
    "ptcflow.signature._parser",
    "ptcflow.signature._signature",
    "ptcflow.signature._validate",
    "ptcflow.signature._hints",
    "ptcflow.signature._template",
    "ptcflow.signature._firewall",
]


def _blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def _expected_output(block: str) -> list[str]:
    """The ``# ...`` comment lines right after a print() call are its expected output."""
    lines = block.splitlines()
    expected: list[str] = []
    for index, line in enumerate(lines):
        if "print(" in line:
            for follow in lines[index + 1 :]:
                if not follow.startswith("# "):
                    break
                expected.append(follow[2:])
    return expected


def test_the_page_has_examples() -> None:
    assert len(_blocks()) >= 10


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_doc_example_runs(index: int) -> None:
    block = _blocks()[index]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(block, f"{DOC.name}[{index}]", "exec"), {"__name__": f"docs_example_{index}"})
    expected = _expected_output(block)
    if expected:
        assert output.getvalue().splitlines() == expected


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0
    assert failures == 0
