"""Bytecode instructions a ptcflow run executes, per function: a load-independent measure.

Run: ``.venv/bin/python bench/_opcodes.py [top]``. Traces the benchmark's two-turn run
(see runtime_overhead.py) with ``sys.settrace`` opcode events over 100 runs after 20
warm-up runs and prints the instructions per run, in total and for the ``top`` functions
(default 25). Time on a shared machine moves by +-30% from minute to minute; this count
does not, so it tells whether a change to the hot path did less work. It counts Python
bytecode only (work inside C functions -- msgspec, dict operations -- is not counted), and
leaves out ``signals._signal._refresh``, which runs once per millisecond in reality but
for every signal under the tracer's slowdown.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _subject
from ptcflow.strategies import ReAct

_counts: collections.Counter[str] = collections.Counter()


def _tracer(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "call":
        frame.f_trace_opcodes = True
        return _tracer
    if event == "opcode":
        code = frame.f_code
        _counts[f"{Path(code.co_filename).name}:{code.co_qualname}"] += 1
    return _tracer


async def _measure(runs: int) -> None:
    rt, _ = _subject.make_runtime()
    strategy = ReAct()
    async with rt:
        for _ in range(20):
            await rt.run(strategy, _subject.QUESTION)
        sys.settrace(_tracer)
        try:
            for _ in range(runs):
                await rt.run(strategy, _subject.QUESTION)
        finally:
            sys.settrace(None)


def main(top: int = 25, runs: int = 100) -> float:
    """Trace ``runs`` runs; print and return the instructions per run."""
    _counts.clear()
    anyio.run(_measure, runs)
    _counts.pop("_signal.py:_refresh", None)
    per_run = sum(_counts.values()) / runs
    print(f"{per_run:.0f} bytecode instructions per run (asyncio, {runs} runs)")
    for name, n in _counts.most_common(top):
        print(f"{n / runs:8.1f}  {name}")
    return per_run


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 25)
