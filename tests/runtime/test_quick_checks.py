"""Directive fields are checked with ``problems()`` before anything starts, a subclass's
own rules included."""

from __future__ import annotations

import pytest

from ptcflow.directives import ToolExec
from ptcflow.runtime import Runtime

from .support import Probe, terminals


class Strict(ToolExec, frozen=True, kw_only=True, tag="strict_tool_exec"):
    """A subclass with a rule of its own: the quick check must not skip it."""

    def problems(self) -> list[str]:
        return (
            [*super().problems(), "strict calls need an 'x' argument"]
            if ("x" not in self.arguments)
            else super().problems()
        )


@pytest.mark.anyio
async def test_a_subclass_with_its_own_problems_is_still_checked() -> None:
    async def add(x: int = 1, y: int = 2) -> int:
        return x + y

    async with Runtime(tools={"add": add}) as rt:
        step = await rt.run(Probe([Strict(id="s", tool_name="add")]), "go", record=True)
    (result,) = terminals(step.signals, "s")
    assert not result.data.result.ok  # the tool never ran
    error = result.data.result.error
    assert error.type == "validation" and "strict calls need" in error.message
