"""What streaming a SubAgent run costs: ``stream=True`` against the same run not streamed.

The workload: a SubAgent on ``ScriptedLLM`` whose one program (about 40 chunks when
streamed) prints three times, calls ``add`` twice and returns. Runs go one after the other
on one Runtime whose bus has one subscriber; the variants:

* ``plain``: not streamed (``LLMGenerate``; the output in the program's result only), the
  subscriber drains the signals (the baseline);
* ``stream``: ``stream=True``: ``LLMStream`` (one ``ai.llm.delta`` per chunk) and one
  ``ai.program.print`` per print, drained the same way;
* ``events``: ``stream=True`` read through ``rt.stream`` (each signal made a
  ``StreamEvent``, with its path) instead of a drain.

CPU time (``time.process_time``) per run; the ratio to ``plain`` is the median of each
round's ratio (the variants alternate within each round, so a noisy neighbour slows them
alike).

    .venv/bin/python bench/subagent_stream.py            # 11 rounds of 200 runs
    .venv/bin/python bench/subagent_stream.py --quick    # 3 rounds of 50 runs
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import anyio

from ptcflow import SubAgent
from ptcflow.runtime import Runtime
from ptcflow.signals import SignalBus
from ptcflow.testing import ScriptedLLM

PROGRAM = (
    "```clojure\n"
    '(println "adding the first pair")\n'
    '(def a (call "add" {:x 2 :y 3}))\n'
    '(println "then the second pair")\n'
    '(def b (call "add" {:x a :y 10}))\n'
    '(println "the total is" b)\n'
    "(return {:total b :parts [a b]})\n"
    "```"
)
VARIANTS = ("plain", "stream", "events")


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def agent(stream: bool) -> SubAgent:
    return SubAgent(
        prompt="Add the pairs",
        signature="() -> {total :int, parts [:int]}",
        tools=[add],
        name="adder",
        stream=stream,
    )


async def _drain(bus: SignalBus) -> None:
    async with bus.subscribe("**", buffer=1 << 16) as signals:
        async for _ in signals:
            for _ in signals.drain_nowait():
                pass


async def _measure(variant: str, runs: int) -> float:
    """CPU seconds per run."""
    bus = SignalBus()
    subject = agent(stream=variant != "plain")
    rt = Runtime(llm=ScriptedLLM([PROGRAM] * (runs + 20)), bus=bus)
    async with rt, anyio.create_task_group() as tg:
        if variant != "events":
            tg.start_soon(_drain, bus)
            await anyio.wait_all_tasks_blocked()

        async def one(n: int) -> None:
            if variant == "events":
                async with rt.stream(subject, run_id=f"r{n}") as events:
                    async for _ in events:
                        pass
                step = events.step
            else:
                step = await rt.run(subject, run_id=f"r{n}")
            assert step is not None and step.ok, step

        for n in range(20):  # warm-up
            await one(-n - 1)
        gc.collect()
        start = time.process_time()
        for n in range(runs):
            await one(n)
        spent = time.process_time() - start
        bus.close()
    return spent / runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 50 runs")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 11)
    runs = args.runs or (50 if args.quick else 200)
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            samples[variant].append(anyio.run(_measure, variant, runs))
    base = statistics.median(samples["plain"])
    print(f"subagent_stream: {rounds} rounds x {runs} SubAgent runs (one program, 3 prints)")
    print(f"{'variant':<10}{'CPU µs/run':>12}{'ratio':>8}{'min..max':>14}")
    for variant, values in samples.items():
        ratios = [v / p for v, p in zip(values, samples["plain"], strict=True)]
        spread = f"{min(ratios):.2f}..{max(ratios):.2f}"
        cpu = statistics.median(values) * 1e6
        print(f"{variant:<10}{cpu:>12.1f}{statistics.median(ratios):>8.2f}{spread:>14}")
    print(f"(plain median {base * 1e6:.1f} µs/run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
