"""Approvals: the size of a paused run's state, and what resuming costs.

Budgets (issue 25):

* the paused state (``msgspec.json.encode(step)`` of the paused Step, journal included) of a
  3-turn ReAct run and of a 2-turn SubAgent whose second program makes 20 calls: <= 16 KB each;
* resuming a paused run costs <= 2x one plain turn's overhead: the CPU time of
  ``rt.resume`` (decode, checks, rebuild from the journal, the approved call, the model's
  last answer) against the same work done by a plain run (the approved call's turn: one tool
  call and one model answer), both on the scripted model, measured in the same process;
* 1,000 paused runs resumed concurrently on one Runtime take <= 1.5x the wall time of 1,000
  fresh runs of the same shape (each a tool call and an answer); medians of 5 alternating
  rounds.

    python bench/approvals.py            # all three, printed as a table
    python bench/approvals.py --quick    # fewer repeats and 200 concurrent runs (a smoke run)
    python bench/approvals.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

import ptcflow
from ptcflow import Approve, ReAct, Runtime, Step, SubAgent
from ptcflow.testing import ScriptedLLM

BUDGET_BYTES = 16 * 1024
BUDGET_RESUME = 2.0
BUDGET_CONCURRENT = 1.5


def _tools() -> list[ptcflow.Tool]:
    @ptcflow.tool(blocking=False)
    def lookup(order: str) -> dict[str, Any]:
        """The order's record."""
        return {"order": order, "amount": 40 + len(order), "status": "delivered"}

    @ptcflow.tool(blocking=False, requires_approval=lambda args: args["amount"] > 100)
    def refund(order: str, amount: int) -> str:
        """Refund an order."""
        return f"refunded {amount} on {order}"

    return [lookup, refund]


def _react_script() -> list[Any]:
    return [
        ScriptedLLM.tool_call("lookup", order="A-1001"),
        ScriptedLLM.tool_call("lookup", order="B-2002"),
        ScriptedLLM.tool_call("refund", order="B-2002", amount=480),
        "Refunded B-2002.",
    ]


_PROGRAM_1 = '```clojure\n(def orders ["A" "B" "C"])\n(count orders)\n```'
_PROGRAM_2 = """```clojure
(let [records (pmap (fn [i] (call "lookup" {:order (str "O-" i)})) (range 19))
      total (reduce + (map :amount records))]
  (return {:refund (call "refund" {:order "O-all" :amount total})}))
```"""


async def paused_react(tools: list[ptcflow.Tool]) -> tuple[Step, ScriptedLLM]:
    llm = ScriptedLLM(_react_script(), record=False)
    async with Runtime(llm=llm, tools=tools) as rt:
        step = await rt.run(ReAct(), "refund the delivered order over 100")
    assert step.paused and step.turns == 3, step
    return step, llm


async def paused_subagent(tools: list[ptcflow.Tool]) -> Step:
    llm = ScriptedLLM([_PROGRAM_1, _PROGRAM_2], record=False)
    agent = SubAgent(
        prompt="Refund what the orders add up to",
        signature="() -> {refund :string}",
        tools=tools,
        llm=llm,
    )
    async with Runtime() as rt:
        step = await rt.run(agent)
    assert step.paused and step.turns == 2 and step.tool_calls == 19, step
    return step


def _cpu(fn: Callable[[], Any]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def sizes() -> dict[str, int]:
    tools = _tools()
    react, _ = anyio.run(paused_react, tools)
    agent = anyio.run(paused_subagent, tools)
    return {
        "react_3_turns": len(msgspec.json.encode(react)),
        "subagent_2_turns_20_calls": len(msgspec.json.encode(agent)),
    }


def resume_cost(repeats: int) -> dict[str, float]:
    """CPU time of one resume against one plain turn of the same work (median of rounds)."""
    tools = _tools()
    plain_runs, resumes = [], []
    turn: list[Any] = [
        ScriptedLLM.tool_call("refund", order="B-2002", amount=48),  # no approval needed
        "Refunded B-2002.",
    ]
    for _ in range(repeats):
        step, llm = anyio.run(paused_react, tools)
        blob = msgspec.json.encode(step)
        call = step.pending[0].call_id

        async def resume(blob: bytes = blob, llm: ScriptedLLM = llm, call: str = call) -> None:
            async with Runtime(llm=llm, tools=tools) as rt:
                restored = msgspec.json.decode(blob, type=Step)
                done = await rt.resume(restored, {call: Approve()}, agent=ReAct())
            assert done.ok, done

        async def plain() -> None:
            async with Runtime(llm=ScriptedLLM(turn, record=False), tools=tools) as rt:
                done = await rt.run(ReAct(), "refund B-2002")
            assert done.ok, done

        plain_runs.append(_cpu(lambda: anyio.run(plain)))
        resumes.append(_cpu(lambda resume=resume: anyio.run(resume)))  # type: ignore[misc]
    plain_s, resume_s = statistics.median(plain_runs), statistics.median(resumes)
    return {
        "plain_turn_ms": plain_s * 1e3,
        "resume_ms": resume_s * 1e3,
        "ratio": resume_s / plain_s,
    }


def concurrent(n: int, rounds: int = 5) -> dict[str, float]:
    """Wall time of ``n`` paused runs resumed at once against ``n`` fresh runs (medians of
    ``rounds`` alternating rounds; a pause is resumed once per Runtime, and each round has a
    Runtime of its own)."""
    tools = _tools()

    def script() -> list[Any]:
        return [ScriptedLLM.tool_call("refund", order="B", amount=480), "done"]

    def fresh_script() -> list[Any]:
        return [ScriptedLLM.tool_call("refund", order="B", amount=48), "done"]

    async def pause_all() -> list[tuple[Step, ScriptedLLM]]:
        out: list[tuple[Step, ScriptedLLM]] = []
        async with Runtime(tools=tools) as rt:
            for _ in range(n):
                llm = ScriptedLLM(script(), record=False)
                out.append((await rt.run(ReAct(), "refund B", llm=llm), llm))
        return out

    paused = anyio.run(pause_all)

    async def resume_all() -> float:
        async with Runtime(tools=tools) as rt:
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for step, _ in paused:  # a model of its own: what is left is the answer
                    decisions = {step.pending[0].call_id: Approve()}
                    answer = ScriptedLLM(["done"], record=False)
                    tg.start_soon(_resume_one, rt, step, decisions, answer)
            return time.perf_counter() - start

    async def fresh_all() -> float:
        async with Runtime(tools=tools) as rt:
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    tg.start_soon(_run_one, rt, ScriptedLLM(fresh_script(), record=False))
            return time.perf_counter() - start

    fresh_rounds, resumed_rounds = [], []
    for _ in range(rounds):  # alternating, each on a Runtime of its own; medians compared
        fresh_rounds.append(anyio.run(fresh_all))
        resumed_rounds.append(anyio.run(resume_all))
    fresh, resumed = statistics.median(fresh_rounds), statistics.median(resumed_rounds)
    return {"fresh_s": fresh, "resumed_s": resumed, "ratio": resumed / fresh}


async def _resume_one(rt: Runtime, step: Step, decisions: dict[str, Any], llm: Any) -> None:
    done = await rt.resume(step, decisions, agent=ReAct(), llm=llm)
    assert done.ok, done


async def _run_one(rt: Runtime, llm: Any) -> None:
    done = await rt.run(ReAct(), "refund B", llm=llm)
    assert done.ok, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 200 runs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    repeats, n = (5, 200) if args.quick else (21, 1000)
    size = sizes()
    cost = resume_cost(repeats)
    together = concurrent(n)
    ok = (
        max(size.values()) <= BUDGET_BYTES
        and cost["ratio"] <= BUDGET_RESUME
        and together["ratio"] <= BUDGET_CONCURRENT
    )
    print("approvals (budgets: state <= 16 KB; resume <= 2x a plain turn; concurrent <= 1.5x)")
    print(f"  paused state, ReAct 3 turns              {size['react_3_turns']:>8,} B")
    print(f"  paused state, SubAgent 2 turns 20 calls  {size['subagent_2_turns_20_calls']:>8,} B")
    print(
        f"  resume (CPU)   {cost['resume_ms']:.2f} ms vs plain turn {cost['plain_turn_ms']:.2f} ms"
        f"  = {cost['ratio']:.2f}x"
    )
    print(
        f"  {n} resumed at once {together['resumed_s']:.3f} s vs {n} fresh "
        f"{together['fresh_s']:.3f} s  = {together['ratio']:.2f}x"
    )
    print("  within budget" if ok else "  OVER BUDGET")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"sizes": size, "resume": cost, "concurrent": together, "ok": ok}, out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
