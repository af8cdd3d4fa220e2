"""Tools, models and strategies the Temporal tests run on workers (importable by path)."""

from __future__ import annotations

from typing import Any

from ptcflow.runtime import LLMRequest
from ptcflow.testing import ScriptedLLM


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def _answer(req: LLMRequest) -> Any:
    last = req.messages[-1]
    if last.role == "tool":
        return f"the answer is {last.content}"
    return ScriptedLLM.tool_call("add", x=2, y=3)


def model() -> ScriptedLLM:
    """A stateless scripted model: it asks for add(2, 3), then answers."""
    return ScriptedLLM(_answer)
