"""Missions for the Temporal tests: SubAgents that call agents used as tools (child
workflows), their tools and the scripted model's answers (see ``agents.model``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import msgspec

from ptcflow import SubAgent
from ptcflow.directives import Directive, ToolExec
from ptcflow.runtime import LLMRequest
from ptcflow.signals import TOOL_RESULT, Signal, ToolCall, Usage
from ptcflow.strategies import Outcome, ReAct, RunInfo

ORCHESTRATE = "Orchestrate"
PROGRAMS = {
    "Sum": ('(return {:sum (call "plus" {:x ctx/a :y ctx/b})})',),
    ORCHESTRATE: (
        '(def extra (call "plus" {:x 1 :y 2}))\n'
        '(def parts (pmap (fn [i] (call "summer" {:a i :b ctx/n})) [1 2]))\n'
        '(def tail-sum (call "summer" {:a extra :b 100}))\n'
        "(return {:total (+ extra (:sum (first parts)) (:sum (second parts)) (:sum tail-sum))})",
    ),
    "Fragile": ('(fail {:reason :no_data :message "nothing here"})',),
    "Cautious": (
        '(return {:total (:sum (call "fragile" {:x ctx/n}))})',
        "(return {:total -1})",
    ),
    "Budgeted": (
        '(def a (call "summer" {:a 1 :b 1}))\n(def b (call "summer" {:a 2 :b 2}))\n'
        "(return {:total (+ (:sum a) (:sum b))})",
        "(return {:total 0})",
    ),
    "Wait": ('(return {:sum (call "wait_forever" {})})',),
    "Stuck": ('(return {:total (:sum (call "stuck" {:n ctx/n}))})',),
    "Relay": ('(return {:sum (+ (call "logged" {:x ctx/x}) (call "logged" {:x 1}))})',),
    "Second": (
        '(println "planning" ctx/n)',
        '(return {:total (:sum (call "relay" {:x ctx/n}))})',
    ),
    "Fanout": (
        '(def a (call "logged" {:x ctx/n}))\n'
        '(def parts (pmap (fn [i] (call "relay" {:x i})) [1 2]))\n'
        "(return {:total (+ a (:sum (first parts)) (:sum (second parts)))})",
    ),
    "Durable": (
        '(def a (call "logged" {:x ctx/n}))\n(def b (call "relay" {:x a}))\n'
        "(return {:total (+ a (:sum b))})",
    ),
}
"""The programs of each agent (by its prompt's first word), one per turn."""
DELEGATE = "You delegate."


def plus(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def wait_forever() -> int:
    """Never return."""
    await anyio.sleep_forever()
    return 0


def script(req: LLMRequest) -> Any:
    """The model's answer to a mission's request, or ``None`` when it is not one."""
    system = req.messages[0].content if req.messages[0].role == "system" else ""
    if system == DELEGATE:
        last = req.messages[-1]
        if last.role == "tool":
            return f"delegated: {last.content}"
        return ToolCall(id="call_sum", name="summer", input={"a": 2, "b": 3})
    user = next((m.content for m in req.messages if m.role == "user"), "")
    programs = PROGRAMS.get(user.split(" ", 1)[0]) if isinstance(user, str) else None
    if programs is None:
        return None
    turn = sum(1 for m in req.messages if m.role == "assistant")
    return f"```clojure\n{programs[min(turn, len(programs) - 1)]}\n```"


def summer() -> SubAgent:
    """A one-turn agent that adds with a tool."""
    return SubAgent(
        prompt="Sum {{a}} and {{b}}",
        signature="(a :int, b :int) -> {sum :int}",
        tools=[plus],
        name="summer",
        description="Adds two numbers.",
    )


def orchestrator() -> SubAgent:
    """A PTC orchestrator: a tool call, a pmap over an agent, then the agent again."""
    return SubAgent(
        prompt="Orchestrate {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[summer().as_tool(), plus],
        name="orchestrator",
    )


def cautious() -> SubAgent:
    """An orchestrator whose agent fails: its program sees a tool error, then it recovers."""
    fragile = SubAgent(
        prompt="Fragile {{x}}",
        signature="(x :int) -> {sum :int}",
        name="fragile",
        max_turns=1,
        description="Fails.",
    )
    return SubAgent(
        prompt="Cautious {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[fragile.as_tool()],
        name="cautious",
    )


def budgeted() -> SubAgent:
    """An orchestrator that calls its agent twice, in sequence."""
    return SubAgent(
        prompt="Budgeted {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[summer().as_tool()],
        name="budgeted",
    )


def stuck() -> SubAgent:
    """An orchestrator whose agent waits for ever."""
    waiter = SubAgent(
        prompt="Wait {{n}}",
        signature="(n :int) -> {sum :int}",
        tools=[wait_forever],
        name="stuck",
        description="Waits.",
    )
    return SubAgent(
        prompt="Stuck {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[waiter.as_tool()],
        name="stuck-parent",
    )


def durable() -> SubAgent:
    """An orchestrator whose program and whose agent's program call ``logged`` (its side
    effects counted by the durability tests)."""
    from temporal.agents import logged

    relay = SubAgent(
        prompt="Relay {{x}}",
        signature="(x :int) -> {sum :int}",
        tools=[logged],
        name="relay",
        description="Logs twice.",
    )
    return SubAgent(
        prompt="Durable {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[relay.as_tool(), logged],
        name="durable",
    )


def second() -> SubAgent:
    """A mission whose second turn calls an agent (``relay``: two calls of ``logged``)."""
    from temporal.agents import logged

    relay = SubAgent(
        prompt="Relay {{x}}",
        signature="(x :int) -> {sum :int}",
        tools=[logged],
        name="relay",
        description="Logs twice.",
    )
    return SubAgent(
        prompt="Second {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[relay.as_tool()],
        name="second",
    )


def fanout() -> SubAgent:
    """A mission of ``logged``, then a ``pmap`` over an agent (``relay``, two calls of
    ``logged`` each): the chaos run's (``tests/temporal/chaos.py``). Its value is
    ``{"total": 10 * n + 50}``."""
    from temporal.agents import logged

    relay = SubAgent(
        prompt="Relay {{x}}",
        signature="(x :int) -> {sum :int}",
        tools=[logged],
        name="relay",
        description="Logs twice.",
    )
    return SubAgent(
        prompt="Fanout {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[relay.as_tool(), logged],
        name="fanout",
    )


def delegator() -> ReAct:
    """A ReAct agent whose tool is an agent (a plain tool call, not a program's)."""
    return ReAct(system_prompt=DELEGATE, name="delegator")


HOSTED = [summer().as_tool()]
"""An agent tool a worker hosts (``ptcflow worker --tools``): refused there."""


class CallHosted(msgspec.Struct, frozen=True, kw_only=True):
    """One call of ``summer`` by name (a tool the run does not know: a worker's own)."""

    name: str = "call-hosted"

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        """Ask for the call."""
        call = ToolExec(id=f"{run.run_id}/hosted", tool_name="summer", arguments={"a": 2, "b": 3})
        return None, [call]

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        """Keep the call's result."""
        return (signal.data.result if signal.type == TOOL_RESULT else state), []

    def outcome(self, state: Any) -> Outcome | None:
        """Done with the call's result."""
        return None if state is None else Outcome(result=state, usage=Usage())

    def snapshot(self, state: Any) -> Any:
        """Nothing to share."""
        return None
