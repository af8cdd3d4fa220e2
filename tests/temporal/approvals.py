"""Tools, a model and agents of the approval tests on Temporal (imported by path on the
workers: module-level, stateless, deterministic). Each refund is a side effect, appended to
the file ``$PTCFLOW_TEST_LOG`` (``refund {call id} {amount}``) so the tests count them."""

from __future__ import annotations

import os
from typing import Any

from ptcflow import SubAgent, tool
from ptcflow.runtime import LLMRequest
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import ToolContext

REFUNDS = "You issue refunds."
PROGRAM = "Refund the orders"
ORCHESTRATES = "You orchestrate refunds."
DELEGATES = "Delegate the refunds of"
AGENT = "Refund all orders of"
AGENT_PROGRAM = '(return (pmap #(call "refund" {:amount %}) [50 500 700]))'
"""The refund agent's program: the refunds of 500 and 700 wait, in one batch."""
LOOPS = "Refund, then keep going"
"""The looping refunder's task: its second turn's refund waits; no turn returns."""
REFUND_PROGRAM = '(return (pmap #(call "refund" {:amount %}) [50 500 70]))'
"""Three refunds in parallel: the one of 500 waits for a person."""


def large(arguments: dict[str, Any]) -> bool:
    """A refund above 100 waits for a person's decision."""
    return int(arguments.get("amount", 0)) > 100


def _refund(ctx: ToolContext, amount: int) -> str:
    """Refund ``amount`` (logged: the side effect the tests count)."""
    with open(os.environ["PTCFLOW_TEST_LOG"], "a") as f:
        f.write(f"refund {ctx.call_id} {amount}\n")
    return f"refunded {amount}"


refund = tool(_refund, name="refund", requires_approval=large)
"""A refund; above 100 it waits for approval."""


def _wire(to: str, amount: int) -> str:
    """Wire ``amount`` to ``to`` (never runs unapproved; each approval waits 1 s at most)."""
    with open(os.environ["PTCFLOW_TEST_LOG"], "a") as f:
        f.write(f"wire {to} {amount}\n")
    return f"wired {amount} to {to}"


wire = tool(_wire, name="wire", requires_approval=True, approval_timeout=1.0)
"""A wire transfer: always asks, and gives up after one second undecided."""


def _lookup(order: str) -> dict[str, Any]:
    """The status of ``order`` (deferred: a person supplies it)."""
    raise NotImplementedError


lookup = tool(_lookup, name="lookup", deferred=True)
"""A deferred tool: its result comes from outside."""


def _script(req: LLMRequest) -> Any:
    from ptcflow.signals import ToolCall

    system = req.messages[0].content if req.messages[0].role == "system" else ""
    last = req.messages[-1]
    if any(m.role == "user" and LOOPS in m.content for m in req.messages):
        turn = 1 + sum(1 for m in req.messages if m.role == "assistant")
        if turn == 2:
            return '```clojure\n(call "refund" {:amount 500})\n```'
        return f"```clojure\n(+ {turn} 1)\n```"  # no return: another turn
    if any(m.role == "user" and DELEGATES in m.content for m in req.messages):
        return '```clojure\n(return (call "refund_agent" {:who ctx/who}))\n```'
    if any(m.role == "user" and AGENT in m.content for m in req.messages):
        if last.role == "user" and AGENT in last.content:
            return f"```clojure\n{AGENT_PROGRAM}\n```"
        return '```clojure\n(return "done")\n```'
    if any(m.role == "user" and PROGRAM in m.content for m in req.messages):
        if last.role == "user" and PROGRAM in last.content:
            return f"```clojure\n{REFUND_PROGRAM}\n```"
        return '```clojure\n(return "done")\n```'
    if system == ORCHESTRATES:
        if last.role == "tool":
            return "orchestrated: " + last.content
        (spec,) = [t for t in req.tools if t.name == "refund_agent"]
        if "prompt" in spec.input_schema.get("properties", {}):  # a RunChild's ReAct
            return ToolCall(id="call_agent", name="refund_agent", input={"prompt": "carol"})
        return ToolCall(id="call_agent", name="refund_agent", input={"who": "carol"})
    if system == REFUNDS:
        if last.role == "tool":
            results = [m.content for m in req.messages if m.role == "tool"]
            return "report: " + " | ".join(results)
        tools = {t.name for t in req.tools}
        if "wire" in tools:
            return ToolCall(id="call_w", name="wire", input={"to": "bob", "amount": 9})
        if "lookup" in tools:
            return ToolCall(id="call_l", name="lookup", input={"order": "A1"})
        return [
            ToolCall(id="call_small", name="refund", input={"amount": 50}),
            ToolCall(id="call_large", name="refund", input={"amount": 500}),
        ]
    return "?"


def model() -> ScriptedLLM:
    """A stateless scripted model for the approval tests."""
    return ScriptedLLM(_script)


def refunder() -> ReAct:
    """ReAct with two refunds in one turn (one waits), then a report of both results."""
    return ReAct(system_prompt=REFUNDS, name="refunder")


def program_refunder() -> SubAgent:
    """A SubAgent whose program refunds three orders with ``pmap`` (one waits)."""
    return SubAgent(prompt=PROGRAM + " {{who}}", tools=[refund], name="program-refunder")


def refund_agent() -> SubAgent:
    """An agent other agents call (``refund_agent``): its program refunds 50, 500 and 700
    with ``pmap``; the last two wait."""
    return SubAgent(
        prompt=AGENT + " {{who}}",
        signature="(who :string) -> :any",
        tools=[refund],
        name="refund_agent",
        description="Refunds the orders of a customer.",
    )


def orchestrator() -> ReAct:
    """ReAct whose one tool call runs ``refund_agent`` (a child workflow) whose refunds of
    500 and 700 wait for a person, then reports the agent's answer."""
    return ReAct(system_prompt=ORCHESTRATES, name="orchestrator")


def delegator() -> SubAgent:
    """A SubAgent whose program calls ``refund_agent`` (a child workflow in a program's
    round), whose own program's refunds of 500 and 700 wait."""
    return SubAgent(
        prompt=DELEGATES + " {{who}}", tools=[refund_agent().as_tool()], name="delegator"
    )


def looping_refunder() -> SubAgent:
    """A SubAgent that never returns: its second turn refunds 500 (which waits), every
    other turn computes and goes on (the mission's turn budget ends it)."""
    return SubAgent(prompt=LOOPS, tools=[refund], name="looping-refunder", max_turns=50)
