"""examples/compiled_scorer/score_reports.py runs as written, and bench/compiled_scorer.py runs small."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_compiled_scorer_example_scores_10000_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["score_reports.py", str(tmp_path / "scorer.clj")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(
            str(ROOT / "examples" / "compiled_scorer" / "score_reports.py"), run_name="__main__"
        )
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "compiled with 1 model call" in out
    assert "scored 10000 reports" in out and "failed: 10" in out
    assert "scorer/999" in out and "invalid_amount" in out
    assert "loaded back: same result True" in out
    assert (tmp_path / "scorer.clj").read_text().startswith(";; ptcflow compiled agent")


def test_the_compiled_scorer_benchmark_runs_small() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "compiled_scorer.py"), "--records", "300",
         "--repeats", "1"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    for name in ("python", "compiled", "compiled, alone"):
        assert f"  {name} " in out.stdout
    assert "x python" in out.stdout
