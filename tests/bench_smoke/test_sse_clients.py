"""Smoke test: bench/sse_clients.py serves a few streamed runs over uvicorn to raw-socket
clients, measures them, and drops the slow client with its error event (the lags are
measured, not asserted: the machines are shared)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "sse_clients.py"

pytest.importorskip("uvicorn")
pytest.importorskip("ag_ui")


def test_a_few_clients_and_a_slow_one(tmp_path: Path) -> None:
    figures = tmp_path / "out.json"
    args = ["--clients", "5", "--gap", "0.02", "--latency", "0.01", "--ramp", "0.05"]
    slow = ["--slow-words", "3000", "--slow-gap", "0.001"]
    out = subprocess.run(
        [sys.executable, str(BENCH), *args, *slow, "--json", str(figures)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr  # 1: a budget missed on a loaded machine
    assert "client lag behind the fastest" in out.stdout
    result = json.loads(figures.read_text())
    assert len(result["lag_ms"]) == 5
    assert result["fanout"]["run_tree"] < result["fanout"]["everything"]
    slow_client = result["slow"]
    assert slow_client["dropped"] == 1
    assert slow_client["last_event"]["code"] == "client_too_slow"
    assert slow_client["words_made"] == 3000 > slow_client["words_received"]
