"""The cyclic garbage collector's share of the concurrent scenario (b): floor and ptcflow.

Run: ``.venv/bin/python bench/_gc.py [--runs 10000] [--sync]``. Each side runs in a fresh
subprocess (alternating, three samples each): ``runs`` concurrent two-turn runs with a
50 ms model latency, as in ``runtime_overhead.py``'s scenario (b) (``--sync``: the tool as
a plain ``def``, scenario (d)). It prints the CPU time of the whole scenario and the time
spent in collections of each generation (timed with ``gc.callbacks``), then the objects
the collector tracks per run while the runs wait on their model, by type (2,000 runs).

Why it exists: at 10,000 concurrent runs the collector's full collections walk every live
run's objects several times as the population grows, so each tracked object a waiting run
holds costs time there, whatever its share of a sequential run.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

LATENCY = 0.05


def timed_collections(impl: str, runs: int, sync: bool) -> dict[str, Any]:
    """Run the scenario once; CPU seconds and the collector's seconds per generation."""
    spent = [0.0, 0.0, 0.0]
    count = [0, 0, 0]
    started = 0.0

    def on_gc(phase: str, info: dict[str, int]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - started
            count[info["generation"]] += 1

    gc.callbacks.append(on_gc)
    if impl == "floor":
        import _floor

        _, cpu = asyncio.run(_floor.concurrent(runs, LATENCY))
    else:
        import _subject

        _wall, cpu = asyncio.run(_subject.concurrent(runs, LATENCY, sync_tool=sync))
    gc.callbacks.remove(on_gc)
    return {"cpu": cpu, "gc": spent, "collections": count}


def tracked_per_run(runs: int) -> list[tuple[str, float]]:
    """The objects the collector tracks per ptcflow run waiting on its model, by type."""
    import _subject
    from ptcflow.strategies import ReAct

    async def main() -> collections.Counter[str]:
        rt, _ = _subject.make_runtime(latency=0.5)
        strategy = ReAct()
        async with rt:
            await rt.run(strategy, _subject.QUESTION)
            gc.collect()
            before = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
            async with asyncio.TaskGroup() as tg:
                for _ in range(runs):
                    tg.create_task(rt.run(strategy, _subject.QUESTION))
                await asyncio.sleep(0.2)  # every run is waiting on its first model call
                gc.collect()
                during = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        return during - before

    diff = asyncio.run(main())
    return [(name, n / runs) for name, n in diff.most_common() if n / runs >= 0.5]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--sync", action="store_true", help="the tool as a plain def")
    parser.add_argument("--worker", choices=("floor", "ptcflow"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(timed_collections(args.worker, args.runs, args.sync)))
        return 0
    samples: dict[str, list[dict[str, Any]]] = {"floor": [], "ptcflow": []}
    for _ in range(3):
        for impl in samples:
            cmd = [sys.executable, __file__, "--worker", impl, "--runs", str(args.runs)]
            out = subprocess.run(cmd + (["--sync"] * args.sync), capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(out.stderr)
            samples[impl].append(json.loads(out.stdout))
    print(f"{args.runs:,} concurrent runs{' (sync tool)' if args.sync else ''}, 3 samples each")
    for impl, rows in samples.items():
        row = sorted(rows, key=lambda r: r["cpu"])[1]  # the median by CPU
        total = sum(row["gc"])
        gens = ", ".join(
            f"gen{g} {n} x {s / max(n, 1) * 1000:.1f} ms"
            for g, (n, s) in enumerate(zip(row["collections"], row["gc"], strict=True))
        )
        print(
            f"  {impl:8} CPU {row['cpu']:.3f} s, collector {total:.3f} s "
            f"({total / row['cpu']:.0%}): {gens}"
        )
    print("objects tracked by the collector per ptcflow run waiting on its model:")
    for name, per_run in tracked_per_run(2_000):
        print(f"  {per_run:5.2f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
