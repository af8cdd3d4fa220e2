"""The executor's quick field checks agree with ``Directive.problems()`` on every input."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.runtime import Runtime
from ptcflow.runtime._executor import _VALID
from ptcflow.signals import Message

from .support import Probe, terminals

ints = st.one_of(st.none(), st.integers(-3, 3))
names = st.sampled_from(["", "x", "gpt"])


@given(
    id=names,
    timeout_ms=ints,
    max_retries=st.integers(-2, 2),
    backoff=st.integers(-2, 2),
    messages=st.sampled_from([(), (Message(role="user", content="hi"),)]),
    model=st.one_of(st.none(), names),
    alias=st.one_of(st.none(), names),
)
def test_llm_generate_quick_check_matches_problems(
    id: str,
    timeout_ms: int | None,
    max_retries: int,
    backoff: int,
    messages: tuple[Message, ...],
    model: str | None,
    alias: str | None,
) -> None:
    d = LLMGenerate(
        id=id,
        timeout_ms=timeout_ms,
        max_retries=max_retries,
        retry_backoff_ms=backoff,
        messages=messages,
        model=model,
        model_alias=alias,
    )
    assert _VALID[LLMGenerate](d) == (d.problems() == [])


@given(
    id=names,
    timeout_ms=ints,
    max_retries=st.integers(-2, 2),
    backoff=st.integers(-2, 2),
    tool=names,
)
def test_tool_exec_quick_check_matches_problems(
    id: str, timeout_ms: int | None, max_retries: int, backoff: int, tool: str
) -> None:
    d = ToolExec(
        id=id,
        timeout_ms=timeout_ms,
        max_retries=max_retries,
        retry_backoff_ms=backoff,
        tool_name=tool,
    )
    assert _VALID[ToolExec](d) == (d.problems() == [])


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
