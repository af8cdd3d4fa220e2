"""Smoke test: bench/approvals.py --quick runs end to end and reports its three figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "approvals.py"


@pytest.mark.slow
def test_the_approvals_bench_reports_sizes_and_costs(tmp_path: Path) -> None:
    out_file = tmp_path / "out.json"
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json", str(out_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "paused state, ReAct 3 turns" in out.stdout, out.stderr
    figures = json.loads(out_file.read_text())
    # Sizes are deterministic: the budget holds on any machine.
    assert 0 < max(figures["sizes"].values()) <= 16 * 1024
    assert figures["resume"]["ratio"] > 0 and figures["concurrent"]["ratio"] > 0
