"""Smoke test: bench/ptc_tokens.py runs end to end, both agents answer correctly, and the
programmatic version reads several times fewer input tokens (the figures are deterministic)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ptc_tokens.py"


@pytest.mark.slow
def test_the_token_case_holds_at_300_orders(tmp_path: Path) -> None:
    out_file = tmp_path / "out.json"
    out = subprocess.run(
        [sys.executable, str(BENCH), "--orders", "300", "--json", str(out_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr  # the bench asserts both answers are right
    assert "both answers checked" in out.stdout
    for row in ("input tokens (JSON chars / 4)", "turns", "model calls"):
        assert row in out.stdout
    figures = json.loads(out_file.read_text())
    react, ptc = figures["react"], figures["subagent"]
    assert react["input_tokens"] >= 3 * ptc["input_tokens"]
    assert (react["model_calls"], ptc["model_calls"]) == (4, 2)
    assert ptc["tool_calls"] == react["tool_calls"] + 1  # the SubAgent also looked at page 1
