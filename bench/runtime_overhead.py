"""ptcflow runtime overhead: a two-turn tool-calling run, as ratios to a plain-asyncio floor.

Turn 1 the scripted model asks for ``add(x=2, y=3)``; turn 2 it answers ``"5"``. Reports

(a) µs per run over sequential runs (default 2,000, median of repeats);
(b) wall time and peak RSS for 1,000 and 10,000 concurrent runs with 50 ms model latency,
    each scenario in its own subprocess (peak RSS from ``getrusage`` there);
(c) the same with the OpenTelemetry SDK on (in-memory span exporter and metric reader),
    against the floor recording the same spans and metrics by hand (the SDK's own cost);

each next to the hand-written floor (bench/_floor.py) measured in the same invocation.

Usage::

    .venv/bin/python bench/runtime_overhead.py            # full run, ~2 minutes
    .venv/bin/python bench/runtime_overhead.py --quick    # CI smoke, a few seconds
    .venv/bin/python bench/runtime_overhead.py --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

GOAL_US_PER_RUN = 60.0
GOAL_WALL_RATIO = 2.0
GOAL_KB_PER_RUN = 10.0
GOAL_OTEL_RATIO = 1.2  # ptcflow's OTel cost over the SDK's own cost (with noise margin)
LATENCY = 0.05
SPANS_PER_RUN = 4  # invoke_agent, chat x2, execute_tool


def peak_rss_kb() -> int:
    """Peak resident set size of this process so far, in KiB (Linux reports KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss // 1024 if sys.platform == "darwin" else rss


# -- workers (each runs in its own subprocess for a clean peak RSS) ---------------------------


def worker(impl: str, runs: int, latency: float, otel: bool) -> dict[str, Any]:
    """Run one concurrent scenario and return wall time and peak RSS growth."""
    if impl == "floor":
        import _floor

        traced = None
        if otel:
            import _subject

            _, _, (tp, mp) = _subject.otel_telemetry()
            traced = _floor.Traced(tp, mp)

        async def scenario(n: int) -> float:
            return await _floor.concurrent(n, latency, traced)

        def go(n: int) -> float:
            return asyncio.run(scenario(n))

    else:
        import anyio

        import _subject

        def go(n: int) -> float:
            telemetry = _subject.otel_telemetry()[0] if otel else None

            async def main() -> float:
                return await _subject.concurrent(n, latency, telemetry=telemetry)

            result: float = anyio.run(main)
            return result

    go(min(50, runs))  # warm-up: imports, caches, first-use allocations
    gc.collect()
    before = peak_rss_kb()
    wall = go(runs)
    after = peak_rss_kb()
    return {"wall_s": wall, "rss_before_kb": before, "rss_after_kb": after}


def spawn(impl: str, runs: int, latency: float, otel: bool) -> dict[str, Any]:
    """Run :func:`worker` in a fresh interpreter and return its JSON result."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", impl, "--runs", str(runs)]
    cmd += ["--latency", str(latency)] + (["--otel"] if otel else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- scenarios --------------------------------------------------------------------------------


def sequential_all(runs: int, repeats: int) -> dict[str, float]:
    """(a) and (c)-sequential: median µs per run of each implementation, interleaved."""
    import anyio

    import _floor
    import _subject

    samples: dict[str, list[float]] = {
        k: [] for k in ("floor", "ptcflow", "ptcflow_sync_tool", "floor_otel", "ptcflow_otel")
    }
    for _ in range(repeats):
        samples["floor"].append(asyncio.run(_floor.sequential(runs)))
        samples["ptcflow"].append(anyio.run(_subject.sequential, runs))
        samples["ptcflow_sync_tool"].append(
            anyio.run(functools.partial(_subject.sequential, runs, sync_tool=True))
        )
        _, _, (tp, mp) = _subject.otel_telemetry()
        traced = _floor.Traced(tp, mp)
        samples["floor_otel"].append(asyncio.run(_floor.sequential(runs, traced)))
        telemetry, exporter, _ = _subject.otel_telemetry()
        samples["ptcflow_otel"].append(
            anyio.run(functools.partial(_subject.sequential, runs, telemetry=telemetry))
        )
        spans = len(exporter.get_finished_spans())
        if spans != (runs + 1) * SPANS_PER_RUN:
            raise AssertionError(f"expected {SPANS_PER_RUN} spans per run, got {spans}")
        gc.collect()
    return {k: statistics.median(v) for k, v in samples.items()}


def concurrent_all(sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """(b) and (c)-concurrent: median wall time and peak RSS growth per scenario."""
    rows = []
    for otel in (False, True):
        for n in sizes:
            row: dict[str, Any] = {"runs": n, "otel": otel}
            for impl in ("floor", "ptcflow"):
                results = [spawn(impl, n, LATENCY, otel) for _ in range(repeats)]
                row[f"{impl}_wall_s"] = statistics.median(r["wall_s"] for r in results)
                growth = statistics.median(r["rss_after_kb"] - r["rss_before_kb"] for r in results)
                row[f"{impl}_rss_kb"] = growth
                row[f"{impl}_peak_rss_kb"] = statistics.median(r["rss_after_kb"] for r in results)
            row["wall_ratio"] = row["ptcflow_wall_s"] / row["floor_wall_s"]
            row["kb_per_run_above_floor"] = (row["ptcflow_rss_kb"] - row["floor_rss_kb"]) / n
            rows.append(row)
    return rows


# -- report -----------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def report(seq: dict[str, float], conc: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "ptcflow runtime overhead: two-turn run (add(x=2, y=3), then '5'), asyncio backend",
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"{'quick smoke' if args.quick else 'full'} run; medians of {args.repeats} repeats",
        "",
        f"(a) sequential, {args.runs} runs per repeat",
        f"    floor (plain asyncio)        {seq['floor']:9.1f} µs/run",
        f"    ptcflow                      {seq['ptcflow']:9.1f} µs/run   "
        f"{seq['ptcflow'] / seq['floor']:6.1f}x floor   goal <= {GOAL_US_PER_RUN:.0f} µs: "
        f"{verdict(seq['ptcflow'] <= GOAL_US_PER_RUN)}",
        f"    ptcflow, sync tool (thread)  {seq['ptcflow_sync_tool']:9.1f} µs/run",
        "",
        f"(b) concurrent, {LATENCY * 1000:.0f} ms model latency, one subprocess per scenario",
    ]
    header = (
        "    runs    floor wall  ptcflow wall  ratio   floor RSS   ptcflow RSS   KB/run above floor"
    )

    def rows(otel: bool) -> list[str]:
        out = [header]
        for r in conc:
            if r["otel"] is not otel:
                continue
            ok = (
                r["wall_ratio"] <= GOAL_WALL_RATIO
                and r["kb_per_run_above_floor"] <= GOAL_KB_PER_RUN
            )
            out.append(
                f"    {r['runs']:>6,}  {r['floor_wall_s']:9.3f} s  {r['ptcflow_wall_s']:10.3f} s"
                f"  {r['wall_ratio']:5.2f}x  {r['floor_rss_kb'] / 1024:7.1f} MB  "
                f"{r['ptcflow_rss_kb'] / 1024:9.1f} MB  {r['kb_per_run_above_floor']:8.2f}"
                f"   {verdict(ok)}"
            )
        return out

    lines += rows(False)
    lines.append(
        f"    goal: the largest size within {GOAL_WALL_RATIO:.0f}x the floor's wall time and "
        f"<= {GOAL_KB_PER_RUN:.0f} KB/run above it (RSS = peak growth during the scenario)"
    )
    sdk_cost = seq["floor_otel"] - seq["floor"]
    our_cost = seq["ptcflow_otel"] - seq["ptcflow"]
    lines += [
        "",
        "(c) OpenTelemetry SDK on (in-memory span exporter + metric reader)",
        f"    floor + hand-written spans   {seq['floor_otel']:9.1f} µs/run   "
        f"(SDK's own cost {sdk_cost:.1f} µs/run = {SPANS_PER_RUN} spans + 3 metric points)",
        f"    ptcflow + Telemetry          {seq['ptcflow_otel']:9.1f} µs/run   "
        f"{seq['ptcflow_otel'] / seq['floor_otel']:6.1f}x floor   OTel adds {our_cost:.1f} µs/run"
        f" = {our_cost / sdk_cost if sdk_cost > 0 else float('nan'):.2f}x the SDK's own cost   "
        f"goal <= {GOAL_OTEL_RATIO:.1f}x: {verdict(our_cost <= GOAL_OTEL_RATIO * sdk_cost)}",
    ]
    lines += rows(True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (CI)")
    parser.add_argument("--runs", type=int, default=None, help="sequential runs per repeat")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (median reported)")
    parser.add_argument("--sizes", type=str, default=None, help="concurrent sizes, e.g. 1000,10000")
    parser.add_argument("--json", type=Path, default=None, help="also write results as JSON")
    parser.add_argument("--worker", choices=("floor", "ptcflow"), help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=LATENCY, help=argparse.SUPPRESS)
    parser.add_argument("--otel", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        print(json.dumps(worker(args.worker, args.runs, args.latency, args.otel)))
        return 0

    if args.runs is None:
        args.runs = 200 if args.quick else 2000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    if sizes is None:
        sizes = [100, 500] if args.quick else [1000, 10000]
    # Concurrent scenarios first, while this process is small: Linux carries a process's
    # peak RSS over fork+exec, so a child spawned after the sequential part would inherit
    # this process's high-water mark instead of starting from its own.
    conc = concurrent_all(sizes, 1 if args.quick else 3)
    seq = sequential_all(args.runs, args.repeats)
    print(report(seq, conc, args))
    if args.json:
        args.json.write_text(json.dumps({"sequential_us": seq, "concurrent": conc}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
