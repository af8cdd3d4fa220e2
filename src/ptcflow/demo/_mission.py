"""The demo's opening: a SubAgent mission over the order data, on a scripted model.

The scripted model answers as a capable model does: it first looks at the data (one tool
call, a printed summary), then tries the conversion tool with a wrong argument name (the
tool's signature refuses it, and the error comes back to the model with the expected
signature), then writes the program that solves the task: per-city revenue in euros, the
foreign-currency orders converted concurrently (``pmap``), checked against the agent's
signature on ``return``. The printed trace shows every turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ptcflow.agent import SubAgent, format_trace
from ptcflow.demo._tools import convert_currency, search_orders
from ptcflow.runtime import LLMRequest, Step
from ptcflow.testing import ScriptedLLM

__all__ = ("MISSION_TASK", "mission_model", "mission_turn", "revenue_agent", "run_mission")

MISSION_TASK = (
    "Which city brought the most revenue from delivered orders, in euros? "
    "Give every city's revenue."
)

_LOOK = """\
Let me look at the delivered orders first.
```clojure
(def delivered (call "search_orders" {:status "delivered"}))
(println (count delivered) "delivered orders by currency:" (frequencies (map :currency delivered)))
(take 2 delivered)
```"""

_TRY = """\
Amounts are in several currencies. I'll check the conversion tool on one order.
```clojure
(call "convert_currency" {:amount 129.9 :from "USD"})
```"""

_SOLVE = """\
The argument is from_currency. Converting every foreign order concurrently, then summing by city:
```clojure
(defn in-eur [o]
  (if (= (:currency o) "EUR")
    (:amount o)
    (call "convert_currency" {:amount (:amount o) :from_currency (:currency o)})))
(def by-city
  (reduce (fn [acc [o eur]] (update acc (:city o) (fnil + 0) eur))
          {}
          (zip delivered (pmap in-eur delivered))))
(return {:revenue (update-vals by-city #(round % 2))
         :top_city (key (max-by val by-city))
         :orders (count delivered)})
```"""


def revenue_agent() -> SubAgent:
    """The mission's agent: a PTC SubAgent with the demo's order and currency tools."""
    return SubAgent(
        prompt=MISSION_TASK,
        signature="{revenue :map, top_city :string, orders :int}",
        tools=[search_orders, convert_currency],
        max_turns=5,
        name="revenue-analyst",
        description="Answers revenue questions about the demo orders, in euros.",
    )


def mission_model(*, latency: float = 0.0) -> ScriptedLLM:
    """The scripted model of the mission: three answers, the second one a mistake."""
    return ScriptedLLM([_LOOK, _TRY, _SOLVE], latency=latency, model="demo-analyst")


def mission_turn(request: LLMRequest) -> str:
    """The mission model's answer to ``request``, chosen by how many answers the agent has
    had so far (a ScriptedLLM function: the mission can run any number of times, as it
    does behind ``ptcflow mcp serve --example``)."""
    answered = sum(message.role == "assistant" for message in request.messages)
    return (_LOOK, _TRY, _SOLVE)[min(answered, 2)]


async def run_mission(*, out: Callable[[str], None] = print, llm: Any = None) -> Step:
    """Run the mission and print its trace through ``out``. Blocks; offline by default.

    Args:
        out: where lines go.
        llm: a real model instead of the scripted one.

    Returns:
        The SubAgent's Step.
    """
    scripted = llm is None
    who = "a scripted model" if scripted else "a real model"
    out(f"ptcflow demo, part 1: a SubAgent writes PTC-Lisp programs on {who}, with real")
    out("Python tools over ptcflow/data/orders.json; each program runs in the sandbox and")
    out("its tool calls go through the runtime (validation, retries, signals, spans).")
    out("")
    out(f"Task: {MISSION_TASK}")
    out("")
    step = await revenue_agent().run(llm=mission_model() if scripted else llm)
    for line in format_trace(step).splitlines():
        out(line)
    out("")
    if step.ok:
        value = step.value
        cities = ", ".join(f"{c} €{v:,.2f}" for c, v in sorted(value["revenue"].items()))
        out(f"Answer: {value['top_city']} ({value['orders']} delivered orders; {cities})")
    else:
        out(f"The mission failed: {step.fail}")
    return step
