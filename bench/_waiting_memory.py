"""Bytes a run holds while it waits on its model (tracemalloc), this tree against another ``src``.

Run: ``.venv/bin/python bench/_waiting_memory.py [other-src-dir]`` (e.g. ``/tmp/nov/src`` from
``git archive d3d3e15 src | tar -x -C /tmp/nov``). Each side runs in a fresh interpreter with
its ``src`` first on ``PYTHONPATH``: 2,000 two-turn ReAct runs (the workload of
``_instructions.py``, public names only) are started in one task group against a scripted
model that answers after 300 ms; once all of them wait on it, the memory tracemalloc saw
allocated since they started, divided by the runs, is what one waiting run holds: the
run's own objects and the task that awaits it (the same for every side), after a full
collection. It prints both figures and their ratio, and with ``--top N`` the N source lines
that allocated most (per run) on each side (``--runs N``: another number of runs). Takes
about 10 seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = 2_000

WORKLOAD = """
import gc, sys, tracemalloc
import anyio
from ptcflow import ReAct, Runtime
from ptcflow.testing import ScriptedLLM

RUNS, TOP = int(sys.argv[1]), int(sys.argv[2])


async def add(x: int, y: int) -> int:
    'Add two integers.'
    return x + y


def answer(request):
    if request.messages[-1].role == "tool":
        return "5"
    return ScriptedLLM.tool_call("add", x=2, y=3)


async def main() -> None:
    rt = Runtime(llm=ScriptedLLM(answer, record=False, latency=0.3), tools={"add": add})
    agent = ReAct()
    async with rt:
        await rt.run(ReAct(), "warm-up")  # imports and per-class caches
        async with anyio.create_task_group() as tg:
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(RUNS):
                tg.start_soon(rt.run, agent, "What is 2 + 3?")
            await anyio.sleep(0.1)  # every run waits on its first model call
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
            snapshot = tracemalloc.take_snapshot() if TOP else None
            tracemalloc.stop()
    print(f"{(after - before) / RUNS:.0f}")
    if snapshot is not None:
        for stat in snapshot.statistics("lineno")[:TOP]:
            print(f"  {stat.size / RUNS:7.0f}  {stat.traceback[0]}")


anyio.run(main)
"""


def measure(src: Path, top: int, runs: int = RUNS) -> list[str]:
    """The bytes per waiting run with ``src`` first on the path (then the top lines)."""
    env = dict(os.environ, PYTHONPATH=str(src.resolve()))
    done = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(runs), str(top)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def _option(argv: list[str], name: str, default: int) -> tuple[int, list[str]]:
    if name not in argv:
        return default, argv
    i = argv.index(name)
    return int(argv[i + 1]), argv[:i] + argv[i + 2 :]


def main(argv: list[str]) -> int:
    top, argv = _option(argv, "--top", 0)
    runs, argv = _option(argv, "--runs", RUNS)
    here = measure(HERE.parent / "src", top, runs)
    print(f"this tree: {here[0]} bytes per waiting run (tracemalloc, {runs:,} runs)")
    for line in here[1:]:
        print(line)
    if argv:
        other = measure(Path(argv[0]), top, runs)
        print(f"{argv[0]}: {other[0]} bytes per waiting run")
        for line in other[1:]:
            print(line)
        print(f"ratio: {int(here[0]) / int(other[0]):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
