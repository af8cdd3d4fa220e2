"""What one PTC turn costs beyond the model call, as a ratio to running its program alone.

Run it with::

    .venv/bin/python bench/ptc_turn.py            # full: ~1 min
    .venv/bin/python bench/ptc_turn.py --quick    # a few seconds

The workload is a SubAgent run of two turns on a scripted model (zero latency): each turn the
model answers with prose around one ```clojure block holding the same 20-line data program,
which makes 2 tool calls (``async def`` tools over 60 orders) and computes on their results;
turn 1 ends with the program's value (fed back to the model: the feedback message), turn 2
with ``(return ...)`` (checked against the agent's signature; a return that ends the run
writes no memory, so only turn 1 writes it). So each turn pays for what a PTC turn does
besides waiting for the model: the prompt (the system prompt is rendered once
per agent, the data inventory and messages per run), taking the program out of the
response, the ``RunProgram`` directive (reading, analysis, compilation and evaluation in
the sandbox, each tool call through the runtime's tool machinery with its signals), the
return's validation or the feedback, the trace and the Step.

The baseline is the same two programs run with ``ptcflow.lisp.run`` directly (the same
tools, called as plain functions): the cost of the program itself. The two are measured
alternately in one process (so a busy machine affects both alike) and the verdict is the
median of the per-repeat ratios of CPU time (``time.process_time``). Goal: at most 1.5x.

A second figure is the share of a run spent converting its context (issue 18: at most 25%):
a three-turn SubAgent run over ``ctx/orders`` with 10,000 orders, each turn's program
reading them (a count, a filter + group-by + sum, the same with ``return``). The runtime
converts the orders once per run and its later programs reuse the conversion; the share is
the conversion timed alone (``import_value``, what a program's first read does) over the
whole run's CPU time, median of the per-repeat ratios. For comparison it also prints the
share a single program run has (``ptcflow.lisp.run`` of the filter program alone), where
nothing is shared.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

import anyio

from ptcflow import SubAgent
from ptcflow.lisp import run
from ptcflow.runtime import Runtime
from ptcflow.testing import ScriptedLLM

GOAL = 1.5
SHARE_GOAL = 0.25

ORDERS = [
    {
        "id": i,
        "customer": f"c{i % 12}",
        "amount": float(20 + (i * 37) % 300),
        "currency": ("EUR", "USD", "GBP")[i % 3],
        "status": "delivered" if i % 4 else "open",
    }
    for i in range(60)
]
RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85}

BODY = """\
(def orders (call "orders" {:status ctx/status}))
(def rates (call "rates" {}))
(defn in-eur [o]
  (/ (:amount o) (get rates (keyword (:currency o)) 1.0)))
(def by-customer
  (->> orders
       (group-by :customer)
       (map (fn [[c os]] [c (round (reduce + (map in-eur os)) 2)]))
       (into {})))
(def top (->> by-customer (sort-by val >) (take 3)))
(println "customers:" (count by-customer))
(println "top:" (str/join ", " (map key top)))
(def big (filter (where :amount > 200) orders))
(def avg-eur (avg-by in-eur orders))
(def summary {:customers (count by-customer)
              :orders (count orders)
              :big (count big)
              :avg (round avg-eur 2)
              :top (key (first top))})
"""
TURN_1 = BODY + "summary"
TURN_2 = BODY + "(return summary)"
ANSWERS = [
    f"I'll total the orders per customer in euros.\n```clojure\n{TURN_1}\n```",
    f"The summary looks right; returning it.\n```clojure\n{TURN_2}\n```",
]


async def orders(status: str) -> list[dict[str, Any]]:
    """Orders with a status."""
    return [o for o in ORDERS if o["status"] == status]


async def rates() -> dict[str, float]:
    """Exchange rates per euro."""
    return RATES


AGENT = SubAgent(
    prompt="Summarise the {{status}} orders per customer in euros",
    signature="(status :string) -> {customers :int, orders :int, big :int, avg :float, top :string}",
    tools=[orders, rates],
    name="bench",
)


async def _direct_orders(args: dict[str, Any]) -> Any:
    return await orders(**args)


async def _direct_rates(args: dict[str, Any]) -> Any:
    return await rates()


DIRECT = {"orders": _direct_orders, "rates": _direct_rates}
CTX = {"status": "delivered"}


def _model(request: Any) -> str:
    """The answer of turn 1 or turn 2 (a function script: any number of runs share it)."""
    return ANSWERS[0] if len(request.messages) == 2 else ANSWERS[1]


async def agent_runs(rt: Runtime, n: int) -> float:
    """CPU seconds for ``n`` two-turn SubAgent runs on ``rt``."""
    start = time.process_time()
    for _ in range(n):
        step = await rt.run(AGENT, context=CTX)
        assert step.ok and step.turns == 2, step.fail
    return time.process_time() - start


async def direct_runs(n: int) -> float:
    """CPU seconds for ``n`` pairs of the same programs run with ``ptcflow.lisp.run``."""
    start = time.process_time()
    for _ in range(n):
        first = await run(TURN_1, ctx=CTX, tools=DIRECT)
        second = await run(TURN_2, ctx=CTX, tools=DIRECT)
        assert first.error is None and second.returned, (first.error, second.error)
    return time.process_time() - start


async def measure(repeats: int, n: int) -> dict[str, Any]:
    ratios, agent_us, direct_us = [], [], []
    async with Runtime(llm=ScriptedLLM(_model, record=False)) as rt:
        await agent_runs(rt, 20)  # warm-up: imports, caches, the agent's prompt
        await direct_runs(20)
        for _ in range(repeats):
            gc.collect()
            a = await agent_runs(rt, n)
            gc.collect()
            d = await direct_runs(n)
            ratios.append(a / d)
            agent_us.append(a / n / 2 * 1e6)  # per turn
            direct_us.append(d / n / 2 * 1e6)
    return {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "agent_us_per_turn": statistics.median(agent_us),
        "direct_us_per_program": statistics.median(direct_us),
    }


BIG_ORDERS = [
    {
        "id": i,
        "customer": f"c{i % 97}",
        "amount": float(5 + (i * 31) % 500),
        "status": ("delivered", "open", "cancelled")[i % 3],
    }
    for i in range(10_000)
]
FILTER = """\
(let [by (group-by :customer (filter #(= (:status %) "delivered") ctx/orders))]
  (count (update-vals by (fn [os] (sum-by :amount os)))))"""
BIG_ANSWERS = [
    "```clojure\n(count ctx/orders)\n```",
    f"```clojure\n{FILTER}\n```",
    f"```clojure\n(return {FILTER})\n```",
]
BIG_AGENT = SubAgent(
    prompt="How many customers have delivered orders in {{orders}}?",
    signature="(orders [:map]) -> :int",
    name="bench_ctx",
)


def _big_model(request: Any) -> str:
    return BIG_ANSWERS[min(len(request.messages) // 2, 3) - 1]


async def conversion_share(repeats: int) -> dict[str, float]:
    """The share of ctx conversion in a 3-turn SubAgent run and in one program run."""
    from ptcflow.lisp import Limits
    from ptcflow.lisp._convert import import_value
    from ptcflow.lisp.limits import Budget

    ctx = {"orders": BIG_ORDERS}
    shares, single, conv_us, run_us = [], [], [], []
    async with Runtime(llm=ScriptedLLM(_big_model, record=False)) as rt:
        for i in range(repeats + 1):
            gc.collect()
            t = time.process_time()
            import_value(BIG_ORDERS, Budget(Limits(max_steps=10**9)), "ctx/orders")
            conv = time.process_time() - t
            t = time.process_time()
            step = await rt.run(BIG_AGENT, context=ctx)
            whole = time.process_time() - t
            assert step.ok and step.turns == 3, step.fail
            t = time.process_time()
            one = await run(FILTER, ctx=ctx)
            alone = time.process_time() - t
            assert one.error is None, one.error
            if i:  # the first is a warm-up
                shares.append(conv / whole)
                single.append(conv / alone)
                conv_us.append(conv * 1e6)
                run_us.append(whole * 1e6)
    return {
        "share": statistics.median(shares),
        "single_share": statistics.median(single),
        "conversion_us": statistics.median(conv_us),
        "run_us": statistics.median(run_us),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    repeats, n = (3, 20) if args.quick else (9, 100)
    result = anyio.run(measure, repeats, n, backend=args.backend)
    spread = ", ".join(f"{r:.2f}" for r in sorted(result["ratios"]))
    print(f"ptc_turn ({args.backend}, {repeats} repeats x {n} two-turn runs; CPU time)")
    print(f"  one PTC turn (SubAgent on a Runtime):   {result['agent_us_per_turn']:8.0f} µs")
    print(f"  the same program with lisp.run:         {result['direct_us_per_program']:8.0f} µs")
    verdict = "ok" if result["ratio"] <= GOAL else "OVER BUDGET"
    print(
        f"  ratio (median of repeats): {result['ratio']:.2f}x  [{spread}]  goal <= {GOAL}x: {verdict}"
    )
    conv = anyio.run(conversion_share, repeats, backend=args.backend)
    verdict = "ok" if conv["share"] <= SHARE_GOAL else "OVER BUDGET"
    print("ctx conversion, 10,000 orders (CPU time)")
    print(f"  conversion alone:                       {conv['conversion_us']:8.0f} µs")
    print(f"  3-turn SubAgent run reading them:       {conv['run_us']:8.0f} µs")
    print(
        f"  share of the run: {conv['share']:.0%}  goal <= {SHARE_GOAL:.0%}: {verdict}"
        f"  (one program run alone, nothing shared: {conv['single_share']:.0%})"
    )


if __name__ == "__main__":
    main()
