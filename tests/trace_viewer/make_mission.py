"""Record the 3-level mission journal the viewer's tests read (``data/mission.jsonl``).

    .venv/bin/python tests/trace_viewer/make_mission.py     # regenerate it

The mission is the agent service's (``examples/service/service_mission.py``): a planner
SubAgent (PTC) whose program calls three analyst SubAgents (JSON mode) through
``as_tool``; each analyst calls a tool (``fetch_sales``, which fails for apac) and two
SubAgents as tools: a PTC counter (programs run by the runtime's program kind:
``ai.program.result`` and sub-call ``ai.tool.*`` signals, with a program error at line 2)
and a JSON-mode writer. One model call is rate limited and retried.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from ptcflow.signals import SignalBus, record_journal

ROOT = Path(__file__).resolve().parents[2]
JOURNAL = Path(__file__).parent / "data" / "mission.jsonl"
RUN_ID = "mission_1"
QUESTION = "Which regions grew last quarter?"

sys.path.insert(0, str(ROOT / "examples" / "service"))  # also run as a script
sys.path.insert(0, str(ROOT / "tests"))

from service_mission import open_mission_runtime, run_mission  # noqa: E402


async def record(path: Path, *, latency: float = 0.03) -> None:
    """Run the mission and journal every signal of it to ``path`` (replaced)."""
    await anyio.Path(path).unlink(missing_ok=True)
    bus = SignalBus()
    async with (
        open_mission_runtime(bus=bus, latency=latency) as rt,
        record_journal(bus, path),
    ):
        step = await run_mission(rt, QUESTION, run_id=RUN_ID, latency=latency)
    assert step.ok, step.error


if __name__ == "__main__":
    anyio.run(record, JOURNAL)
    print(f"wrote {JOURNAL}")
