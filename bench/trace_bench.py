"""How fast the trace viewer shows a mission of 1,000 agent runs (~50,000 signals).

    .venv/bin/python bench/trace_bench.py                 # journal in a temp dir
    .venv/bin/python bench/trace_bench.py --journal big.jsonl --keep
    .venv/bin/python bench/trace_bench.py --no-browser

The mission: a planner delegates to 10 leads, each lead to 99 workers (1,001 runs: JSON-mode
SubAgents calling each other through ``as_tool``, so every call of an agent is a child run);
a worker makes 4 turns of 5 parallel tool calls, then answers. It runs on the scripted model
with no latency and is journaled with ``record_journal``.

Measured, each against the floor measured in the same invocation (reading the journal
with ``read_journal``, which any viewer has to do):

* ``ptcflow trace show`` as a command (a fresh interpreter: imports, read, fold, print);
* folding and formatting in-process (``Mission.from_journal`` + ``format_mission``);
* ``ptcflow trace open``'s page: writing it, then in headless Chromium the time to the
  first paint of the waterfall and the time a click on a bar takes to show its detail
  (skipped without Chromium and Playwright).

Budgets (issue 14): the command prints the mission in under 2 s; the page is interactive
(first paint and a click answered) within 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from ptcflow import MissionLimits, SubAgent
from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.signals import SignalBus, read_journal, record_journal
from ptcflow.testing import ScriptedLLM, ScriptItem, Turn
from ptcflow.trace import Mission, format_mission, write_page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


async def lookup(key: str) -> dict[str, Any]:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return {"key": key, "value": len(key)}


def _model(leads: int, workers: int, turns: int, calls: int) -> ScriptedLLM:
    def answer(request: LLMRequest) -> ScriptItem:
        task = next(m.content for m in request.messages if m.role == "user")
        done = sum(1 for m in request.messages if m.role == "assistant")
        if task.startswith("Plan"):
            if done == 0:
                return [ScriptedLLM.tool_call("lead", task=f"team {i}") for i in range(leads)]
            return '{"done": "all teams done"}'
        if task.startswith("Lead"):
            if done == 0:
                return [ScriptedLLM.tool_call("worker", task=f"task {i}") for i in range(workers)]
            return '{"done": "team done"}'
        if done < turns:
            return Turn(
                tool_calls=tuple(
                    ScriptedLLM.tool_call("lookup", key=f"k{done}-{i}") for i in range(calls)
                )
            )
        return '{"done": "worker done"}'

    return ScriptedLLM(answer, record=False)


def _agent(name: str, prompt: str, tools: list[Any], max_turns: int) -> SubAgent:
    return SubAgent(
        name=name,
        prompt=prompt,
        signature="(task :string) -> {done :string}",
        output="json",
        tools=tools,
        max_turns=max_turns,
    )


async def _record(path: Path, leads: int, workers: int, turns: int, calls: int) -> None:
    bus = SignalBus()
    worker = _agent("worker", "Work on {{task}}", [lookup], turns + 2)
    lead = _agent("lead", "Lead {{task}}", [worker.as_tool()], 3)
    planner = _agent("planner", "Plan {{task}}", [lead.as_tool()], 3)
    turn_budget = 2 * (1 + leads) + (turns + 1) * leads * workers
    llm = _model(leads, workers, turns, calls)
    async with (
        Runtime(llm=llm, bus=bus) as rt,
        record_journal(bus, path, buffer=1_000_000),
    ):
        step = await rt.run(
            planner,
            context={"task": "go"},
            run_id="big",
            mission_limits=MissionLimits(turn_budget=turn_budget),
        )
    assert step.ok, step.error


def make_journal(
    path: Path, *, leads: int = 10, workers: int = 99, turns: int = 4, calls: int = 5
) -> tuple[int, int]:
    """Journal the benchmark mission to ``path``; return (runs, signals)."""
    anyio.run(_record, path, leads, workers, turns, calls)
    signals = read_journal(path, all_runs=True)
    runs = len({s.run_id for s in signals})
    return runs, len(signals)


def _best(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_page(page: Path) -> dict[str, float]:
    """Open ``page`` in headless Chromium: milliseconds to the first paint of the waterfall
    (from navigation start), and for a click on a tool bar to show its detail."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 900})
        start = time.perf_counter()
        tab.goto(page.resolve().as_uri())
        tab.wait_for_selector("body[data-ready='1'] .row .bar")
        loaded = (time.perf_counter() - start) * 1000
        first_paint = tab.evaluate("ptcTrace.timings.firstPaint")
        target = tab.evaluate(
            "(() => { const n = [...ptcTrace.nodes.values()].filter(n => n.k === 'tool')[5000];"
            " ptcTrace.reveal(n.id); return n.id; })()"
        )
        bar = tab.locator(f'.row[data-id="{target}"] .bar')
        start = time.perf_counter()
        bar.click()
        tab.wait_for_selector("#detail h3:text('arguments')")
        clicked = (time.perf_counter() - start) * 1000
        in_page = tab.evaluate("ptcTrace.timings.click")
        browser.close()
    return {"first_paint": first_paint, "loaded": loaded, "click": clicked, "click_js": in_page}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journal", type=Path, help="use (or make) this journal")
    parser.add_argument("--keep", action="store_true", help="keep the journal and page")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--make-only", action="store_true", help="only write --journal")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ptcflow-trace-bench-"))
    journal = args.journal or folder / "mission.jsonl"
    if not journal.exists():
        start = time.perf_counter()
        runs, count = make_journal(journal)
        print(
            f"made {journal}: {runs} runs, {count} signals in {time.perf_counter() - start:.1f} s"
        )
    if args.make_only:
        folder.rmdir()
        return
    floor = _best(lambda: read_journal(journal, all_runs=True))
    size = journal.stat().st_size / 1e6
    print(f"floor: read_journal                {floor * 1000:7.0f} ms  ({size:.1f} MB)")

    def fold() -> None:
        format_mission(Mission.from_journal(journal))

    folded = _best(fold)
    print(
        f"fold + format in-process           {folded * 1000:7.0f} ms  ({folded / floor:.1f}x floor)"
    )
    cli = [sys.executable, "-m", "ptcflow.cli", "trace", "show", str(journal)]
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(cli, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
    show = min(walls)
    verdict = "meets" if show < 2 else "MISSES"
    print(
        f"ptcflow trace show (command)       {show * 1000:7.0f} ms  ({show / floor:.1f}x floor)"
        f"  {verdict} the 2 s budget"
    )
    page = folder / "mission.html"
    mission = Mission.from_journal(journal)
    written = _best(lambda: write_page(mission, page), repeat=1)
    print(
        f"write the page                     {written * 1000:7.0f} ms  "
        f"({page.stat().st_size / 1e6:.1f} MB, {len(mission.nodes)} bars)"
    )
    if args.no_browser or not Path(CHROMIUM).exists():
        print("browser: skipped (no --no-browser and /usr/bin/chromium needed)")
        return
    samples = [measure_page(page) for _ in range(3)]
    paint = statistics.median(s["first_paint"] for s in samples)
    click = statistics.median(s["click"] for s in samples)
    verdict = "meets" if paint + click < 2000 else "MISSES"
    print(f"page: first paint (from navigation) {paint:6.0f} ms  (median of 3)")
    print(
        f"page: click -> detail shown         {click:6.0f} ms  (in-page handler: {statistics.median(s['click_js'] for s in samples):.0f} ms)"
    )
    print(f"page: interactive in                {paint + click:6.0f} ms  {verdict} the 2 s budget")
    if not args.keep and args.journal is None:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
