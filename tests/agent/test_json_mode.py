"""output="json": one validated JSON answer, native tool calls; end to end on the runtime."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow import SubAgent
from ptcflow.runtime import Runtime
from ptcflow.signals import SignalBus
from ptcflow.testing import ScriptedLLM, collect_signals

pytestmark = pytest.mark.anyio

RATER = SubAgent(
    prompt="Rate this review: {{text}}",
    signature="(text :string) -> {score :int, label :keyword}",
    output="json",
    max_turns=3,
)


def price(item: str) -> float:
    """The unit price of an item."""
    return {"apple": 1.5, "pear": 2.0}[item]


async def test_one_json_answer_validated_against_the_signature() -> None:
    llm = ScriptedLLM(['{"score": 4, "label": "positive"}'])
    step = await RATER.run(llm=llm, context={"text": "Great phone"})
    assert step.ok and step.value == {"score": 4, "label": "positive"} and step.turns == 1
    request = llm.requests[0]
    assert request.response_schema == {
        "type": "object",
        "properties": {
            "score": {"type": "integer"},
            "label": {"type": "string", "description": "keyword"},
        },
        "required": ["score", "label"],
    }
    assert request.tools == ()
    assert request.messages[1].content == "Rate this review: Great phone"
    assert '"text": "Great phone"' in request.messages[0].content


async def test_a_wrong_answer_is_fed_back_and_corrected() -> None:
    llm = ScriptedLLM(
        [
            "It is good!",
            '```json\n{"score": "4", "label": "positive"}\n```',
            '{"score": 4, "label": "positive"}',
        ]
    )
    step = await RATER.run(llm=llm, context={"text": "ok"})
    assert step.ok and step.turns == 3
    second, third = llm.requests[1].messages[-1].content, llm.requests[2].messages[-1].content
    assert second.startswith("Turn 2 of 3.") and "not valid JSON" in second
    assert (
        third.startswith("Turn 3 of 3. This is your last turn")
        and '- score: expected int, got string "4"' in third
    )
    assert step.trace is not None and len(step.trace.turns) == 3
    assert step.trace.turns[1].execution.error is not None


async def test_running_out_of_turns_fails_with_its_reason() -> None:
    llm = ScriptedLLM(["nope"] * 3)
    step = await RATER.run(llm=llm, context={"text": "ok"})
    assert not step.ok and step.reason == "max_turns_exceeded"
    assert step.fail is not None and "no valid answer after 3 model calls" in step.fail.message


async def test_tools_are_called_natively_then_the_json_answer_ends_the_run() -> None:
    agent = SubAgent(
        prompt="Total price of {{n}} {{item}}",
        signature="(n :int, item :string) -> {total :float}",
        tools=[price],
        output="json",
    )
    llm = ScriptedLLM([ScriptedLLM.tool_call("price", item="apple"), '{"total": 4.5}'])
    bus = SignalBus()
    with collect_signals(bus, "ai.**") as log:
        async with Runtime(llm=llm, bus=bus) as rt:
            step = await agent.run(context={"n": 3, "item": "apple"}, runtime=rt)
    assert step.ok and step.value == {"total": 4.5} and step.tool_calls == 1
    assert [t.name for t in llm.requests[0].tools] == ["price"]
    assert llm.requests[1].messages[-1].content == '{"ok":true,"result":1.5}'
    kinds = set(log.types())
    assert {"ai.tool.started", "ai.tool.result", "ai.llm.response"} <= kinds
    assert "ai.program.result" not in kinds
    assert step.trace is not None
    (call,) = step.trace.turns[0].execution.tool_calls
    assert (call.name, call.args, call.result) == ("price", {"item": "apple"}, 1.5)


async def test_a_model_failure_fails_the_run() -> None:
    step = await RATER.run(llm=ScriptedLLM([ScriptedLLM.auth_error()]), context={"text": "x"})
    assert not step.ok and step.reason == "llm_error"
    assert step.fail is not None and step.fail.op == "llm"


async def test_json_mode_with_a_function_llm_sees_the_schema() -> None:
    seen: list[dict[str, Any]] = []

    def llm(data: dict[str, Any]) -> str:
        seen.append(data)
        return '{"score": 1, "label": "meh"}'

    step = await RATER.run(llm=llm, context={"text": "x"})
    assert step.ok and seen[0]["response_schema"]["required"] == ["score", "label"]


def test_json_mode_from_sync_code() -> None:
    step = RATER.run_sync(
        llm=ScriptedLLM(['{"score": 5, "label": "great"}']), context={"text": "x"}
    )
    assert step.value == {"score": 5, "label": "great"}
