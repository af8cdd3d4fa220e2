"""ReAct's hot path: ignored signals hand back the very same state, the one-call shortcuts
agree with the general paths, and malformed data is still ignored or refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.signals import (
    USAGE,
    ErrorEnvelope,
    LLMResponse,
    LLMResponseData,
    Ok,
    Signal,
    ToolCall,
    ToolSpec,
    Usage,
    UsageData,
    tool_result_content,
)
from ptcflow.strategies import ReAct, ReActState, RunInfo
from ptcflow.testing import SignalFactory

TOOLS = (ToolSpec(name="add"), ToolSpec(name="mul"))


def started(react: ReAct | None = None) -> tuple[ReAct, ReActState, LLMGenerate, SignalFactory]:
    react = react or ReAct()
    state, [directive] = react.init(RunInfo(run_id="r1", input="go", request_id="q", tools=TOOLS))
    assert isinstance(directive, LLMGenerate)
    return react, state, directive, SignalFactory("r1", request_id="q")


def fold(react: ReAct, state: ReActState, signals: list[Signal]) -> tuple[ReActState, list[Any]]:
    out: list[Any] = []
    for signal in signals:
        state, more = react.handle(state, signal)
        out.extend(more)
    return state, out


def awaiting_tools(n: int) -> tuple[ReAct, ReActState, list[ToolExec], SignalFactory]:
    react, state, d, sig = started()
    calls = [ToolCall(id=f"c{i}", name="add", input={"x": i}) for i in range(n)]
    state, execs = fold(react, state, sig.llm_reply(d, "", tool_calls=calls))
    assert state.status == "awaiting_tool" and len(execs) == n
    return react, state, execs, sig


IGNORED_WHILE_ASKING: dict[str, Callable[[SignalFactory, LLMGenerate], Signal]] = {
    "tool started": lambda sig, d: sig.tool_started("c1", "add"),
    "request completed": lambda sig, d: sig.make("ai.request.completed"),
    "unknown type": lambda sig, d: sig.make("x.custom", {"any": 1}),
    "usage of another call": lambda sig, d: sig.usage("r1/llm/9", Usage(input_tokens=1)),
    "usage without UsageData": lambda sig, d: sig.make(USAGE, "junk", call=d),
    "response of another call": lambda sig, d: sig.llm_response("r1/llm/9", LLMResponse()),
    "response without LLMResponseData": lambda sig, d: sig.make("ai.llm.response", 5, call=d),
    "empty delta": lambda sig, d: sig.delta(d, ""),
    "tool result while asking": lambda sig, d: sig.tool_result("c1", 5),
}


@pytest.mark.parametrize("make", IGNORED_WHILE_ASKING.values(), ids=IGNORED_WHILE_ASKING.keys())
def test_an_ignored_signal_returns_the_same_state_object(
    make: Callable[[SignalFactory, LLMGenerate], Signal],
) -> None:
    react, state, d, sig = started()
    after, out = react.handle(state, make(sig, d))
    assert after is state and not out


@pytest.mark.parametrize("n", [1, 3])
def test_stale_and_duplicate_tool_results_return_the_same_state_object(n: int) -> None:
    react, state, execs, sig = awaiting_tools(n)
    after, out = react.handle(state, sig.tool_result("nope", 1))
    assert after is state and not out
    if n > 1:  # a batch of several: the first result is kept, a second one is ignored
        state, _ = react.handle(state, sig.tool_result(execs[0], 1))
        after, out = react.handle(state, sig.tool_result(execs[0], 2))
        assert after is state and not out
        assert state.pending[0].result == Ok(payload=1)


def test_a_response_without_a_call_id_never_matches() -> None:
    # even for a state waiting on the model with no call id recorded (built by hand)
    state = ReActState(run_id="r1", status="awaiting_llm")
    signal = SignalFactory("r1").make(
        "ai.llm.response", LLMResponseData(result=Ok(payload=LLMResponse(text="x")))
    )
    assert signal.call_id is None
    after, out = ReAct().handle(state, signal)
    assert after is state and not out


def test_signals_after_completion_return_the_same_state_object() -> None:
    react, state, d, sig = started()
    state, _ = fold(react, state, sig.llm_reply(d, "5"))
    assert state.status == "completed"
    for signal in [
        *sig.llm_reply(d, "late"),
        sig.tool_result("c1", 1),
        sig.request_failed(),
        sig.make("ai.request.completed"),
    ]:
        after, out = react.handle(state, signal)
        assert after is state and not out


@pytest.mark.parametrize("n", [1, 2])
def test_one_call_and_many_call_batches_append_the_same_tool_messages(n: int) -> None:
    react, state, execs, sig = awaiting_tools(n)
    for e in reversed(execs):  # any arrival order: call order in the conversation
        state, out = fold(react, state, [sig.tool_result(e, {"sum": e.arguments["x"]})])
    tools = [m for m in state.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == [e.id for e in execs]
    assert [m.name for m in tools] == ["add"] * n
    assert [m.content for m in tools] == [
        tool_result_content(Ok(payload={"sum": i})) for i in range(n)
    ]
    assert state.pending == () and state.status == "awaiting_llm"
    assert [type(d) for d in out] == [LLMGenerate]


@pytest.mark.parametrize("n", [1, 2])
def test_a_cancelled_result_fails_one_call_and_many_call_batches_alike(n: int) -> None:
    react, state, execs, sig = awaiting_tools(n)
    cancelled = ErrorEnvelope.make("cancelled", "run cancelled")
    state, out = fold(react, state, [sig.tool_result(e, cancelled) for e in execs])
    assert out == []
    assert (state.status, state.reason, state.error) == ("failed", "cancelled", cancelled)
    assert state.pending == ()
    assert len([m for m in state.messages if m.role == "tool"]) == n


def test_llm_ids_stay_sequential_past_the_precomputed_suffixes() -> None:
    react, state, d, sig = started(ReAct(max_iterations=200))
    ids = [d.id]
    for turn in range(1, 80):
        call = ToolCall(id=f"t{turn}", name="add", input={})
        state, [exec_] = fold(react, state, sig.llm_reply(ids[-1], "", tool_calls=[call]))
        state, [ask] = fold(react, state, [sig.tool_result(exec_, turn)])
        assert isinstance(ask, LLMGenerate) and ask.iteration == turn + 1
        ids.append(ask.id)
    assert ids == [f"r1/llm/{n}" for n in range(1, 81)]
    assert state.llm_count == 80 and state.llm_call_id == "r1/llm/80"


def test_usage_is_taken_on_the_first_call_and_summed_after() -> None:
    react, state, d, sig = started()
    first, second = (
        Usage(input_tokens=3, output_tokens=1),
        Usage(input_tokens=5, cache_read_tokens=2),
    )
    state, _ = fold(react, state, [sig.usage(d, first)])
    assert state.usage == first and state.usage_seen
    state, [e] = fold(
        react, state, [sig.llm_response(d, LLMResponse(tool_calls=(ToolCall(id="c", name="add"),)))]
    )
    assert state.usage == first  # the usage signal counted, the response's is not added
    state, [d2] = fold(react, state, [sig.tool_result(e, 1)])
    assert not state.usage_seen
    state, _ = fold(react, state, [sig.usage(d2, second)])
    assert state.usage == Usage(input_tokens=8, output_tokens=1, cache_read_tokens=2)


def test_a_usage_payload_that_is_not_a_usage_is_refused_not_stored() -> None:
    # The runtime turns an exception from handle() into a failed run: bad data must not
    # slip into the state as if it were token counts.
    react, state, d, sig = started()
    bad = sig.make(USAGE, UsageData(usage="12 tokens"), call=d)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        react.handle(state, bad)


def test_a_new_request_after_a_failure_starts_clean() -> None:
    react, state, d, sig = started()
    state, _ = fold(react, state, [sig.llm_response(d, ErrorEnvelope.make("auth", "no key"))])
    assert (state.status, state.reason) == ("failed", "llm_error") and state.error is not None
    state, [d2] = fold(react, state, [sig.request_started("again")])
    assert (state.status, state.error, state.reason, state.text) == ("awaiting_llm", None, "", "")
    assert (state.iteration, state.llm_count, state.llm_call_id) == (1, 2, "r1/llm/2")
    assert isinstance(d2, LLMGenerate) and d2.id == "r1/llm/2" and d2.iteration == 1
    assert react.outcome(state) is None


def test_outcome_of_a_failed_state_without_an_error_is_internal() -> None:
    outcome = ReAct().outcome(ReActState(run_id="r", status="failed"))
    assert outcome is not None and not outcome.result.ok
    assert outcome.result.error.type == "internal"  # type: ignore[union-attr]
