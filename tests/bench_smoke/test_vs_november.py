"""Smoke test: bench/vs_november.py compares this tree with a git ref's src, end to end."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "vs_november.py"


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
def test_both_subjects_run_and_every_row_has_a_ratio() -> None:
    args = ["--ref", "HEAD", "--rounds", "1", "--runs", "20"]
    args += ["--concurrent", "20", "--concurrent-rounds", "1"]
    out = subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for row in ("sequential µs/run, CPU", "20 concurrent, wall s", "20 concurrent, peak RSS MB"):
        assert re.search(rf"{re.escape(row)}\s+[\d.]+\s+[\d.]+\s+[\d.]+x", out.stdout), out.stdout
