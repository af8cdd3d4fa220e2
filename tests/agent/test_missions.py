"""Chains and parallel missions, and the composition examples of ``examples/``."""

from __future__ import annotations

import io
import runpy
from pathlib import Path
from typing import Any

import anyio
import pytest

from ptcflow import SubAgent, print_chain
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.testing import ScriptedLLM

from .composition_support import first_user

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / name))


def test_the_email_finder_example_keeps_ids_from_the_model() -> None:
    example = _example("email_finder.py")
    step, requests = anyio.run(example["main"])
    assert step.ok and step.value == {"archived": 2}
    assert example["ARCHIVED"] == [1, 3]  # the program used the firewalled ids
    assistant = [r for r in requests if first_user(r).startswith("Archive")]
    assert "{:_ids <Firewalled>, :count 2}" in assistant[-1].messages[-1].content
    for request in assistant:
        assert all("[1 3]" not in m.content for m in request.messages)


def test_the_orchestrator_example_reaches_each_model() -> None:
    step, asked = anyio.run(_example("mission_orchestrator.py")["main"])
    assert step.ok
    assert step.value == {
        "analysis": {"category": "incident", "score": 9, "opinion": "page the on-call engineer"}
    }
    assert asked == {"Analyze": "sonnet", "Classify": "haiku", "Score": "sonnet", "Expert": "opus"}


def test_the_chain_example_checks_and_raises() -> None:
    example = _example("agent_chain.py")
    steps, zed, raised = anyio.run(example["main"])
    assert isinstance(steps, list) and [s.ok for s in steps] == [True, True, True]
    assert steps[2].value == {"sent": True}
    assert (zed, raised) == ("nothing to do", "not_found")
    out = io.StringIO()
    print_chain(steps, file=out, color=False)
    text = out.getvalue()
    assert "══ Step 1 of 3: ok (returned)" in text and "══ Step 3 of 3: ok (returned)" in text
    assert "│ Prompt: Draft a reply about 2 urgent emails" in text


LEAVES = [
    SubAgent(prompt=f"{kind} {{{{text}}}}", signature="(text :string) -> :int", name=kind.lower())
    for kind in ("Count", "Measure", "Weigh")
]
ORCHESTRATOR = SubAgent(
    prompt="Survey {{text}}",
    signature="(text :string) -> [:int]",
    tools=[leaf.as_tool() for leaf in LEAVES],
    name="surveyor",
)


def _fanout_model(request: LLMRequest) -> str:
    task = first_user(request)
    if task.startswith("Survey"):
        return '(return (pmap #(call % {:text ctx/text}) ["count" "measure" "weigh"]))'
    kind, text = task.split(" ", 1)
    return f"(return {len(text) * {'Count': 1, 'Measure': 10, 'Weigh': 100}[kind]})"


@pytest.mark.anyio
async def test_many_missions_run_concurrently_in_one_task_group() -> None:
    steps: dict[int, Step] = {}
    llm = ScriptedLLM(_fanout_model, record=False, latency=0.005)
    async with Runtime(llm=llm) as rt:

        async def mission(i: int) -> None:
            steps[i] = await rt.run(ORCHESTRATOR, context={"text": "x" * (i % 7 + 1)}, trace=False)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(200):
                    tg.start_soon(mission, i)
        stats = rt.statistics()
    assert stats.runs_started == 200 * 4 and stats.runs_active == 0
    for i, step in steps.items():
        n = i % 7 + 1
        assert step.ok and step.value == [n, 10 * n, 100 * n], step.fail
    assert llm.calls == 200 * 4
