"""Smoke test: bench/stream_encode.py --quick runs end to end and reports every variant (the
ratios themselves are measured, not asserted: the machines are shared)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "stream_encode.py"


def test_the_bench_runs_and_reports_each_variant() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--rounds", "1", "--runs", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr  # 1: a budget missed on a loaded machine
    for variant in ("drain", "agui", "agui-mission", "agui-nostate", "aisdk"):
        assert f"\n{variant} " in out.stdout
    assert "budget: each encoding <= 1.10x" in out.stdout


def test_the_breakdown_reports_each_piece() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--breakdown", "--rounds", "1", "--runs", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for piece in ("agui (memory state)", "agui-mission", "agui-nostate", "aisdk", "Mission.add"):
        assert piece in out.stdout
