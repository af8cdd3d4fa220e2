"""Everything the runtime publishes, the journal reads back exactly (a property).

Runs are made of what the runtime does not control: what a provider returns (tool calls
whose input is any value, not only a JSON object), what tools and custom handlers return
(tuples, sets, bytes, objects, NaN), directive arguments and strategy outcomes. Whatever
they hold, every signal of the run must survive ``encode_signal`` / ``decode_signal``
unchanged, so a journal can always be read and replayed.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.directives import Directive, EmitToolError, LLMGenerate, RunChild, ToolExec
from ptcflow.runtime import Runtime, Step
from ptcflow.runtime.lowlevel import DirectiveContext
from ptcflow.signals import (
    Err,
    ErrorEnvelope,
    LLMResponse,
    Ok,
    ToolCall,
    Usage,
    decode_signal,
    encode_signal,
)

from .support import MSGS, FakeLLM, Probe


class Opaque:
    """A value JSON cannot carry."""

    def __repr__(self) -> str:
        return "<Opaque>"


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=4)
    | st.builds(Opaque)
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.frozensets(st.integers() | st.text(max_size=4), max_size=3)
        | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=4), values, max_size=3)
results = (
    values
    | values.map(lambda v: Ok(payload=v))
    | values.map(lambda v: (True, v))
    | st.builds(
        lambda t, d: Err(error=ErrorEnvelope(type=t, message="m", details=d)),
        st.text(max_size=4),
        objects,
    )
)


class Echo(Directive, frozen=True, kw_only=True, tag="test_roundtrip_echo"):
    """A custom kind: its handler returns whatever the test drew."""


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    calls = draw(
        st.lists(
            st.builds(
                lambda i, n, a: ToolCall(id=i, name=n, input=a),
                st.text(max_size=4),
                st.sampled_from(["echo", "nope"]),
                values | objects,
            ),
            max_size=2,
        )
    )
    return {
        "response": LLMResponse(
            text=draw(st.text(max_size=8)), tool_calls=tuple(calls), usage=Usage(input_tokens=1)
        ),
        "tool_output": draw(values),
        "arguments": draw(objects),
        "handler_result": draw(results),
        "error_details": draw(objects),
        "outcome": draw(values),
        "child_outcome": draw(values),
    }


class Outcome(Probe):
    """A Probe whose outcome payload is the drawn value."""

    def __init__(self, payload: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.payload = payload

    def outcome(self, state: Any) -> Any:
        found = super().outcome(state)
        if found is None or not isinstance(found.result, Ok):
            return found
        from ptcflow.strategies import Outcome as Result

        return Result(result=Ok(payload=self.payload), reason="done")


async def _run(case: dict[str, Any]) -> Step:
    async def model(request: Any) -> LLMResponse:
        response: LLMResponse = case["response"]
        return response

    async def echo(value: Any = None) -> Any:
        return case["tool_output"]

    async def handler(directive: Echo, ctx: DirectiveContext) -> Any:
        return case["handler_result"]

    error = ErrorEnvelope(type="x", message="m", details=case["error_details"])
    strategy = Outcome(
        case["outcome"],
        [
            LLMGenerate(id="g", messages=MSGS),
            ToolExec(id="t", tool_name="echo", arguments=case["arguments"]),
            Echo(id="e"),
            EmitToolError(id="u", tool_name="nope", error=error),
            RunChild(id="c", agent="child", input=case["arguments"]),
        ],
    )
    child = Outcome(case["child_outcome"], [ToolExec(id="ct", tool_name="echo")])
    async with Runtime(
        llm=FakeLLM(model), tools={"echo": echo}, handlers={Echo: handler}, agents={"child": child}
    ) as rt:
        return await rt.run(strategy, case["arguments"], record=True)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40)
@given(case=runs())
def test_every_signal_of_a_run_survives_the_journal(backend: str, case: dict[str, Any]) -> None:
    step = anyio.run(_run, case, backend=backend)
    assert step.signals
    for signal in step.signals:
        assert decode_signal(encode_signal(signal)) == signal, signal.type
