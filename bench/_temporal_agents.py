"""The workload of bench/temporal_throughput.py, importable by Temporal workers by path."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

from ptcflow.runtime import LLMRequest
from ptcflow.signals import ToolCall
from ptcflow.testing import ScriptedLLM


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def _script(req: LLMRequest) -> Any:
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
