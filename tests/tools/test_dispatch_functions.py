"""dispatch / dispatch_sync take tools exactly as Runtime(tools=[...]) does."""

from __future__ import annotations

import pytest

from ptcflow.errors import UsageError
from ptcflow.tools import ToolCall, dispatch, dispatch_sync, tool


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def shout(text: str) -> str:
    """Shout."""
    return text.upper()


CALL = ToolCall(id="c1", name="add", input={"x": 2, "y": 3})


@pytest.mark.anyio
async def test_dispatch_takes_plain_functions_maps_and_tools_mixed() -> None:
    assert (await dispatch([add], CALL)).output == 5
    assert (await dispatch([add, tool(shout)], CALL)).output == 5
    plus = ToolCall(id="c2", name="plus", input={"x": 1, "y": 1})
    assert (await dispatch({"plus": add}, plus)).output == 2
    assert (await dispatch(add, CALL)).output == 5
    loud = ToolCall(id="c3", name="shout", input={"text": "hi"})
    assert (await dispatch([shout], loud)).output == "HI"


def test_dispatch_sync_takes_plain_functions() -> None:
    assert dispatch_sync([add], CALL).output == 5
    unknown = dispatch_sync([add], ToolCall(id="c9", name="ad", input={}))
    assert unknown.is_error and "Did you mean 'add'" in unknown.output.message


def test_an_entry_that_cannot_be_a_tool_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        dispatch_sync([42], CALL)
