"""Smoke test: bench/session_store.py --quick runs end to end and holds its budgets on SQLite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "session_store.py"


@pytest.mark.slow
def test_the_sessions_bench_reports_sqlite(tmp_path: Path) -> None:
    out_file = tmp_path / "out.json"
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--no-postgres", "--json", str(out_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "SQLite load of a 1,000-message session" in out.stdout, out.stderr
    figures = json.loads(out_file.read_text())["sqlite"]
    assert figures["append_ms_10"] > 0 and figures["load_ms_1000"] > 0
