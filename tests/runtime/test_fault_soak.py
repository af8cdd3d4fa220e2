"""The fault soak in the suite: a few hundred faulted runs per backend on one Runtime.

``bench/fault_soak.py`` holds the soak (faulted models and tools, runs cancelled from
outside, mission deadlines) and its checks; here it runs seeded at a smaller size on both
backends. A hang, an orphaned or duplicated terminal signal, an end signal out of place, a
signal the journal cannot read back, a task left over, or a Runtime that no longer runs
agents afterwards all fail the test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fault_soak import soak

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("seed", [1, 2])
async def test_the_runtime_keeps_its_promises_under_faults(seed: int) -> None:
    report = await soak(250, seed)
    assert report.violations == []
    assert report.leaked_tasks == 0
    assert report.runs >= 200  # the rest were cancelled by their caller: no Step to check
    assert report.reasons["timeout"] > 0 and report.reasons["cancelled"] > 0
    assert report.reasons["final_answer"] > 0 and report.late_results > 0
