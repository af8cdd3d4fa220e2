"""Journals of runs that pause for a person and resume (issue 25), for the viewer's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ptcflow
from ptcflow import ReAct, Runtime, Step, SubAgent
from ptcflow.signals import SignalBus, record_journal
from ptcflow.testing import ScriptedLLM


@ptcflow.tool(requires_approval=lambda args: args["amount"] > 100)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order}"


@ptcflow.tool(blocking=False)
def lookup(order: str) -> int:
    """The amount of an order."""
    return {"A": 50, "B": 500, "C": 700}[order]


def two_refunds() -> ScriptedLLM:
    """Two refunds at once (A: 50 runs; B: 500 waits), then the answer."""
    return ScriptedLLM(
        [
            [
                ScriptedLLM.tool_call("refund", order="A", amount=50),
                ScriptedLLM.tool_call("refund", order="B", amount=500),
            ],
            "done",
        ]
    )


PROGRAM = """```clojure
(let [amounts (pmap (fn [o] (call "lookup" {:order o})) ["A" "B" "C"])
      done (pmap (fn [[o a]] (call "refund" {:order o :amount a}))
                 (map vector ["A" "B" "C"] amounts))]
  (return {:refunds done}))
```"""


def program_agent() -> SubAgent:
    """A SubAgent whose program refunds three orders in a pmap (B and C wait)."""
    return SubAgent(
        prompt="Refund the orders",
        signature="() -> {refunds [:string]}",
        tools=[refund, lookup],
        llm=ScriptedLLM([PROGRAM]),
    )


async def journal_react(path: Path, decisions: dict[str, Any] | None = None) -> Step:
    """A ReAct run journaled to ``path`` until it pauses; with ``decisions`` (by tool
    order: ``{"B": Approve()}``) resumed in a new Runtime, its journal appended."""
    llm = two_refunds()
    bus = SignalBus()
    async with record_journal(bus, path), Runtime(llm=llm, tools=[refund], bus=bus) as rt:
        step = await rt.run(ReAct(), "refund A and B", run_id="refunds")
    assert step.paused, step
    if decisions is None:
        return step
    return await _resume(path, step, decisions, ReAct(), llm=llm, tools=[refund])


async def journal_program(path: Path, decisions: dict[str, Any] | None = None) -> Step:
    """The SubAgent's program journaled until it pauses (B and C wait), then resumed with
    ``decisions`` by order when given."""
    agent = program_agent()
    bus = SignalBus()
    async with record_journal(bus, path), Runtime(bus=bus) as rt:
        step = await rt.run(agent, run_id="program")
    assert step.paused, step
    if decisions is None:
        return step
    return await _resume(path, step, decisions, agent)


async def _resume(
    path: Path, step: Step, decisions: dict[str, Any], agent: Any, **options: Any
) -> Step:
    by_call = {p.call_id: decisions[p.arguments["order"]] for p in step.pending}
    bus = SignalBus()
    async with record_journal(bus, path, append=True), Runtime(bus=bus, **options) as rt:
        return await rt.resume(step, by_call, agent=agent)


def _nested_answers(request: Any) -> Any:
    """The parent (ReAct) calls the refunder agent as a tool; the refunder's program calls
    refund, which asks for approval."""
    task = next(m.content for m in request.messages if m.role == "user")
    if task.startswith("Refund"):
        return '(return {:done (call "refund" {:amount ctx/amount})})'
    if len(request.messages) < 3:
        return ScriptedLLM.tool_call("refunder", amount=500)
    return "answer: " + request.messages[-1].content


def nested_tools() -> dict[str, Any]:
    """The refunder agent (a SubAgent asking before each refund), as a tool."""

    def refund(amount: int) -> str:
        """Refund an amount."""
        return f"refunded {amount}"

    asks = ptcflow.tool(refund, requires_approval=True)
    agent = SubAgent(
        prompt="Refund {{amount}}",
        signature="(amount :int) -> {done :string}",
        name="refunder",
        tools={"refund": asks},
    )
    return {"refunder": agent.as_tool()}


async def journal_nested(path: Path, decision: Any = None) -> Step:
    """A ReAct run whose agent-as-tool's call waits (journaled); resumed with ``decision``
    on that call when given."""
    llm = ScriptedLLM(_nested_answers)
    tools = nested_tools()
    bus = SignalBus()
    async with record_journal(bus, path), Runtime(llm=llm, bus=bus) as rt:
        step = await rt.run(ReAct(), "please refund", tools=tools, run_id="top")
    assert step.paused, step
    if decision is None:
        return step
    (pending,) = step.pending
    bus = SignalBus()
    async with record_journal(bus, path, append=True), Runtime(llm=llm, bus=bus) as rt:
        return await rt.resume(step, {pending.call_id: decision}, agent=ReAct(), tools=tools)
