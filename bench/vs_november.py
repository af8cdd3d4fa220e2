"""This tree against another git ref's, side by side: the two-turn ReAct run of issue 23.

Run: ``.venv/bin/python bench/vs_november.py [--ref d3d3e15] [--rounds 3] [--runs 20000]``.
The other subject is ``git archive REF src`` unpacked into a temporary directory; each
sample runs in a fresh interpreter with its subject's ``src`` first on ``PYTHONPATH`` (the
worker checks which ``ptcflow`` it imported), and the two subjects alternate sample by
sample, so a slow minute slows both. The workload (turn 1 the scripted model asks for
``add(x=2, y=3)``, the ``async def`` tool runs, turn 2 it answers ``"5"``) uses only names
both versions export publicly: ``Runtime``, ``ReAct``, ``ScriptedLLM``.

Three rows, each the median over the rounds, with the ratio this tree / the ref:

- sequential µs per run (wall and CPU): ``--runs`` runs one after the other on one Runtime,
  after 200 untimed warm-up runs;
- ``--concurrent`` runs started at once (50 ms model latency), wall seconds;
- the same scenario's peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the worker
  at its end; the growth during the scenario, after imports and 50 warm-up runs, beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTION = "What is 2 + 3?"
LATENCY = 0.05
WARM_UP = 200


# -- the worker: runs in a fresh interpreter with one subject's src first on the path ----------


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def answer(request: Any) -> Any:
    """Turn 1: ask for add(x=2, y=3); turn 2 (after the tool result): answer "5"."""
    from ptcflow.testing import ScriptedLLM

    if request.messages[-1].role == "tool":
        return "5"
    return ScriptedLLM.tool_call("add", x=2, y=3)


def make_runtime(latency: float) -> Any:
    from ptcflow import Runtime
    from ptcflow.testing import ScriptedLLM

    llm = ScriptedLLM(answer, latency=latency, record=False)  # keeps no conversations alive
    return Runtime(llm=llm, tools={"add": add})


async def sequential(runs: int) -> dict[str, float]:
    from ptcflow import ReAct

    rt, strategy = make_runtime(0.0), ReAct()
    async with rt:
        for _ in range(WARM_UP):
            step = await rt.run(strategy, QUESTION)
        if step.value != "5":
            raise AssertionError(f"benchmark run went wrong: {step!r}")
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(runs):
            await rt.run(strategy, QUESTION)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall_us": wall / runs * 1e6, "cpu_us": cpu / runs * 1e6}


async def concurrent(runs: int) -> dict[str, float]:
    import asyncio

    from ptcflow import ReAct

    rt, strategy = make_runtime(LATENCY), ReAct()
    steps: list[Any] = []

    async def one() -> None:
        steps.append(await rt.run(strategy, QUESTION))

    async with rt:
        wall, cpu = time.perf_counter(), time.process_time()
        async with asyncio.TaskGroup() as tg:
            for _ in range(runs):
                tg.create_task(one())
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if sum(step.value != "5" for step in steps):
        raise AssertionError("a concurrent run went wrong")
    return {"wall_s": wall, "cpu_s": cpu}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def worker(kind: str, runs: int, src: str) -> dict[str, Any]:
    import asyncio
    import gc

    import ptcflow

    if not Path(ptcflow.__file__).resolve().is_relative_to(Path(src).resolve()):
        raise SystemExit(f"imported {ptcflow.__file__}, expected one under {src}")
    if kind == "seq":
        return asyncio.run(sequential(runs))
    asyncio.run(concurrent(50))  # imports, caches, first-use allocations
    gc.collect()
    before = peak_rss_mb()
    result = asyncio.run(concurrent(runs))
    return {**result, "peak_rss_mb": peak_rss_mb(), "rss_growth_mb": peak_rss_mb() - before}


# -- the driver --------------------------------------------------------------------------------


def spawn(kind: str, runs: int, src: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--worker", kind, "--runs", str(runs), "--src", str(src)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"worker failed ({src}):\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="d3d3e15", help="the other subject (a git ref)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating sequential samples")
    parser.add_argument("--runs", type=int, default=20_000, help="sequential runs per sample")
    parser.add_argument("--concurrent", type=int, default=10_000, help="runs started at once")
    parser.add_argument("--concurrent-rounds", type=int, default=3)
    parser.add_argument("--worker", choices=("seq", "conc"), help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.runs, args.src)))
        return 0

    repo = HERE.parent
    with tempfile.TemporaryDirectory(prefix="ptcflow-ref-") as tmp:
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", args.ref],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", sha, "src"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        subjects = {sha: Path(tmp) / "src", "this tree": repo / "src"}
        seq: dict[str, list[dict[str, Any]]] = {name: [] for name in subjects}
        conc: dict[str, list[dict[str, Any]]] = {name: [] for name in subjects}
        for _ in range(args.concurrent_rounds):  # first: see runtime_overhead.py on peak RSS
            for name, src in subjects.items():
                conc[name].append(spawn("conc", args.concurrent, src))
        for _ in range(args.rounds):
            for name, src in subjects.items():
                seq[name].append(spawn("seq", args.runs, src))

    def median(rows: list[dict[str, Any]], key: str) -> float:
        return float(statistics.median(row[key] for row in rows))

    old, new = subjects
    table = [
        ("sequential µs/run, wall", seq, "wall_us", "8.1f"),
        ("sequential µs/run, CPU", seq, "cpu_us", "8.1f"),
        (f"{args.concurrent:,} concurrent, wall s", conc, "wall_s", "8.3f"),
        (f"{args.concurrent:,} concurrent, CPU s", conc, "cpu_s", "8.3f"),
        (f"{args.concurrent:,} concurrent, peak RSS MB", conc, "peak_rss_mb", "8.1f"),
        ("  (growth during the scenario, MB)", conc, "rss_growth_mb", "8.1f"),
    ]
    print(
        f"two-turn ReAct run, {args.rounds} x {args.runs:,} sequential, "
        f"{args.concurrent_rounds} x {args.concurrent:,} concurrent, alternating; medians; "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"  {'measure':38} {old:>10} {new:>10}   ratio")
    for label, rows, key, fmt in table:
        a, b = median(rows[old], key), median(rows[new], key)
        ratio = f"{b / a:5.2f}x" if a > 0 else "  n/a"  # a tiny scenario may not grow RSS
        print(f"  {label:38} {a:10{fmt[1:]}} {b:10{fmt[1:]}}   {ratio}")
    for label, rows, key, _ in table[:1] + table[2:3]:
        spread = {n: ", ".join(f"{r[key]:.3g}" for r in rows[n]) for n in subjects}
        print(f"  samples, {label}: {old} [{spread[old]}]; this tree [{spread[new]}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
