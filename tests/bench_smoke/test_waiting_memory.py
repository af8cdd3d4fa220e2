"""Smoke test: bench/_waiting_memory.py measures a waiting run on this tree and another src."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "_waiting_memory.py"


@pytest.mark.slow
def test_both_sides_give_bytes_per_run_and_a_ratio() -> None:
    args = [str(ROOT / "src"), "--runs", "50", "--top", "3"]
    out = subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    here = re.search(r"this tree: (\d+) bytes per waiting run", out.stdout)
    assert here is not None, out.stdout
    assert int(here.group(1)) > 1000, out.stdout  # a run, its task, its model call
    assert re.search(r"ratio: \d+\.\d\dx", out.stdout), out.stdout
    assert len(re.findall(r"^\s+\d+\s+\S+:\d+", out.stdout, re.MULTILINE)) == 6, out.stdout
