"""Smoke test: bench/subagent_stream.py runs end to end and reports every variant (the
ratios themselves are measured, not asserted: the machines are shared)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "subagent_stream.py"


def test_the_bench_runs_and_reports_each_variant() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--rounds", "1", "--runs", "10"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for variant in ("plain", "stream", "events"):
        assert f"\n{variant} " in out.stdout
