"""Every Python example of docs/subagent.md runs (and prints something)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "subagent.md"
TEXT = DOC.read_text(encoding="utf-8")
PLAIN = re.findall(r"```python\n(.*?)```", TEXT, re.DOTALL)


@pytest.mark.parametrize("index", range(len(PLAIN)))
def test_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(PLAIN[index], f"subagent.md[python {index}]", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()


def test_every_example_is_a_plain_block() -> None:
    assert "program-kind" not in TEXT and len(PLAIN) >= 10
