"""Smoke test: bench/compaction.py runs end to end and its compacted columns stay bounded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "compaction.py"


@pytest.mark.slow
def test_the_compaction_bench_stays_bounded(tmp_path: Path) -> None:
    out_file = tmp_path / "out.json"
    out = subprocess.run(
        [sys.executable, str(BENCH), "--turns", "40", "--json", str(out_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    figures = json.loads(out_file.read_text())
    none = [row["input_tokens"] for row in figures["none"]]
    for name in ("keep_last", "summarize"):
        tokens = [row["input_tokens"] for row in figures[name]]
        assert max(tokens[-10:]) < max(none[-10:]) / 2, name
    assert [r["stored"] for r in figures["summarize"]] == [r["stored"] for r in figures["none"]]
