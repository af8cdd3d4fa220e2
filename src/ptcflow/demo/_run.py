"""The offline demo: a SubAgent mission with its trace, one ReAct agent with a live view of
its signals, then many agents at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from ptcflow.demo._mission import run_mission
from ptcflow.demo._model import demo_model, question_for
from ptcflow.demo._tools import convert_currency, search_orders, total
from ptcflow.demo._view import render_signal
from ptcflow.runtime import Runtime, Step
from ptcflow.signals import SignalBus, Subscription
from ptcflow.strategies import ReAct

__all__ = ("CUSTOMERS", "DemoReport", "demo_agent", "demo_tools", "run_demo")

CUSTOMERS = ("Alice", "Bob", "Chen", "Dana", "Emre", "Fatima")
"""The customers in the demo data; the concurrent agents ask about them in turn."""

SYSTEM_PROMPT = (
    "You are an order analyst. Use the tools to look orders up, convert currencies and add "
    "amounts; answer in one sentence."
)


class DemoReport(msgspec.Struct, frozen=True, kw_only=True):
    """What the demo measured.

    Attributes:
        mission_ok: whether the SubAgent mission completed.
        mission: the mission's answer (its value as text, or why it failed).
        answer: the single agent's final answer.
        agents: how many agents ran concurrently.
        ok: how many of them completed.
        seconds: wall time of the concurrent phase.
        runs_per_second: ``agents / seconds``.
    """

    mission_ok: bool
    mission: str
    answer: str
    agents: int
    ok: int
    seconds: float
    runs_per_second: float


def demo_tools() -> list[Callable[..., Any]]:
    """The demo's tools: ``search_orders``, ``convert_currency``, ``total``."""
    return [search_orders, convert_currency, total]


def demo_agent() -> ReAct:
    """The demo's agent: a ReAct loop with an analyst system prompt."""
    return ReAct(system_prompt=SYSTEM_PROMPT, max_iterations=6, name="order-analyst")


async def run_demo(
    *,
    agents: int = 1000,
    latency_ms: float = 20.0,
    customer: str = "Alice",
    out: Callable[[str], None] = print,
    llm: Any = None,
) -> DemoReport:
    """Run the demo and print it through ``out``. Blocks until done; offline.

    First a SubAgent solves a revenue question over the order data in three PTC-Lisp
    programs (one a mistake it recovers from) and its trace is printed; then a ReAct agent
    answers a question about ``customer`` while every ``ai.**`` signal is printed as it is
    published; then ``agents`` agents run concurrently on one Runtime (the scripted model
    waits ``latency_ms`` per call, like a fast real model).

    Args:
        agents: how many agents to run concurrently (0 skips that part).
        latency_ms: the scripted model's latency per call.
        customer: whom the single agent is asked about.
        out: where lines go.
        llm: a real model (an ``LLMProvider`` or ``ModelResolver``, for example a
            ``ModelRegistry``) instead of the scripted one; ``agents`` then also use it.

    Returns:
        A :class:`DemoReport`.
    """
    mission = await run_mission(out=out, llm=llm)
    mission_answer = str(mission.value) if mission.ok else f"(failed: {mission.fail})"
    agent = demo_agent()
    question = question_for(customer)
    scripted = llm is None
    out("")
    who = "a scripted model (offline: no network, no API key)" if scripted else "a real model"
    out(f"Part 2: a ReAct agent (one native tool call per model turn) on {who}.")
    out("")
    out(f"Question: {question}")
    out("Signals (bus subscription 'ai.**'):")
    bus = SignalBus()
    model = demo_model(latency=latency_ms / 1000) if scripted else llm
    async with Runtime(llm=model, tools=demo_tools(), bus=bus) as rt:
        sub = bus.subscribe("ai.**")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_print_signals, sub, out)
            step = await rt.run(agent, question, name="order-analyst")
            sub.close()
    answer = str(step.value) if step.ok else f"(failed: {step.error})"
    out("")
    out(f"Answer: {answer}")
    out(
        f"  {_count(step.turns, 'model call')}, {_count(step.tool_calls, 'tool call')}, "
        f"{step.usage.input_tokens} + {step.usage.output_tokens} tokens, "
        f"{step.duration_ms:.1f} ms"
    )
    if agents <= 0:
        return DemoReport(
            mission_ok=mission.ok,
            mission=mission_answer,
            answer=answer,
            agents=0,
            ok=0,
            seconds=0.0,
            runs_per_second=0.0,
        )
    out("")
    out(
        f"Part 3: {agents:,} agents at once on one Runtime "
        f"({latency_ms:g} ms simulated model latency per call)..."
    )
    steps, seconds = await _many(agent, agents, model)
    ok = sum(1 for s in steps if s.ok)
    rate = agents / seconds if seconds > 0 else float("inf")
    calls = sum(s.turns for s in steps)
    out(
        f"  {ok:,}/{agents:,} completed in {seconds:.2f} s: {rate:,.0f} runs/s "
        f"({_count(calls, 'model call')}, {_count(sum(s.tool_calls for s in steps), 'tool call')})"
    )
    sequential = calls * latency_ms / 1000
    if sequential > 0:
        out(f"  (one after another, the model latency alone would take {sequential:,.1f} s)")
    return DemoReport(
        mission_ok=mission.ok,
        mission=mission_answer,
        answer=answer,
        agents=agents,
        ok=ok,
        seconds=seconds,
        runs_per_second=rate,
    )


async def _print_signals(sub: Subscription, out: Callable[[str], None]) -> None:
    async for signal in sub:
        out(render_signal(signal))


async def _many(agent: ReAct, agents: int, model: Any) -> tuple[list[Step], float]:
    steps: list[Step] = []
    started = time.perf_counter()
    async with Runtime(llm=model, tools=demo_tools()) as rt:

        async def one(i: int) -> None:
            steps.append(await rt.run(agent, question_for(CUSTOMERS[i % len(CUSTOMERS)])))

        async with anyio.create_task_group() as tg:
            for i in range(agents):
                tg.start_soon(one, i)
    return steps, time.perf_counter() - started


def _count(n: int, noun: str) -> str:
    """``1 tool call``, ``2 tool calls``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
