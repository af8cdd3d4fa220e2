"""What production controls cost when configured but never triggered (issue 27).

The workload is runtime_overhead.py's sequential run (a two-turn ReAct run with one tool
call on ScriptedLLM). Two Runtimes, measured alternately in the same process, median of
repeats:

* **plain**: ``Runtime(llm=..., tools=...)`` (as ``_subject.make_runtime``);
* **controls**: the same with a generous ``UsageLimits`` budget on every run, the model
  inside a ``FallbackModel`` (a second model never called), a ``RateLimit`` far above the
  load, and pass-through input, output and tool guardrails left out (they cost a thread
  hop per check by design: see docs/controls.md).

Reports the CPU time per run of each and the ratio; budget: controls within 1.10x.

Usage::

    .venv/bin/python bench/controls_overhead.py            # 2,000 runs x 7 repeats
    .venv/bin/python bench/controls_overhead.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _subject  # noqa: E402
from ptcflow import FallbackModel, ModelPrice, RateLimit, UsageLimits  # noqa: E402
from ptcflow.runtime import Runtime  # noqa: E402
from ptcflow.strategies import ReAct  # noqa: E402
from ptcflow.testing import ScriptedLLM  # noqa: E402

GOAL_RATIO = 1.10


def make(controls: bool) -> Runtime:
    llm = ScriptedLLM(_subject.answer, record=False)
    tools = {"add": _subject.add}
    if not controls:
        return Runtime(llm=llm, tools=tools)
    spare = ScriptedLLM(_subject.answer, record=False, model="spare")
    return Runtime(
        llm=FallbackModel(llm, spare),
        tools=tools,
        usage_limits=UsageLimits(
            max_requests=1_000, max_tool_calls=1_000, max_total_tokens=10**9, max_cost_usd=1e6
        ),
        rate_limits={"fallback": RateLimit(requests_per_minute=10**9, tokens_per_minute=10**12)},
        prices={"scripted": ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)},
    )


async def cpu_per_run(controls: bool, runs: int) -> float:
    """CPU µs per sequential run (after warm-up runs)."""
    rt = make(controls)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    runs, repeats = (300, 3) if args.quick else (args.runs, args.repeats)
    plain: list[float] = []
    ctl: list[float] = []
    for i in range(repeats):  # alternate, so a noisy neighbour slows both alike
        order = (False, True) if i % 2 == 0 else (True, False)
        for controls in order:
            (ctl if controls else plain).append(anyio.run(cpu_per_run, controls, runs))
    p, c = statistics.median(plain), statistics.median(ctl)
    ratio = c / p
    verdict = "PASS" if ratio <= GOAL_RATIO else "MISS"
    print(f"plain    {p:8.1f} µs CPU/run  (median of {repeats} x {runs} runs)")
    print(f"controls {c:8.1f} µs CPU/run")
    print(f"controls / plain = {ratio:.3f}x (goal <= {GOAL_RATIO:.2f}x) {verdict}")


if __name__ == "__main__":
    main()
