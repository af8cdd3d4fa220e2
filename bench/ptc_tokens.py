"""The token case for programmatic tool calling: ReAct against a SubAgent on one data task.

Run it with::

    .venv/bin/python bench/ptc_tokens.py                 # 300 orders (a second)
    .venv/bin/python bench/ptc_tokens.py --orders 1000
    .venv/bin/python bench/ptc_tokens.py --json out.json

The task: "total delivered revenue per customer, in EUR" over a few hundred orders behind two
tools, ``list_orders(status, page)`` (100 orders a page, with the next page's number) and
``exchange_rates()``. Both agents get the same tools, the same question, and scripted model
answers (``ScriptedLLM``) that solve it correctly; the bench checks both answers against the
totals computed in Python.

* **ReAct with native tool calls**: one tool call per model turn (each page, then the rates),
  then the answer as JSON, which the model itself computed from the tool results it read.
  Every tool result stays in the conversation and is sent again with each later call.
* **SubAgent (programmatic tool calling)**: turn 1 the model looks at the first page (the
  program prints its size and returns one order); turn 2 a program fetches every page and
  the rates, totals in the sandbox and ``return``s. The orders never reach the model.

**How tokens are counted, the same way for both**: every request the model received is
recorded (``ScriptedLLM(record=True)``), and its input is everything a provider would send:
the messages (system prompt, user prompt, assistant turns with their tool calls, tool
results) and the tool schemas, encoded as JSON with ``msgspec``; input tokens are that
text's length divided by 4, rounded up (about 4 characters a token for English and JSON,
the rule of thumb the providers give). A real tokenizer would move both figures alike; the
ratio is what matters. ``usage.input_tokens`` of the Steps (``ScriptedLLM``'s own estimate,
which leaves out tool schemas and tool-call arguments) is printed alongside.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec

from ptcflow import ReAct, Step, SubAgent
from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import Tool, tool

PAGE = 100
CUSTOMERS = ("acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka")
CURRENCIES = ("EUR", "USD", "GBP", "CHF")
RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "CHF": 0.94}  # units per euro
STATUSES = ("delivered", "delivered", "delivered", "open", "cancelled")
QUESTION = "Total the {{status}} revenue per customer, in EUR (rounded to cents)"
SIGNATURE = "(status :string) -> {totals :map, orders :int}"


def make_orders(n: int) -> list[dict[str, Any]]:
    """``n`` orders as a shop's API returns them (deterministic)."""
    return [
        {
            "id": 10_000 + i,
            "customer": CUSTOMERS[(i * 7) % len(CUSTOMERS)],
            "status": STATUSES[i % len(STATUSES)],
            "amount": round(15 + (i * 37) % 480 + (i % 100) / 100, 2),
            "currency": CURRENCIES[(i * 3) % len(CURRENCIES)],
            "created_at": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
            "sku": f"SKU-{(i * 13) % 997:04d}",
        }
        for i in range(n)
    ]


class Shop:
    """The two tools over one list of orders."""

    def __init__(self, orders: list[dict[str, Any]]) -> None:
        self.orders = orders

    def list_orders(self, status: str, page: int = 1) -> dict[str, Any]:
        """List the orders with a status, 100 a page.

        Args:
            status: ``delivered``, ``open`` or ``cancelled``.
            page: the page to read, from 1 (``next_page`` of the previous one).
        """
        rows = [o for o in self.orders if o["status"] == status]
        start = (page - 1) * PAGE
        more = start + PAGE < len(rows)
        return {
            "orders": rows[start : start + PAGE],
            "page": page,
            "next_page": page + 1 if more else None,
        }

    def exchange_rates(self) -> dict[str, float]:
        """Units of each currency per euro."""
        return RATES

    def tools(self) -> list[Tool]:
        """The tools, named as the model calls them."""
        return [
            tool(self.list_orders, name="list_orders"),
            tool(self.exchange_rates, name="exchange_rates"),
        ]


def expected(orders: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The right answer, computed in Python."""
    totals: dict[str, float] = {}
    delivered = [o for o in orders if o["status"] == "delivered"]
    for o in delivered:
        totals[o["customer"]] = totals.get(o["customer"], 0.0) + o["amount"] / RATES[o["currency"]]
    return {"totals": {c: round(t, 2) for c, t in totals.items()}, "orders": len(delivered)}


def react_script(orders: list[dict[str, Any]]) -> list[Any]:
    """ReAct's answers: each page, the rates, then the totals (as a model would write them)."""
    pages = max(1, math.ceil(sum(o["status"] == "delivered" for o in orders) / PAGE))
    calls: list[Any] = [
        ScriptedLLM.tool_call("list_orders", status="delivered", page=p)
        for p in range(1, pages + 1)
    ]
    calls.append(ScriptedLLM.tool_call("exchange_rates"))
    calls.append(json.dumps(expected(orders)))
    return calls


PTC_LOOK = """\
(def first-page (call "list_orders" {:status ctx/status :page 1}))
(println "orders on page 1:" (count (:orders first-page)) "next page:" (:next_page first-page))
(first (:orders first-page))"""
PTC_SOLVE = """\
(def orders
  (loop [page 1 acc []]
    (let [r (call "list_orders" {:status ctx/status :page page})
          acc (into acc (:orders r))]
      (if (:next_page r) (recur (:next_page r) acc) acc))))
(def rates (call "exchange_rates" {}))
(defn in-eur [o] (/ (:amount o) (get rates (:currency o))))
(return {:totals (update-vals (group-by :customer orders)
                              (fn [os] (round (sum-by in-eur os) 2)))
         :orders (count orders)})"""
PTC_SCRIPT = [
    f"Let me look at the data first.\n```clojure\n{PTC_LOOK}\n```",
    f"Now all pages, converted and totalled.\n```clojure\n{PTC_SOLVE}\n```",
]


def input_tokens(request: LLMRequest) -> int:
    """What the model reads in one request, in tokens (JSON characters / 4, rounded up)."""
    sent = msgspec.json.encode({"messages": request.messages, "tools": request.tools})
    return math.ceil(len(sent) / 4)


class Result(msgspec.Struct, frozen=True):
    """One agent's figures."""

    input_tokens: int
    step_input_tokens: int
    turns: int
    model_calls: int
    tool_calls: int


def _close(a: dict[str, Any], b: dict[str, Any]) -> bool:
    ta, tb = a["totals"], b["totals"]
    return (
        a["orders"] == b["orders"]
        and ta.keys() == tb.keys()
        and all(abs(ta[k] - tb[k]) <= 0.011 for k in ta)
    )


def _result(step: Step, llm: ScriptedLLM, tool_calls: int) -> Result:
    return Result(
        input_tokens=sum(input_tokens(r) for r in llm.requests),
        step_input_tokens=step.usage.input_tokens,
        turns=step.turns,
        model_calls=llm.calls,
        tool_calls=tool_calls,
    )


async def measure(n_orders: int) -> dict[str, Result]:
    """Run both agents once on ``n_orders`` orders; check their answers; count."""
    orders = make_orders(n_orders)
    want = expected(orders)
    shop = Shop(orders)
    react_llm = ScriptedLLM(react_script(orders))
    ptc_llm = ScriptedLLM(PTC_SCRIPT)
    async with Runtime() as rt:
        react = await rt.run(
            ReAct(system_prompt="You answer questions about the shop's orders with its tools."),
            QUESTION.replace("{{status}}", "delivered")
            + '. Answer with JSON: {"totals": {customer: eur}, "orders": count}.',
            llm=react_llm,
            tools=shop.tools(),
        )
        agent = SubAgent(prompt=QUESTION, signature=SIGNATURE, tools=shop.tools(), name="revenue")
        ptc = await rt.run(agent, llm=ptc_llm, context={"status": "delivered"})
    assert react.ok and _close(json.loads(react.value), want), (react.value, want)
    assert ptc.ok and _close(ptc.value, want), (ptc.fail, ptc.value, want)
    react_tools = sum(m.role == "tool" for m in react_llm.requests[-1].messages)
    assert ptc.trace is not None
    ptc_tools = sum(len(t.execution.tool_calls) for t in ptc.trace.turns)
    return {
        "react": _result(react, react_llm, react_tools),
        "subagent": _result(ptc, ptc_llm, ptc_tools),
    }


def report(n_orders: int, results: dict[str, Result]) -> str:
    """The side-by-side table."""
    react, ptc = results["react"], results["subagent"]
    rows = [
        ("input tokens (JSON chars / 4)", react.input_tokens, ptc.input_tokens),
        ("input tokens (Step usage)", react.step_input_tokens, ptc.step_input_tokens),
        ("turns", react.turns, ptc.turns),
        ("model calls", react.model_calls, ptc.model_calls),
        ("tool calls", react.tool_calls, ptc.tool_calls),
    ]
    lines = [
        f"ptc_tokens: total delivered revenue per customer in EUR, {n_orders} orders "
        f"({expected(make_orders(n_orders))['orders']} delivered, {PAGE} a page); both answers checked",
        f"  {'':32}{'ReAct':>10}{'SubAgent':>10}{'ratio':>8}",
    ]
    for label, a, b in rows:
        lines.append(f"  {label:32}{a:>10}{b:>10}{a / b:>7.1f}x")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=300, help="orders in the shop (default 300)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    results = anyio.run(measure, args.orders)
    print(report(args.orders, results))
    if args.json:
        with open(args.json, "wb") as f:
            f.write(msgspec.json.encode({"orders": args.orders, **results}))


if __name__ == "__main__":
    main()
