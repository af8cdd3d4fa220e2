"""Where a ptcflow run's time goes: each component timed alone, the rest by difference.

Run: ``.venv/bin/python bench/_breakdown.py [runs]``. Components of the benchmark's
two-turn run (see runtime_overhead.py), in CPU µs per run (median of 5 interleaved rounds):

- whole run: ``Runtime.run`` of ReAct on ScriptedLLM with the async ``add`` tool;
- strategy: ReAct's ``init`` + ``handle`` for every signal of a recorded run (``replay``);
- model: ``ScriptedLLM.generate`` for the run's two requests (no latency: no loop cycle);
- tool: ``ptcflow.tools.call_tool`` of the ``add`` call (what the runtime calls);
- signals: ``stamp()`` + ``Signal(...)`` for the run's signals, as ``RunScope.emit`` does;
- runtime machinery: the rest (executor, run scope, anyio tasks/scopes/events, terminals).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _subject
from ptcflow.signals import Signal, ToolSpec
from ptcflow.signals._signal import stamp
from ptcflow.strategies import ReAct, replay
from ptcflow.tools import call_tool, tool


async def cpu_us(runs: int, body: Callable[[], Awaitable[Any]]) -> float:
    start = time.process_time()
    for _ in range(runs):
        await body()
    return (time.process_time() - start) / runs * 1e6


async def main(runs: int) -> dict[str, float]:
    rt, llm = _subject.make_runtime()
    llm.record = True  # record this time: the model is timed on the run's own requests
    strategy = ReAct()
    samples: dict[str, list[float]] = {}
    async with rt:
        step = await rt.run(strategy, _subject.QUESTION, record=True)
        signals = step.signals
        requests = list(llm.requests)
        tools = [tool(_subject.add)]
        specs = tuple(
            ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in tools
        )
        arguments = {"x": 2, "y": 3}

        async def whole() -> None:
            await rt.run(strategy, _subject.QUESTION)

        async def strategy_only() -> None:
            replay(strategy, signals, tools=specs)

        async def model_only() -> None:
            for r in requests:
                await llm.generate(r)

        async def tool_only() -> None:
            await call_tool(tools[0], "call_1", arguments)

        async def signals_only() -> None:
            for s in signals:  # what RunScope.emit does: one stamp(), one Signal(...)
                id, now = stamp()
                Signal(
                    type=s.type,
                    source="ptcflow",
                    id=id,
                    time=now,
                    data=s.data,
                    run_id=s.run_id,
                    request_id=s.request_id,
                    call_id=s.call_id,
                    iteration=s.iteration,
                    seq=s.seq,
                    parent_run_id=None,
                    causation_id=s.causation_id,
                    traceparent=None,
                )

        parts = {
            "whole run": whole,
            "strategy (ReAct init+handle)": strategy_only,
            "model (ScriptedLLM.generate x2)": model_only,
            "tool (tools.call_tool add)": tool_only,
            f"signals (stamp + Signal x{len(signals)})": signals_only,
        }
        for _ in range(5):
            for name, body in parts.items():
                samples.setdefault(name, []).append(await cpu_us(runs, body))
                llm.requests.clear()
    result = {k: statistics.median(v) for k, v in samples.items()}
    result["runtime machinery (the rest)"] = 2 * result["whole run"] - sum(result.values())
    return result


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    figures = anyio.run(main, n)
    whole = figures["whole run"]
    for name, value in figures.items():
        print(f"{name:<36}{value:8.1f} µs CPU/run  {value / whole * 100:5.1f}%")
