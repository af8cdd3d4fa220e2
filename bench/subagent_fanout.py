"""1,000 concurrent missions: an orchestrator calling 3 sub-agents as tools in one program.

    .venv/bin/python bench/subagent_fanout.py [--missions 1000] [--latency 0.05] [--repeats 3]

Each mission is an orchestrator SubAgent whose one program is
``(return (pmap #(call % {:text ctx/text}) ["count" "measure" "weigh"]))``: three agents used
as tools, each a child run answering in one turn. Every model call takes ``--latency``
seconds (a scripted model sleeping on the event loop). The critical path of a mission is
2 turns (the orchestrator's, then its three children's at once), so its floor is
``2 x latency``. Reported, from the same run:

* wall time of all missions against that critical path (goal <= 1.5x), and against a
  plain-asyncio floor doing the same sleeps in the same shape (1 + 3 parallel per mission);
* peak RSS growth per mission (``ru_maxrss`` before and after, so a first run in a fresh
  process is the honest one);
* the process's CPU time per agent turn (4 turns per mission), the runtime's own cost next
  to the model's latency, and as a ratio to the same number of turns run as independent
  one-turn agents (what calling agents as tools adds).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time
from typing import Final

import anyio

from ptcflow import SubAgent
from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.testing import ScriptedLLM

GOAL: Final = 1.5
KINDS: Final = {"Count": 1, "Measure": 10, "Weigh": 100}
LEAVES: Final = [
    SubAgent(prompt=f"{kind} {{{{text}}}}", signature="(text :string) -> :int", name=kind.lower())
    for kind in KINDS
]
ORCHESTRATOR: Final = SubAgent(
    prompt="Survey {{text}}",
    signature="(text :string) -> [:int]",
    tools=[leaf.as_tool() for leaf in LEAVES],
    name="surveyor",  # its program waits for its agents: not counted in its time limit
)
PROGRAM: Final = '(return (pmap #(call % {:text ctx/text}) ["count" "measure" "weigh"]))'


def model(request: LLMRequest) -> str:
    """The scripted model of the orchestrator and its three sub-agents."""
    task = next(m.content for m in request.messages if m.role == "user")
    if task.startswith("Survey"):
        return PROGRAM
    kind, text = task.split(" ", 1)
    return f"(return {len(text) * KINDS[kind]})"


async def missions(n: int, latency: float) -> tuple[float, float, int]:
    """Run ``n`` missions at once; return (wall seconds, CPU seconds, model calls)."""
    llm = ScriptedLLM(model, record=False, latency=latency)
    failed: list[str] = []
    async with Runtime(llm=llm) as rt:

        async def one(i: int) -> None:
            text = "x" * (i % 7 + 1)
            step = await rt.run(ORCHESTRATOR, context={"text": text}, trace=False)
            k = i % 7 + 1
            if not (step.ok and step.value == [k, 10 * k, 100 * k]):
                failed.append(f"mission {i}: {step.reason} {step.fail}")

        cpu, start = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if failed:
        raise SystemExit(f"{len(failed)} missions failed, e.g. {failed[0]}")
    return wall, cpu, llm.calls


async def plain(n: int, latency: float) -> tuple[float, float]:
    """The same 4 x ``n`` agent turns as independent one-turn SubAgent runs (no agent
    calls another): (wall seconds, CPU seconds). What composition adds is the difference."""
    llm = ScriptedLLM(model, record=False, latency=latency)
    async with Runtime(llm=llm) as rt:

        async def one(i: int) -> None:
            step = await rt.run(LEAVES[i % 3], context={"text": "x" * (i % 7 + 1)}, trace=False)
            if not step.ok:
                raise SystemExit(f"plain run {i} failed: {step.fail}")

        cpu, start = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(4 * n):
                tg.start_soon(one, i)
        return time.perf_counter() - start, time.process_time() - cpu


async def floor(n: int, latency: float) -> float:
    """The same sleeps in plain asyncio: per mission one, then three at once."""

    async def mission() -> None:
        await asyncio.sleep(latency)
        await asyncio.gather(*(asyncio.sleep(latency) for _ in range(3)))

    start = time.perf_counter()
    await asyncio.gather(*(mission() for _ in range(n)))
    return time.perf_counter() - start


def main() -> None:
    """Measure and print (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, latency = args.missions, args.latency
    critical = 2 * latency
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    runs = [anyio.run(missions, n, latency) for _ in range(args.repeats)]
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    floors = [asyncio.run(floor(n, latency)) for _ in range(args.repeats)]
    plains = [anyio.run(plain, n, latency) for _ in range(args.repeats)]
    plain_cpu = statistics.median(p[1] for p in plains)
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    turns = runs[0][2]
    base = statistics.median(floors)
    ratio = wall / critical
    verdict = "ok" if ratio <= GOAL else "OVER BUDGET"
    print(
        f"{n} missions x (1 orchestrator + 3 sub-agents as tools), model latency {latency * 1000:.0f} ms"
    )
    print(f"  critical path       {critical * 1000:8.1f} ms  (2 turns x latency)")
    print(f"  plain-asyncio floor {base * 1000:8.1f} ms  ({base / critical:.2f}x critical path)")
    print(f"  ptcflow wall        {wall * 1000:8.1f} ms  (median of {args.repeats})")
    print(f"  wall / critical path: {ratio:.2f}x  goal <= {GOAL}x: {verdict}")
    print(f"  wall / asyncio floor: {wall / base:.2f}x")
    print(f"  CPU per agent turn: {cpu / turns * 1e6:.0f} µs  ({turns} turns, {cpu:.2f} s CPU)")
    print(
        f"  same turns as {4 * n} independent one-turn agents: "
        f"{plain_cpu / turns * 1e6:.0f} µs CPU per turn; composition: "
        f"{cpu / plain_cpu:.2f}x that"
    )
    print(f"  peak RSS growth per mission: {(rss_after - rss_before) / n:.1f} KiB")


if __name__ == "__main__":
    main()
