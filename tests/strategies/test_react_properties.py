"""ReAct under arbitrary signal sequences (hypothesis): it never raises, directive ids stay
unique, terminal states stay terminal, ignored signals hand back the same state object,
and the state is always JSON."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings, strategies as st

from ptcflow.directives import Directive
from ptcflow.signals import ErrorEnvelope, LLMResponse, Signal, ToolCall, ToolSpec, Usage
from ptcflow.strategies import ReAct, ReActState, RunInfo
from ptcflow.testing import SignalFactory

TOOL_IDS = ["c1", "c2", "dup", "dup~1.1", "call_1_0", "call_2_0", "r/llm/1", ""]
NAMES = ["add", "mul", "nope"]

calls = st.lists(
    st.builds(
        ToolCall,
        id=st.sampled_from(["c1", "c2", "dup", ""]),
        name=st.sampled_from(NAMES),
        input=st.dictionaries(st.sampled_from(["x", "y"]), st.integers()),
    ),
    min_size=1,
    max_size=3,
)
errors = st.builds(
    ErrorEnvelope.make,
    st.sampled_from(["timeout", "cancelled", "auth", "tool_error"]),
    st.text(max_size=10),
)


@st.composite
def events(draw: st.DrawFn) -> tuple[str, Any, str]:
    # weighted towards the signals that move a run forward, with some noise and failures
    kind = draw(
        st.sampled_from(
            ["response"] * 4
            + ["tool"] * 6
            + ["delta", "usage", "usage", "tool_error", "request", "other", "error", "failed"]
        )
    )
    if kind in ("response", "error", "delta", "usage"):
        call = draw(st.sampled_from(["r/llm/1", "r/llm/2", "r/llm/3", "x"]))
    else:
        call = draw(st.sampled_from(TOOL_IDS))
    if kind == "response":
        tool_calls = draw(st.one_of(calls, calls, st.just([])))
        return kind, LLMResponse(text=draw(st.text(max_size=5)), tool_calls=tuple(tool_calls)), call
    if kind in ("error", "tool_error", "failed"):
        return kind, draw(errors), call
    if kind == "tool":
        return kind, draw(st.integers() | st.text(max_size=5)), call
    if kind == "usage":
        return kind, Usage(input_tokens=draw(st.integers(0, 99))), call
    return kind, draw(st.text(max_size=5)), call


def to_signal(sig: SignalFactory, kind: str, value: Any, call: str) -> Signal:
    if kind == "delta":
        return sig.delta(call, value)
    if kind == "usage":
        return sig.usage(call, value)
    if kind in ("response", "error"):
        return sig.llm_response(call, value)
    if kind in ("tool", "tool_error"):
        return sig.tool_result(call, value, tool_name="add")
    if kind == "request":
        return sig.request_started(value)
    if kind == "failed":
        return sig.request_failed(value)
    return sig.make("ai.other", value)


@settings(max_examples=150, deadline=None)
@given(
    script=st.lists(events(), max_size=25),
    stream=st.booleans(),
    max_iterations=st.integers(1, 3),
)
def test_react_never_raises_and_keeps_its_invariants(
    script: list[tuple[str, Any, str]], stream: bool, max_iterations: int
) -> None:
    react = ReAct(stream=stream, max_iterations=max_iterations)
    sig = SignalFactory("r")
    tools = (ToolSpec(name="add"), ToolSpec(name="mul"))
    state, first = react.init(RunInfo(run_id="r", input="go", tools=tools))
    emitted: list[Directive] = list(first)
    for kind, value, call in script:
        before = state
        state, out = react.handle(state, to_signal(sig, kind, value, call))
        emitted.extend(out)
        if kind == "other" or (before.status in ("completed", "failed") and kind != "request"):
            # ignored: the very same object comes back (the runtime relies on it to skip
            # outcome()); a finished run only changes on a new request
            assert state is before and not out
        assert (react.outcome(state) is None) == (state.status not in ("completed", "failed"))
        assert len(state.pending) == 0 or state.status == "awaiting_tool"
        tool_ids = [m.tool_call_id for m in state.messages if m.role == "tool"]
        assert len(tool_ids) == len(set(tool_ids))
    ids = [d.id for d in emitted]
    assert len(ids) == len(set(ids)), f"directive ids repeat: {ids}"
    assert all(not d.problems() for d in emitted)
    snap = react.snapshot(state)
    assert msgspec.convert(msgspec.json.decode(msgspec.json.encode(snap)), ReActState) == state
