"""The workload of bench/temporal_throughput.py, importable by Temporal workers by path."""

from __future__ import annotations

from typing import Any

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
