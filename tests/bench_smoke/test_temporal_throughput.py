"""Smoke test: bench/temporal_throughput.py --quick runs end to end (a dev server, worker
processes) and prints every figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "temporal_throughput.py"


@pytest.mark.slow
def test_quick_temporal_benchmark_prints_every_figure() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for label in ("local Runtime", "Temporal, 1 worker", "Temporal, 2 workers"):
        assert label in out.stdout and "directives/s" in out.stdout
    assert "Temporal adds" in out.stdout and "2 workers =" in out.stdout
    for label in ("ptcflow SubAgent mission", "plain temporalio workflow"):
        assert label in out.stdout and "missions/s" in out.stdout
    assert "of the plain SDK's missions/s" in out.stdout
