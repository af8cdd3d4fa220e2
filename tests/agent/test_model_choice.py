"""An agent's model, in any of its four shapes, is one ``ModelSource`` for the runtime; the
wrappers of model calls (a mission's turn budget, the retry filter) apply to each shape."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ptcflow import MissionLimits, SubAgent
from ptcflow.agent._model import model_kind
from ptcflow.providers import ModelRegistry, ModelSource
from ptcflow.runtime import Runtime
from ptcflow.testing import ScriptedLLM

from .composition_support import router

pytestmark = pytest.mark.anyio

ANSWERS: dict[str, Any] = {
    "Top": '(return (call "leaf" {:x 1}))',
    "Leaf": "(return {:x (+ ctx/x 1)})",
}


def _tree() -> SubAgent:
    leaf = SubAgent(prompt="Leaf {{x}}", signature="(x :int) -> {x :int}", name="leaf")
    return SubAgent(prompt="Top", signature="{x :int}", name="top", tools=[leaf.as_tool()])


def test_model_kind_names_the_four_shapes_once() -> None:
    llm = ScriptedLLM(["x"])
    registry = ModelRegistry(providers={"scripted": llm})
    assert model_kind("haiku") == "name"
    assert model_kind(llm) == model_kind(registry) == model_kind(ModelSource.of(llm)) == "source"
    assert model_kind(lambda inp: "x") == "function"
    assert model_kind(42) is None and model_kind(_tree()) is None  # an agent is no model


@pytest.mark.parametrize("budget", [1, 2])
async def test_a_missions_budget_counts_the_calls_a_registry_resolves(budget: int) -> None:
    llm = ScriptedLLM(router(ANSWERS))
    registry = ModelRegistry(providers={"scripted": llm}, aliases={"fast": "scripted:m1"})
    async with Runtime(llm=registry) as rt:
        with anyio.fail_after(20):
            step = await rt.run(
                _tree(), llm="fast", mission_limits=MissionLimits(turn_budget=budget)
            )
    assert {r.model for r in llm.requests} == {"m1"}
    if budget == 2:
        assert step.ok and step.value == {"x": 2} and len(llm.requests) == 2
    else:  # the leaf's call is past the budget: refused before it reaches the model
        assert len(llm.requests) == 1
        assert step.trace is not None
        call = step.trace.turns[0].execution.tool_calls[0]
        assert call.error is not None and call.error.category == "turn_budget_exceeded"
