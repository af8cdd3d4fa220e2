"""The example scripts in examples/ run as written (the docs' blocks: tests/test_docs_run.py)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "react_quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "answer: 2 + 3 = 5 and 4 × 5 = 20." in out
    assert "ai.tool.result" in out


def test_replay_example_reproduces_the_live_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["replay_journal.py", str(tmp_path / "run.jsonl")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(ROOT / "examples" / "replay_journal.py"), run_name="__main__")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "same final state as the live run: True" in out
    assert (tmp_path / "run.jsonl").read_text("utf-8").count("\n") >= 10
