"""Every Python example in docs/tools.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int) -> None:
    code = compile(BLOCKS[index], f"{DOC.name}[block {index}]", "exec")
    exec(code, {"__name__": f"docs_tools_{index}"})
