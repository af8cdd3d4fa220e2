"""The fault soak: many runs on one Runtime with faulted models and tools, cancelled from
outside, checked for the runtime's promises.

Each run is a ReAct agent with its own seeded script: about 30% of its model turns fault
(timeout, HTTP 429, 5xx, malformed output, a hang past the deadline) and its tool calls
go to tools that fail, hang, block a worker thread, or raise a stray ``CancelledError``
(asyncio). About 30% of runs are cancelled from outside (their handle, or the caller's
cancel scope) at a random moment; every run has a mission deadline (20 to 500 ms), which
ends what hangs. Every run is recorded and checked:

* it ends (no hang), with exactly one end signal, last;
* every directive has exactly one terminal signal (no orphan, no duplicate), before the
  end signal, and a tool's ``ai.tool.started`` comes before its ``ai.tool.result``;
* ``seq`` increases strictly; every signal survives the journal unchanged;

and after all runs: nothing in flight, no run active, no task left over, and the Runtime
still runs an agent. ``tests/runtime/test_fault_soak.py`` runs a few hundred runs per
backend; this script runs the full size and prints the figures (bench/README.md).

Usage::

    .venv/bin/python bench/fault_soak.py                 # 1,000 runs per backend
    .venv/bin/python bench/fault_soak.py --runs 300 --seed 7 --backend trio
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio

from ptcflow.runtime import Limits, Runtime, Step
from ptcflow.signals import (
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    TERMINAL_TYPES,
    TOOL_RESULT,
    TOOL_STARTED,
    decode_signal,
    encode_signal,
)
from ptcflow.strategies import ReAct
from ptcflow.testing import Recording, ScriptedLLM, ScriptItem
from ptcflow.tools import tool

__all__ = ("SoakReport", "main", "soak")

RUN_DEADLINE_S = 10.0
"""A run that takes longer has hung: a violation."""


@dataclass
class SoakReport:
    """What the soak saw."""

    backend: str
    runs: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    cancelled_from_outside: int = 0
    directives: int = 0
    signals: int = 0
    violations: list[str] = field(default_factory=list)
    leaked_tasks: int = 0
    abandoned_threads: int = 0
    late_results: int = 0
    seconds: float = 0.0
    rss_growth_kb: int = 0

    def summary(self) -> str:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.reasons.items()))
        return (
            f"{self.backend}: {self.runs} runs in {self.seconds:.1f} s ({reasons}); "
            f"{self.cancelled_from_outside} cancelled from outside; {self.directives} "
            f"directives, {self.signals} signals; {len(self.violations)} violations, "
            f"{self.leaked_tasks} leaked tasks; {self.late_results} late results dropped, "
            f"{self.abandoned_threads} threads still abandoned at the end; "
            f"peak RSS +{self.rss_growth_kb / 1024:.1f} MB"
        )


# -- tools ---------------------------------------------------------------------------------------


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def slow(ms: int) -> str:
    """Take a few milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slow"


def boom() -> str:
    """Fail."""
    raise RuntimeError("the tool failed")


async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "never"  # pragma: no cover


def block(ms: int) -> str:
    """Block a worker thread for a few milliseconds (the tool's own blocking I/O)."""
    threading.Event().wait(ms / 1000)
    return "blocked"


async def stray() -> str:
    """Raise a CancelledError nobody asked for (on asyncio: a future cancelled elsewhere)."""
    try:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    except RuntimeError:  # trio: an ordinary failure
        raise RuntimeError("no asyncio loop") from None
    future.cancel()
    return await future


TOOLS = [add, slow, boom, hang, tool(block, timeout_ms=15), stray]


def _call(rng: random.Random) -> Any:
    name = rng.choice(["add", "add", "slow", "boom", "hang", "block", "stray", "missing"])
    arguments: dict[str, Any] = {
        "add": {"x": rng.randint(0, 9), "y": rng.randint(0, 9)},
        "slow": {"ms": rng.randint(0, 5)},
        "block": {"ms": rng.randint(0, 30)},
    }.get(name, {})
    if rng.random() < 0.1:
        arguments = {"x": "not a number"}  # invalid arguments: a validation error
    return ScriptedLLM.tool_call(name, **arguments)


def _script(rng: random.Random) -> list[ScriptItem]:
    turns: list[ScriptItem] = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            turns.append(
                rng.choice(
                    [
                        ScriptedLLM.timeout(),
                        ScriptedLLM.rate_limited(retry_after=0.001),
                        ScriptedLLM.server_error(),
                        ScriptedLLM.malformed(),
                        ScriptedLLM.timeout(hang=True),
                    ]
                )
            )
        turns.append([_call(rng) for _ in range(rng.randint(1, 3))])
    turns.append("done")
    turns.extend(["done"] * 3)  # retries take turns too
    return turns


# -- one run -------------------------------------------------------------------------------------


async def _one(rt: Runtime, report: SoakReport, rng: random.Random, index: int) -> None:
    agent = Recording(
        ReAct(
            llm_max_retries=rng.choice([0, 1, 2]),
            llm_timeout_ms=rng.choice([None, 50]),
            tool_timeout_ms=rng.choice([None, None, 20]),
            max_iterations=5,
        )
    )
    llm = ScriptedLLM(_script(rng), latency=rng.random() * 0.002)
    timeout = rng.choice([0.02, 0.2, 0.5])  # hanging tools and models end with the deadline
    how = rng.random()
    step: Step | None = None
    with anyio.move_on_after(RUN_DEADLINE_S) as guard:
        if how < 0.15:  # cancelled through its handle
            handle = rt.start(agent, "go", llm=llm, timeout=timeout, record=True)
            await anyio.sleep(rng.random() * 0.005)
            handle.cancel()
            step = await handle.wait()
            report.cancelled_from_outside += 1
        elif how < 0.3:  # cancelled with the caller's scope
            with anyio.CancelScope() as outer:
                outer.deadline = anyio.current_time() + rng.random() * 0.005
                step = await rt.run(agent, "go", llm=llm, timeout=timeout, record=True)
            if outer.cancelled_caught:
                report.cancelled_from_outside += 1
                return  # the cancellation was re-raised to the caller: no Step
        else:
            step = await rt.run(agent, "go", llm=llm, timeout=timeout, record=True)
    if guard.cancelled_caught or step is None:
        report.violations.append(f"run {index} hung")
        return
    _check(report, step, agent, index)


def _check(report: SoakReport, step: Step, agent: Recording[Any], index: int) -> None:
    report.runs += 1
    report.reasons[step.reason] += 1
    signals = [s for s in step.signals if s.run_id == step.run_id]
    report.signals += len(signals)
    report.directives += len(agent.directives)
    problems: list[str] = []
    seqs = [s.seq for s in signals]
    if seqs != sorted(set(seqs)):
        problems.append("seq not strictly increasing")
    ends = [s for s in signals if s.type in (REQUEST_COMPLETED, REQUEST_FAILED)]
    if len(ends) != 1 or ends[0] is not signals[-1]:
        problems.append(f"{len(ends)} end signals, or not last")
    terminals: Counter[str] = Counter(
        str(s.call_id) for s in signals if s.type in TERMINAL_TYPES and s.call_id
    )
    ids = {d.id for d in agent.directives}
    for d in agent.directives:
        if terminals[d.id] != 1:
            problems.append(f"directive {d.id} has {terminals[d.id]} terminal signals")
    orphans = set(terminals) - ids
    if orphans:
        problems.append(f"terminals without a directive: {sorted(orphans)}")
    seen_started: set[str] = set()
    for s in signals:
        if s.type == TOOL_STARTED:
            seen_started.add(str(s.call_id))
        elif s.type == TOOL_RESULT and s.call_id in seen_started:
            seen_started.discard(str(s.call_id))
    if seen_started:
        problems.append(f"tool calls started without a result: {sorted(seen_started)}")
    for s in signals:
        if decode_signal(encode_signal(s)) != s:
            problems.append(f"{s.type} does not survive the journal")
            break
    report.violations.extend(f"run {index}: {p}" for p in problems)


# -- the soak ------------------------------------------------------------------------------------


async def soak(runs: int, seed: int, *, concurrency: int = 40) -> SoakReport:
    """Run ``runs`` faulted runs (``concurrency`` at a time) on one Runtime and check them."""
    import sniffio

    report = SoakReport(backend=sniffio.current_async_library())
    rng = random.Random(seed)
    rss_before = _peak_rss_kb()
    start = time.perf_counter()
    limits = Limits(sync_tool_threads=8)
    async with Runtime(tools=TOOLS, limits=limits) as rt:
        baseline = len(anyio.get_running_tasks())
        slots = anyio.Semaphore(concurrency)

        async def one(index: int, run_rng: random.Random) -> None:
            async with slots:
                await _one(rt, report, run_rng, index)

        async with anyio.create_task_group() as tg:
            for index in range(runs):
                tg.start_soon(one, index, random.Random(rng.random()))
        await anyio.lowlevel.checkpoint()
        report.leaked_tasks = max(0, len(anyio.get_running_tasks()) - baseline)
        stats = rt.statistics()
        if stats.in_flight or stats.runs_active:
            report.violations.append(f"after the soak: {stats}")
        after = await rt.run(ReAct(), "still there?", llm=ScriptedLLM(["yes"]))
        if after.value != "yes":
            report.violations.append(f"the Runtime no longer runs agents: {after}")
        report.abandoned_threads = stats.abandoned_threads
        report.late_results = stats.late_results
    report.seconds = time.perf_counter() - start
    report.rss_growth_kb = _peak_rss_kb() - rss_before
    return report


def _peak_rss_kb() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss // 1024 if sys.platform == "darwin" else rss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=1000, help="runs per backend")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    args = parser.parse_args(argv)
    backends = ("asyncio", "trio") if args.backend == "both" else (args.backend,)
    failed = False
    for backend in backends:
        report = anyio.run(soak, args.runs, args.seed, backend=backend)
        print(report.summary())
        for violation in report.violations[:20]:
            print("  VIOLATION", violation)
        failed = failed or bool(report.violations) or report.leaked_tasks > 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
