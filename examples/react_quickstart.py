"""A ReAct agent with two Python tools, on the scripted model (runs offline).

    .venv/bin/python examples/react_quickstart.py

Replace ``ScriptedLLM(...)`` by a real provider to talk to a real model.
"""

from __future__ import annotations

import anyio

from ptcflow.demo import render_signal
from ptcflow.runtime import Runtime
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM


def add(x: float, y: float) -> float:
    """Add two numbers.

    Args:
        x: the first number.
        y: the second number.
    """
    return x + y


def multiply(x: float, y: float) -> float:
    """Multiply two numbers.

    Args:
        x: the first number.
        y: the second number.
    """
    return x * y


async def main() -> None:
    llm = ScriptedLLM(
        [
            # turn 1: two tool calls at once (they run in parallel)
            [ScriptedLLM.tool_call("add", x=2, y=3), ScriptedLLM.tool_call("multiply", x=4, y=5)],
            # turn 2: the answer, streamed word by word
            "2 + 3 = 5 and 4 × 5 = 20.",
        ],
        latency=0.05,
    )
    agent = ReAct(system_prompt="You are a careful calculator.", stream=True)
    bus = SignalBus()
    async with Runtime(llm=llm, tools=[add, multiply], bus=bus) as rt:
        sub = bus.subscribe("ai.**")
        async with anyio.create_task_group() as tg:

            async def show() -> None:
                async for signal in sub:
                    print(render_signal(signal))

            tg.start_soon(show)
            step = await rt.run(agent, "What are 2 + 3 and 4 × 5?")
            sub.close()
    print()
    print("answer:", step.value)
    model_calls = f"{step.turns} model call{'' if step.turns == 1 else 's'}"
    tool_calls = f"{step.tool_calls} tool call{'' if step.tool_calls == 1 else 's'}"
    print(f"{model_calls}, {tool_calls}, {step.duration_ms:.0f} ms")


if __name__ == "__main__":
    anyio.run(main)
