"""A lower bound for the runtime: the benchmark's run as one hand-fused loop, no runtime.

Run: ``.venv/bin/python bench/_fused.py [runs]``. The loop does the work of a ptcflow run
with ptcflow's own data model -- ``ReAct``'s ``init``/``handle``/``outcome`` over the same
8 ``Signal`` s with the same data structs, ``ScriptedLLM.generate``, ``call_tool``,
``problems()`` on every directive, a ``Step`` -- and none of the runtime's own machinery:
no executor, run scope, cancel scope, deadlines, retries, counters, telemetry hooks or
exactly-once bookkeeping. What ``Runtime.run`` costs above this loop is the price of that
machinery. Prints both in CPU µs per run, alternating (median of 7 repeats), and their
ratio; ``_instructions.py --fused`` counts the loop's instructions.

Not a goal and not a peer: a measuring stick for how much of a run the runtime itself is.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _subject
from ptcflow.directives import Directive, LLMGenerate, ToolExec
from ptcflow.providers._protocol import LLMRequest
from ptcflow.runtime import Step
from ptcflow.runtime._toolbox import Toolbox
from ptcflow.signals import (
    LLM_RESPONSE,
    REQUEST_COMPLETED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    LLMResponseData,
    Ok,
    RequestEndData,
    RequestStartedData,
    Signal,
    ToolResultData,
    ToolStartedData,
    Usage,
    UsageData,
    new_id,
)
from ptcflow.signals._signal import stamp
from ptcflow.strategies import ReAct, RunInfo
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import Tool, call_tool

__all__ = ("fused_run", "main")


class _Run:
    """The little a fused run keeps: its id and its signal counter."""

    __slots__ = ("run_id", "seq")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.seq = 0

    def signal(self, type: str, data: Any, d: Directive | None = None) -> Signal:
        """The run's next signal, correlated like the runtime's."""
        self.seq += 1
        id, now = stamp()
        if d is None:
            return Signal(
                type=type,
                source="ptcflow",
                id=id,
                time=now,
                data=data,
                run_id=self.run_id,
                request_id=self.run_id,
                seq=self.seq,
            )
        return Signal(
            type=type,
            source="ptcflow",
            id=id,
            time=now,
            data=data,
            run_id=self.run_id,
            request_id=d.request_id,
            call_id=d.id,
            iteration=d.iteration,
            seq=self.seq,
            causation_id=d.id,
        )


async def fused_run(
    strategy: ReAct, question: str, llm: ScriptedLLM, tools: Mapping[str, Tool], specs: Any
) -> Step:
    """One run of ``strategy`` on ``question``, every step written out in one loop."""
    run = _Run(new_id("run_"))
    run.signal(REQUEST_STARTED, RequestStartedData(input=question, agent="react", tools=specs))
    info = RunInfo(run_id=run.run_id, input=question, request_id=run.run_id, tools=specs)
    state, first = strategy.init(info)
    queue: list[Directive] = list(first)
    outcome = strategy.outcome(state)
    turns = calls = 0
    usage = Usage()

    def fold(sig: Signal) -> None:
        nonlocal state, outcome
        new, more = strategy.handle(state, sig)
        if new is not state:
            state, outcome = new, strategy.outcome(new)
        queue.extend(more)

    while queue:
        d = queue.pop(0)
        if d.problems():
            raise AssertionError(f"invalid directive {d!r}")
        if isinstance(d, LLMGenerate):
            request = LLMRequest(
                model=llm.model,
                messages=d.messages,
                tools=d.tools,
                tool_choice=d.tool_choice,
                response_schema=d.response_schema,
                options=d.options,
            )
            response = await llm.generate(request)
            turns += 1
            usage = usage + response.usage
            fold(run.signal(USAGE, UsageData(usage=response.usage, model=response.model), d))
            data: Any = LLMResponseData(result=Ok(payload=response), attempts=1)
            fold(run.signal(LLM_RESPONSE, data, d))
        elif isinstance(d, ToolExec):
            started = ToolStartedData(tool_name=d.tool_name, arguments=d.arguments)
            fold(run.signal(TOOL_STARTED, started, d))
            result = await call_tool(tools[d.tool_name], d.id, d.arguments)
            calls += 1
            data = ToolResultData(tool_name=d.tool_name, result=result, attempts=1)
            fold(run.signal(TOOL_RESULT, data, d))
        else:
            raise AssertionError(f"unexpected directive {d!r}")
    if outcome is None:
        raise AssertionError("the fused run ended without an outcome")
    result = outcome.result
    end = RequestEndData(result=result, usage=usage, reason=outcome.reason)
    strategy.handle(state, run.signal(REQUEST_COMPLETED, end))
    return Step(
        run_id=run.run_id,
        ok=result.ok,
        value=result.payload if isinstance(result, Ok) else None,
        usage=usage,
        reason=outcome.reason,
        turns=turns,
        tool_calls=calls,
    )


async def fused(runs: int) -> float:
    """CPU µs per run of ``runs`` fused runs (after one checked run)."""
    llm = ScriptedLLM(_subject.answer, record=False)  # as _subject.make_runtime builds it
    box = Toolbox.build({"add": _subject.add})  # the tools and specs a Runtime would hold
    strategy = ReAct()
    step = await fused_run(strategy, _subject.QUESTION, llm, box.tools, box.specs)
    if step.value != "5":
        raise AssertionError(f"fused run went wrong: {step!r}")
    cpu = time.process_time()
    for _ in range(runs):
        await fused_run(strategy, _subject.QUESTION, llm, box.tools, box.specs)
    return (time.process_time() - cpu) / runs * 1e6


def main(runs: int = 2000, repeats: int = 7) -> None:
    """Print the fused loop's and ptcflow's CPU µs per run and their ratio."""
    loop: list[float] = []
    runtime: list[float] = []
    for _ in range(repeats):
        loop.append(anyio.run(fused, runs))
        runtime.append(anyio.run(_subject.sequential, runs)[1])
    f, r = statistics.median(loop), statistics.median(runtime)
    print(f"fused loop {f:6.1f} µs CPU/run   ptcflow {r:6.1f} µs   ptcflow / fused {r / f:4.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
