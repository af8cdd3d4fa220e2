"""Smoke test: bench/runtime_overhead.py --quick runs end to end and reports every section."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "runtime_overhead.py"


@pytest.mark.slow
def test_quick_benchmark_reports_all_sections() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--runs", "20", "--sizes", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for section in ("(a) sequential", "(b) concurrent", "(c) OpenTelemetry"):
        assert section in text
    assert re.search(r"ptcflow\s+[\d.]+ µs wall\s+[\d.]+ µs CPU\s+[\d.]+x /\s+[\d.]+x floor", text)
    rows = re.findall(r"^\s+20\s+[\d.]+ s \(\s*[\d.]+\)\s+[\d.]+ s", text, re.MULTILINE)
    assert len(rows) == 2  # with and without OpenTelemetry
