"""Every Python example of docs/subagent.md runs.

Blocks fenced as ```` ```python program-kind ```` need the runtime to perform
``RunProgram``; until its program kind lands they run here with the stand-in handler of
:mod:`tests.agent.program_kind` (registered on every Runtime the example opens).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .program_kind import patched_runtime

DOC = Path(__file__).resolve().parents[2] / "docs" / "subagent.md"
TEXT = DOC.read_text(encoding="utf-8")
PLAIN = re.findall(r"```python\n(.*?)```", TEXT, re.DOTALL)
PROGRAM_KIND = re.findall(r"```python program-kind\n(.*?)```", TEXT, re.DOTALL)


@pytest.mark.parametrize("index", range(len(PLAIN)))
def test_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(PLAIN[index], f"subagent.md[python {index}]", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("index", range(len(PROGRAM_KIND)))
def test_program_kind_example_runs(
    index: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = patched_runtime()
    for where in ("ptcflow.runtime.Runtime", "ptcflow.Runtime", "ptcflow.agent._execute.Runtime"):
        monkeypatch.setattr(where, runtime)
    code = compile(PROGRAM_KIND[index], f"subagent.md[program-kind {index}]", "exec")
    exec(code, {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()


def test_the_page_has_both_kinds_of_examples() -> None:
    assert len(PLAIN) >= 4 and len(PROGRAM_KIND) >= 5
