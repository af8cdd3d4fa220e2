"""What production controls cost when configured but never triggered (issue 27).

The workload is runtime_overhead.py's sequential run (a two-turn ReAct run with one tool
call on ScriptedLLM). Runtimes that differ only in their controls, measured alternately
in the same process, median of repeats:

* **plain**: ``Runtime(llm=..., tools=...)`` (as ``_subject.make_runtime``);
* **controls**: the same with a generous ``UsageLimits`` budget on every run (requests,
  tool calls, tokens and dollars), the model inside a ``FallbackModel`` (a second model
  never called), a ``RateLimit`` far above the load and a price for the model;
  pass-through guardrails left out (they cost a thread hop per check by design: see
  docs/controls.md).

With ``--each``, also one control at a time: **requests** (a request and tool-call
budget), **price** (a price for the model: runs priced), **tokens** (a full budget with
tokens and dollars, so priced too), **fallback**, **rate** (a rate limit on the model).

Reports the CPU time per run of each and the ratio to plain; budget: controls within
1.10x. ``--instructions`` counts machine instructions per run under callgrind instead
(needs valgrind; load-independent, so it compares variants to a fraction of a percent on
a shared machine): the difference between 100 and 400 runs of each variant.

Usage::

    .venv/bin/python bench/controls_overhead.py                 # 2,000 runs x 7 repeats
    .venv/bin/python bench/controls_overhead.py --quick         # a few seconds
    .venv/bin/python bench/controls_overhead.py --each          # one control at a time too
    .venv/bin/python bench/controls_overhead.py --instructions  # callgrind, ~1 min a variant
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _subject  # noqa: E402
from ptcflow import FallbackModel, ModelPrice, RateLimit, UsageLimits  # noqa: E402
from ptcflow.runtime import Runtime  # noqa: E402
from ptcflow.strategies import ReAct  # noqa: E402
from ptcflow.testing import ScriptedLLM  # noqa: E402

GOAL_RATIO = 1.10
VARIANTS = ("plain", "controls")
EACH = ("requests", "price", "tokens", "fallback", "rate")
PRICE = {"scripted": ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)}
FULL_BUDGET = UsageLimits(
    max_requests=1_000, max_tool_calls=1_000, max_total_tokens=10**9, max_cost_usd=1e6
)
FAST = RateLimit(requests_per_minute=10**9, tokens_per_minute=10**12)


def make(variant: str | bool) -> Runtime:
    """The Runtime of ``variant`` (``True``: ``"controls"``, ``False``: ``"plain"``)."""
    if isinstance(variant, bool):
        variant = "controls" if variant else "plain"
    llm: Any = ScriptedLLM(_subject.answer, record=False)
    tools = {"add": _subject.add}
    options: dict[str, Any] = {}
    if variant in ("controls", "fallback"):
        llm = FallbackModel(llm, ScriptedLLM(_subject.answer, record=False, model="spare"))
    if variant == "controls":
        options = {
            "usage_limits": FULL_BUDGET,
            "rate_limits": {"fallback": FAST},
            "prices": PRICE,
        }
    elif variant == "requests":
        options = {"usage_limits": UsageLimits(max_requests=1_000, max_tool_calls=1_000)}
    elif variant == "price":
        options = {"prices": PRICE}
    elif variant == "tokens":
        options = {"usage_limits": FULL_BUDGET, "prices": PRICE}
    elif variant == "rate":
        options = {"rate_limits": {"scripted": FAST}}
    elif variant not in ("plain", "fallback"):
        raise SystemExit(f"unknown variant {variant!r}")
    return Runtime(llm=llm, tools=tools, **options)


async def cpu_per_run(variant: str | bool, runs: int) -> float:
    """CPU µs per sequential run (after warm-up runs)."""
    rt = make(variant)
    strategy = ReAct()
    async with rt:
        for _ in range(min(runs, 200)):
            step = await rt.run(strategy, _subject.QUESTION)
        if step.value != "5":
            raise AssertionError(f"benchmark run went wrong: {step!r}")
        cpu = time.process_time()
        for _ in range(runs):
            await rt.run(strategy, _subject.QUESTION)
        return (time.process_time() - cpu) / runs * 1e6


WORKLOAD = """
import sys, time, types
import anyio
sys.path.insert(0, {bench!r})
import _subject
import controls_overhead
import ptcflow.signals._signal as signal_module
frozen = types.SimpleNamespace(**{{k: getattr(time, k) for k in dir(time) if not k.startswith("__")}})
frozen.time_ns = lambda: 1_800_000_000_000_000_000
signal_module.time = frozen  # as _instructions.py: the id and time text refresh once

async def main(variant: str, n: int) -> None:
    rt = controls_overhead.make(variant)
    strategy = controls_overhead.ReAct()
    async with rt:
        for _ in range(n):
            await rt.run(strategy, _subject.QUESTION)

anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""


def instructions(variants: tuple[str, ...]) -> dict[str, float]:
    """Instructions per run of each variant under callgrind (400 runs minus 100)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    counts: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "workload.py"
        script.write_text(WORKLOAD.format(bench=str(HERE)))
        for variant in variants:
            totals = []
            for n in (100, 400):
                out = Path(tmp) / f"{variant}-{n}.out"
                cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
                cmd += [sys.executable, str(script), variant, str(n)]
                subprocess.run(cmd, check=True, env=env, capture_output=True)
                found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
                if found is None:
                    raise RuntimeError(f"no instruction total in {out}")
                totals.append(int(found.group(1)))
            counts[variant] = (totals[1] - totals[0]) / 300
            print(f"  {variant:9s} {counts[variant]:10,.0f} instructions/run", flush=True)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--each", action="store_true", help="one control at a time too")
    parser.add_argument("--instructions", action="store_true", help="callgrind counts")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    variants = VARIANTS + (EACH if args.each else ())
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("valgrind is not installed: nothing measured")
            return
        measured = instructions(variants)
        unit = "instructions/run"
    else:
        runs, repeats = (300, 3) if args.quick else (args.runs, args.repeats)
        samples: dict[str, list[float]] = {v: [] for v in variants}
        for i in range(repeats):  # alternate, so a noisy neighbour slows all alike
            order = variants if i % 2 == 0 else tuple(reversed(variants))
            for variant in order:
                samples[variant].append(anyio.run(cpu_per_run, variant, runs))
        measured = {v: statistics.median(s) for v, s in samples.items()}
        unit = f"µs CPU/run (median of {repeats} x {runs} runs)"
    plain = measured["plain"]
    print(f"plain    {plain:12,.1f} {unit}")
    for variant in variants[1:]:
        value = measured[variant]
        print(f"{variant:8s} {value:12,.1f}  {value / plain:.3f}x  (+{value - plain:,.1f})")
    ratio = measured["controls"] / plain
    verdict = "PASS" if ratio <= GOAL_RATIO else "MISS"
    print(f"controls / plain = {ratio:.3f}x (goal <= {GOAL_RATIO:.2f}x) {verdict}")


if __name__ == "__main__":
    main()
