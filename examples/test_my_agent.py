"""How to test your own agent with ptcflow.testing (run with pytest).

.venv/bin/pytest examples/test_my_agent.py
"""

from __future__ import annotations

import anyio

from ptcflow.runtime import Runtime
from ptcflow.signals import ToolCall, ToolSpec
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, SignalFactory, run_strategy


def lookup_price(sku: str) -> float:
    """Return the price of a product.

    Args:
        sku: the product code.
    """
    return {"A1": 9.5, "B2": 20.0}[sku]


AGENT = ReAct(system_prompt="You answer price questions.", llm_max_retries=1)


def test_answers_with_the_tool_result() -> None:
    async def main() -> None:
        llm = ScriptedLLM([ScriptedLLM.tool_call("lookup_price", sku="A1"), "A1 costs 9.50."])
        async with Runtime(llm=llm, tools=[lookup_price]) as rt:
            step = await rt.run(AGENT, "How much is A1?")
        assert step.value == "A1 costs 9.50."
        shown = [m.content for m in llm.requests[1].messages if m.role == "tool"]
        assert shown == ['{"ok":true,"result":9.5}']

    anyio.run(main)


def test_a_tool_error_is_shown_to_the_model() -> None:
    async def main() -> None:
        llm = ScriptedLLM([ScriptedLLM.tool_call("lookup_price", sku="ZZ"), "Unknown product."])
        async with Runtime(llm=llm, tools=[lookup_price]) as rt:
            step = await rt.run(AGENT, "How much is ZZ?")
        assert step.ok
        (error,) = [m.content for m in llm.requests[1].messages if m.role == "tool"]
        assert '"ok":false' in error and "KeyError" in error

    anyio.run(main)


def test_one_retry_after_a_server_error() -> None:
    async def main() -> None:
        llm = ScriptedLLM([ScriptedLLM.server_error(503), ScriptedLLM.server_error(503), "x"])
        async with Runtime(llm=llm) as rt:
            step = await rt.run(AGENT, "hi")
        assert step.error is not None and step.error.type == "transient"
        assert len(llm.requests) == 2  # the first attempt and one retry

    anyio.run(main)


def test_the_strategy_alone() -> None:
    sig = SignalFactory("r1")
    signals = [
        sig.request_started("How much is A1?"),
        *sig.llm_reply("r1/llm/1", "", tool_calls=[ToolCall(id="c1", name="lookup_price")]),
        *sig.tool_reply("c1", 9.5, tool_name="lookup_price"),
        *sig.llm_reply("r1/llm/2", "A1 costs 9.50."),
    ]
    state, directives = run_strategy(AGENT, signals, tools=[ToolSpec(name="lookup_price")])
    assert state.status == "completed" and len(directives) == 3
