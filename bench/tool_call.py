"""Benchmark: one tool call from the runtime, ``call_tool`` against the ``dispatch`` path.

The call is the runtime benchmark's (``runtime_overhead.py``): the model asks for
``add(x=2, y=3)`` of ``async def add(x: int, y: int) -> int``. Two ways to run it, each as
the runtime's per-call function (tool lookup included, the argument dict built per call):

- **dispatch path**: what ``runtime/_toolbox.py``'s ``Toolbox.call`` did before
  ``call_tool`` existed (a ``ToolContext`` only for tools that take one, a ``ToolCall``,
  ``await dispatch(...)``, ``result.to_result()``), copied here so the baseline stays put
  when the runtime moves on;
- **call_tool**: ``tools.get(name)`` then ``await call_tool(tool, call_id, arguments, ...)``.

Each repeat times ``--number`` calls of each way in CPU time (``time.process_time``),
alternating which goes first; the figures are medians over ``--repeats``. Also timed, to show
they cost no more than before: a call that needs a coercion (``{"x": "2", "y": 3}``, the
general path); and two more fast-path shapes: a call leaving optional parameters out
(``search(query="q")``, returning a list) and a tool taking a ``ToolContext``.

Run:  .venv/bin/python bench/tool_call.py [--repeats 15] [--number 20000] [--backend trio]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from ptcflow.signals import Err, Ok
from ptcflow.tools import Tool, ToolCall, ToolContext, call_tool, dispatch, for_agent

GOAL = 0.40  # call_tool's CPU time as a share of the dispatch path's, at most


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def search(query: str, limit: int = 10, exact: bool = False) -> list[str]:
    """Search (a stand-in returning a list)."""
    return [query] * min(limit, 2)


async def whoami(ctx: ToolContext, prefix: str) -> str:
    """Say who is calling."""
    return prefix + ctx.run_id


Call = Callable[[str, Mapping[str, Any], str], Awaitable["Ok[Any] | Err"]]


def make_calls(tools: dict[str, Tool], limiter: anyio.CapacityLimiter) -> dict[str, Call]:
    context_names = frozenset(n for n, t in tools.items() if t.context_param is not None)

    async def via_dispatch(name: str, arguments: Mapping[str, Any], call_id: str) -> Any:
        context = None
        if name in context_names:
            context = ToolContext(
                run_id="run-1", call_id=call_id, tool_name=name, state=None, metadata={}
            )
        call = ToolCall(id=call_id, name=name, input=dict(arguments))
        result = await dispatch(tools, call, context=context, limiter=limiter)
        return result.to_result()

    async def via_call_tool(name: str, arguments: Mapping[str, Any], call_id: str) -> Any:
        found = tools.get(name)
        if found is None:  # unknown tools stay dispatch's job (the error lists the names)
            return await via_dispatch(name, arguments, call_id)
        context = None
        if found.context_param is not None:
            context = ToolContext(
                run_id="run-1", call_id=call_id, tool_name=name, state=None, metadata={}
            )
        return await call_tool(found, call_id, arguments, context=context, limiter=limiter)

    return {"dispatch": via_dispatch, "call_tool": via_call_tool}


async def time_one(call: Call, name: str, make_args: Callable[[], dict[str, Any]], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        await call(name, make_args(), "call_1")
    return (time.process_time() - start) / n * 1e6


SCENARIOS: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "add(x=2, y=3)": ("add", lambda: {"x": 2, "y": 3}),
    'add(x="2", y=3), coerced': ("add", lambda: {"x": "2", "y": 3}),
    'search(query="q"), defaults': ("search", lambda: {"query": "q"}),
    "whoami(prefix=...), ToolContext": ("whoami", lambda: {"prefix": "p"}),
}


async def main(repeats: int, number: int) -> dict[str, dict[str, float]]:
    tools = for_agent([add, search, whoami])
    calls = make_calls(tools, anyio.CapacityLimiter(40))
    for call in calls.values():  # the same answers, and warm caches
        assert await call("add", {"x": 2, "y": 3}, "c") == Ok(payload=5)
    medians: dict[str, dict[str, float]] = {}
    for label, (name, make_args) in SCENARIOS.items():
        samples: dict[str, list[float]] = {way: [] for way in calls}
        for r in range(repeats):
            order = list(calls) if r % 2 == 0 else list(reversed(calls))
            for way in order:
                samples[way].append(await time_one(calls[way], name, make_args, number))
        medians[label] = {way: statistics.median(s) for way, s in samples.items()}
    return medians


def report(medians: dict[str, dict[str, float]], backend: str) -> bool:
    print(f"CPU µs per call (median), backend {backend}")
    print(f"{'scenario':36} {'dispatch path':>14} {'call_tool':>10} {'ratio':>7}")
    for label, m in medians.items():
        ratio = m["call_tool"] / m["dispatch"]
        print(f"{label:36} {m['dispatch']:14.2f} {m['call_tool']:10.2f} {ratio:7.2f}")
    common = medians["add(x=2, y=3)"]
    ratio = common["call_tool"] / common["dispatch"]
    verdict = "PASS" if ratio <= GOAL else "MISS"
    print(f"add(x=2, y=3): call_tool / dispatch path = {ratio:.2f} (goal <= {GOAL:.2f}): {verdict}")
    return ratio <= GOAL


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    result = anyio.run(main, args.repeats, args.number, backend=args.backend)
    raise SystemExit(0 if report(result, args.backend) else 1)
