"""The workload of bench/temporal_throughput.py, importable by Temporal workers by path."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

from ptcflow import SubAgent
from ptcflow.runtime import LLMRequest
from ptcflow.signals import ToolCall
from ptcflow.testing import ScriptedLLM


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


MISSION = "Mission"
HELPER = "Helper"
PROGRAMS = {
    MISSION: '(return {:total (:sum (call "helper" {:x (call "add" {:x 1 :y 2})}))})',
    HELPER: '(return {:sum (call "add" {:x ctx/x :y 1})})',
}
"""The mission's programs: the orchestrator adds, then calls its agent; the agent adds."""


def _script(req: LLMRequest) -> Any:
    user = next((m.content for m in req.messages if m.role == "user"), "")
    if isinstance(user, str) and user.split(" ", 1)[0] in PROGRAMS:
        return f"```clojure\n{PROGRAMS[user.split(' ', 1)[0]]}\n```"
    if req.messages[-1].role == "tool":
        return "5"
    return ToolCall(id="call_1", name="add", input={"x": 2, "y": 3})


def model() -> ScriptedLLM:
    """The two-turn script: add(2, 3), then "5" (stateless)."""
    return ScriptedLLM(_script)


@activity.defn(name="bench.plain")
async def plain_activity(x: int) -> int:
    """The plain-Temporal baseline's activity."""
    return x + 1


@workflow.defn(name="bench.plain")
class PlainWorkflow:
    """The plain-Temporal baseline: three activities in a row, nothing else."""

    @workflow.run
    async def run(self, x: int) -> int:
        """Three activities."""
        for _ in range(3):
            x = await workflow.execute_activity(
                plain_activity, x, start_to_close_timeout=timedelta(seconds=30)
            )
        return x


def helper() -> SubAgent:
    """The mission's agent used as a tool: one turn, one tool call in its program."""
    return SubAgent(
        prompt=HELPER + " {{x}}",
        signature="(x :int) -> {sum :int}",
        tools=[add],
        name="helper",
        description="Adds one.",
    )


def mission() -> SubAgent:
    """A SubAgent mission: one turn whose program calls ``add`` and then ``helper`` (a
    child workflow). On Temporal: the orchestrator's model call and its program's two
    rounds (it suspends on the agent call), the child's model call and program: five
    activities and one child workflow."""
    return SubAgent(
        prompt=MISSION + " {{n}}",
        signature="(n :int) -> {total :int}",
        tools=[add, helper().as_tool()],
        name="mission",
    )


MISSION_ACTIVITIES = 5
"""Activities per mission (see :func:`mission`), the plain baseline's too."""
