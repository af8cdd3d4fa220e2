"""LLMTool: a judgment by default, a small agent with tools, placeholders checked at creation."""

from __future__ import annotations

import pytest

from ptcflow import LLMTool, ReAct, SubAgent, Tool
from ptcflow.errors import ConfigError
from ptcflow.runtime import Runtime
from ptcflow.testing import ScriptedLLM

from .composition_support import first_user, router

pytestmark = pytest.mark.anyio

URGENT = LLMTool(
    prompt="Is {{email.subject}} urgent for a {{tier}} customer?",
    signature="(email {subject :string}, tier :string) -> {urgent :bool, reason :string}",
    description="Decides whether an email is urgent.",
    name="is_urgent",
)


def test_the_specs_template_error_at_creation() -> None:
    with pytest.raises(ConfigError, match=r"template_error: placeholder \{\{unknown\}\} not found"):
        LLMTool(prompt="Hello {{unknown}}", signature="(name :string) -> {greeting :string}")
    ok = LLMTool(prompt="Hello {{name}}", signature="(name :string) -> {greeting :string}")
    assert isinstance(ok, Tool) and ok.calls_model and ok.agent.judgment
    with pytest.raises(ConfigError, match="llm must be"):
        LLMTool(prompt="Hi", signature=":string", llm=42)
    with pytest.raises(ConfigError, match="max_turns is for an LLMTool with tools"):
        LLMTool(prompt="Hi", signature=":string", max_turns=3)


async def test_a_judgment_answers_with_the_callers_model() -> None:
    triage = SubAgent(
        prompt="Triage {{subject}}",
        signature="(subject :string) -> {urgent :bool}",
        tools=[URGENT],
    )
    llm = ScriptedLLM(
        router(
            {
                "Is Server down urgent": '(do {:urgent true :reason "outage"})',
                "Triage": '(return {:urgent (:urgent (call "is_urgent" '
                '{:email {:subject ctx/subject} :tier "gold"}))})',
            }
        )
    )
    async with Runtime(llm=llm) as rt:
        step = await rt.run(triage, context={"subject": "Server down"}, llm="sonnet")
    assert step.ok and step.value == {"urgent": True}
    asked = [r for r in llm.requests if first_user(r).startswith("Is ")]
    assert [first_user(r) for r in asked] == ["Is Server down urgent for a gold customer?"]
    assert asked[0].model == "sonnet"  # llm="caller": the caller's model


async def test_an_llm_tool_with_its_own_model_and_tools_is_a_small_agent() -> None:
    def lookup(sku: str) -> dict[str, int]:
        """Stock of a product."""
        return {"stock": 3}

    checker = LLMTool(
        prompt="Is {{sku}} in stock?",
        signature="(sku :string) -> {in_stock :bool}",
        llm="haiku",
        tools=[lookup],
        name="in_stock",
    )
    assert not checker.agent.judgment and checker.agent.max_turns == 5
    llm = ScriptedLLM(
        router(
            {
                "Is A1 in stock": lambda r: (
                    '(call "lookup" {:sku ctx/sku})'
                    if len(r.messages) < 3
                    else '(return {:in_stock (pos? (:stock (call "lookup" {:sku ctx/sku})))})'
                ),
                "What": lambda r: (
                    ScriptedLLM.tool_call("in_stock", sku="A1") if len(r.messages) < 3 else "yes"
                ),
            }
        )
    )
    async with Runtime(llm=llm) as rt:  # a ReAct caller: native tool calls
        step = await rt.run(ReAct(model="sonnet"), "What about A1?", tools=[checker])
    assert step.ok and step.value == "yes"
    models = {first_user(r): r.model for r in llm.requests}
    assert models == {"Is A1 in stock?": "haiku", "What about A1?": "sonnet"}
    answer = [r for r in llm.requests if first_user(r) == "What about A1?"][-1]
    assert '"in_stock":true' in answer.messages[-1].content


async def test_a_judgment_that_answers_badly_is_a_tool_error() -> None:
    triage = SubAgent(prompt="Triage", signature=":bool", tools={"judge": URGENT})
    llm = ScriptedLLM(
        router(
            {
                "Is x urgent": '(do {:urgent "very"})',
                "Triage": lambda r: (
                    '(call "judge" {:email {:subject "x"} :tier "gold"})'
                    if len(r.messages) < 3
                    else "(return false)"
                ),
            }
        )
    )
    step = await triage.run(llm=llm)
    assert step.ok and step.trace is not None
    (call,) = step.trace.turns[0].execution.tool_calls
    assert call.name == "judge" and call.error is not None
    assert "urgent" in call.error.message
