"""ReAct as a plain function: every transition, no runtime."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, strategies as st

from ptcflow.directives import (
    Directive,
    EmitRequestError,
    EmitToolError,
    LLMGenerate,
    LLMStream,
    ToolExec,
)
from ptcflow.errors import ConfigError
from ptcflow.signals import (
    LLM_RESPONSE,
    Err,
    ErrorEnvelope,
    LLMResponse,
    LLMResponseData,
    Ok,
    Signal,
    ToolCall,
    ToolSpec,
    Usage,
    tool_result_content,
)
from ptcflow.strategies import ReAct, ReActState, RunInfo, Strategy
from ptcflow.testing import SignalFactory

TOOLS = (ToolSpec(name="add"), ToolSpec(name="mul"))
RUN = "r1"


def start(
    react: ReAct | None = None, prompt: Any = "what is 2+3?", tools: tuple[ToolSpec, ...] = TOOLS
) -> tuple[ReAct, ReActState, list[Directive], SignalFactory]:
    react = react or ReAct()
    state, directives = react.init(RunInfo(run_id=RUN, input=prompt, request_id="q1", tools=tools))
    return react, state, list(directives), SignalFactory(RUN, request_id="q1")


def feed(
    react: ReAct, state: ReActState, signals: list[Signal]
) -> tuple[ReActState, list[Directive]]:
    out: list[Directive] = []
    for signal in signals:
        state, more = react.handle(state, signal)
        out.extend(more)
    return state, out


def call(name: str, id: str, **args: Any) -> ToolCall:
    return ToolCall(id=id, name=name, input=args)


def test_react_satisfies_the_strategy_protocol() -> None:
    assert isinstance(ReAct(), Strategy)


def test_init_asks_the_model_with_prompt_tools_and_config() -> None:
    react = ReAct(system_prompt="Be brief.", llm_timeout_ms=500, llm_max_retries=1, model="m")
    _, state, directives, _ = start(react)
    assert state.status == "awaiting_llm"
    assert state.iteration == 1
    [d] = directives
    assert isinstance(d, LLMGenerate) and not isinstance(d, LLMStream)
    assert d.id == "r1/llm/1"
    assert d.request_id == "q1"
    assert d.iteration == 1
    assert d.tools == TOOLS
    assert d.model == "m"
    assert (d.timeout_ms, d.max_retries) == (500, 1)
    assert [(m.role, m.content) for m in d.messages] == [
        ("system", "Be brief."),
        ("user", "what is 2+3?"),
    ]
    assert d.problems() == []


def test_init_accepts_a_prompt_mapping() -> None:
    _, state, _, _ = start(prompt={"prompt": "hi"})
    assert state.messages[-1].content == "hi"


@pytest.mark.parametrize("bad", [42, {"question": "hi"}, ["hi"], {"prompt": 3}])
def test_invalid_input_fails_at_once_with_validation(bad: Any) -> None:
    react, state, directives, _ = start(prompt=bad)
    assert directives == []
    outcome = react.outcome(state)
    assert outcome is not None and isinstance(outcome.result, Err)
    assert outcome.result.error.type == "validation"
    assert "prompt" in outcome.result.error.message
    assert outcome.reason == "invalid_input"


def test_stream_mode_emits_llm_stream_and_accumulates_deltas() -> None:
    react, state, [d], sig = start(ReAct(stream=True))
    assert isinstance(d, LLMStream)
    state, _ = feed(react, state, [sig.delta(d, "Hel"), sig.delta(d, "lo")])
    assert state.streamed == "Hello"
    state, _ = feed(react, state, [sig.usage(d, Usage(input_tokens=3, output_tokens=2))])
    # a response without text keeps the streamed text
    state, _ = feed(react, state, [sig.llm_response(d, LLMResponse(text=""))])
    assert state.status == "completed"
    assert state.text == "Hello"


def test_final_answer_completes_with_text_and_usage() -> None:
    react, state, [d], sig = start()
    state, out = feed(
        react, state, sig.llm_reply(d, "5", usage=Usage(input_tokens=7, output_tokens=1))
    )
    assert out == []
    assert state.status == "completed"
    outcome = react.outcome(state)
    assert outcome is not None
    assert outcome.result == Ok(payload="5")
    assert outcome.usage == Usage(input_tokens=7, output_tokens=1)
    assert outcome.reason == "final_answer"
    assert state.messages[-1].role == "assistant"


def test_outcome_is_none_while_running() -> None:
    react, state, _, _ = start()
    assert react.outcome(state) is None


def test_usage_comes_from_the_response_when_no_usage_signal_arrived() -> None:
    react, state, [d], sig = start()
    response = LLMResponse(text="5", usage=Usage(input_tokens=4, output_tokens=2))
    state, _ = feed(react, state, [sig.llm_response(d, response)])
    assert state.usage == Usage(input_tokens=4, output_tokens=2)


def test_usage_signal_is_not_double_counted_with_the_response() -> None:
    react, state, [d], sig = start()
    state, _ = feed(react, state, sig.llm_reply(d, "5", usage=Usage(input_tokens=4)))
    assert state.usage == Usage(input_tokens=4)


def test_tool_calls_become_parallel_tool_execs_with_config() -> None:
    react = ReAct(tool_timeout_ms=300, tool_max_retries=1)
    react, state, [d], sig = start(react)
    calls = [call("add", "c1", x=2, y=3), call("mul", "c2", x=2, y=4)]
    state, out = feed(react, state, sig.llm_reply(d, "thinking", tool_calls=calls))
    assert state.status == "awaiting_tool"
    assert [type(x) for x in out] == [ToolExec, ToolExec]
    first = out[0]
    assert isinstance(first, ToolExec)
    assert (first.id, first.tool_name, first.arguments) == ("c1", "add", {"x": 2, "y": 3})
    assert (first.timeout_ms, first.max_retries, first.iteration, first.request_id) == (
        300,
        1,
        1,
        "q1",
    )
    assert [p.id for p in state.pending] == ["c1", "c2"]
    assert state.messages[-1].tool_calls == tuple(calls)


def test_results_are_applied_in_call_order_whatever_order_they_arrive() -> None:
    react, state, [d], sig = start()
    calls = [call("add", "c1", x=2, y=3), call("mul", "c2", x=2, y=4)]
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=calls))
    state, out = feed(react, state, sig.tool_reply(execs[1], 8))
    assert out == [] and state.status == "awaiting_tool"
    state, out = feed(react, state, sig.tool_reply(execs[0], 5))
    tool_messages = state.messages[-2:]
    assert [m.tool_call_id for m in tool_messages] == ["c1", "c2"]
    assert [m.content for m in tool_messages] == [
        tool_result_content(Ok(payload=5)),
        tool_result_content(Ok(payload=8)),
    ]
    assert [m.name for m in tool_messages] == ["add", "mul"]
    [next_call] = out
    assert isinstance(next_call, LLMGenerate)
    assert next_call.id == "r1/llm/2" and next_call.iteration == 2
    assert next_call.messages == state.messages
    assert state.status == "awaiting_llm"


def test_history_is_shared_between_turns_not_copied() -> None:
    react, state, [d], sig = start()
    first_user = state.messages[0]
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("add", "c1")]))
    state, _ = feed(react, state, sig.tool_reply(execs[0], 5))
    assert state.messages[0] is first_user


def test_tool_error_results_reach_the_model_as_error_envelopes() -> None:
    react, state, [d], sig = start()
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("add", "c1")]))
    boom = ErrorEnvelope.make("tool_error", "ValueError: boom")
    state, out = feed(react, state, sig.tool_reply(execs[0], boom))
    assert '"ok":false' in state.messages[-1].content
    assert "boom" in state.messages[-1].content
    assert isinstance(out[0], LLMGenerate)


def test_unknown_tool_gets_emit_tool_error_listing_the_tools() -> None:
    react, state, [d], sig = start()
    calls = [call("add", "c1"), call("divide", "c2")]
    state, out = feed(react, state, sig.llm_reply(d, "", tool_calls=calls))
    assert isinstance(out[0], ToolExec)
    err = out[1]
    assert isinstance(err, EmitToolError)
    assert err.id == "c2" and err.tool_name == "divide"
    assert err.error.type == "unknown_tool"
    assert not err.error.retryable
    assert "add, mul" in err.error.message
    assert err.error.details["available"] == ["add", "mul"]
    # the executor answers EmitToolError with ai.tool.result; it is applied like any other
    state, _ = feed(react, state, [sig.tool_result(err, err.error)])
    state, out = feed(react, state, sig.tool_reply(out[0], 1))
    assert "unknown_tool" in state.messages[-1].content
    assert isinstance(out[0], LLMGenerate)


def test_unknown_tool_suggests_a_close_name() -> None:
    react, state, [d], sig = start()
    _, [err] = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("ad", "c1")]))
    assert isinstance(err, EmitToolError)
    assert "did you mean 'add'?" in err.error.message


def test_unknown_tool_message_when_no_tools_exist() -> None:
    react, state, [d], sig = start(tools=())
    _, [err] = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("x", "c1")]))
    assert isinstance(err, EmitToolError)
    assert "available tools: none" in err.error.message


def test_stale_and_unknown_ids_are_ignored() -> None:
    react, state, [d], sig = start()
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("add", "c1")]))
    before = state
    # a tool result for an id nobody asked for, and a late LLM response for the old call
    state, out = feed(react, state, [sig.tool_result("nope", 1), *sig.llm_reply(d, "late")])
    assert state == before and out == []
    state, out = feed(react, state, sig.tool_reply(execs[0], 5))
    # now the old tool call id is stale too
    after = state
    state, out2 = feed(react, state, [sig.tool_result(execs[0], 99)])
    assert state == after and out2 == []


def test_duplicate_tool_result_keeps_the_first() -> None:
    react, state, [d], sig = start()
    calls = [call("add", "c1"), call("add", "c2")]
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=calls))
    state, _ = feed(react, state, [sig.tool_result(execs[0], 1), sig.tool_result(execs[0], 2)])
    assert state.pending[0].result == Ok(payload=1)


def test_signals_of_other_kinds_are_ignored() -> None:
    react, state, _, sig = start()
    before = state
    state, out = feed(react, state, [sig.make("ai.embed.result"), sig.make("x.custom")])
    assert state == before and out == []
    state, out = feed(react, state, [sig.tool_started("c9", "add")])
    assert state == before


def test_duplicate_model_call_ids_are_made_unique() -> None:
    react, state, [d], sig = start()
    calls = [call("add", "same"), call("add", "same"), call("add", "")]
    state, out = feed(react, state, sig.llm_reply(d, "", tool_calls=calls))
    ids = [x.id for x in out]
    assert len(set(ids)) == 3 and ids[0] == "same"
    assert [c.id for c in state.messages[-1].tool_calls] == ids
    for x in out:
        state, _ = feed(react, state, sig.tool_reply(x, 1))
    # the next turn reuses "same" again: it must not collide with the first turn
    state, out = feed(react, state, sig.llm_reply("r1/llm/2", "", tool_calls=[call("add", "same")]))
    assert out[0].id not in ids
    assert [m.tool_call_id for m in state.messages if m.role == "tool"] == ids


def test_max_iterations_completes_with_reason_and_last_text() -> None:
    react, state, [d], sig = start(ReAct(max_iterations=2))
    state, execs = feed(react, state, sig.llm_reply(d, "step 1", tool_calls=[call("add", "a")]))
    state, [d2] = feed(react, state, sig.tool_reply(execs[0], 1))
    state, execs = feed(react, state, sig.llm_reply(d2, "step 2", tool_calls=[call("add", "b")]))
    assert len(execs) == 1  # the tools of the last allowed turn still run
    state, out = feed(react, state, sig.tool_reply(execs[0], 2))
    assert out == []
    outcome = react.outcome(state)
    assert outcome is not None
    assert outcome.result == Ok(payload="step 2")
    assert outcome.reason == "max_iterations"
    assert state.messages[-1].role == "tool"  # the conversation stays consistent


def test_llm_error_fails_the_run_with_that_error() -> None:
    react, state, [d], sig = start()
    error = ErrorEnvelope.make("auth", "HTTP 401")
    state, out = feed(react, state, [sig.llm_response(d, error, attempts=1)])
    assert out == []
    outcome = react.outcome(state)
    assert outcome is not None and outcome.result == Err(error=error)
    assert outcome.reason == "llm_error"


def test_a_response_that_is_not_an_llm_response_fails_clearly() -> None:
    react, state, [d], sig = start()
    payload: Any = {"text": "hi"}  # what a buggy custom handler might publish
    bad = sig.make(LLM_RESPONSE, LLMResponseData(result=Ok(payload=payload)), call=d)
    state, out = feed(react, state, [bad])
    assert out == [] and state.status == "failed"
    assert state.error is not None and state.error.type == "provider_error"
    assert "not an LLMResponse" in state.error.message


def test_cancelled_llm_call_fails_as_cancelled() -> None:
    react, state, [d], sig = start()
    state, _ = feed(react, state, [sig.llm_response(d, ErrorEnvelope.make("cancelled", "x"))])
    assert (state.status, state.reason) == ("failed", "cancelled")


def test_cancelled_tool_results_then_request_failed_end_as_cancelled() -> None:
    react, state, [d], sig = start()
    calls = [call("add", "c1"), call("mul", "c2")]
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=calls))
    cancelled = ErrorEnvelope.make("cancelled", "run cancelled")
    state, out = feed(
        react, state, [sig.tool_result(execs[0], 5), sig.tool_result(execs[1], cancelled)]
    )
    assert out == []  # no new model call after a cancellation
    assert (state.status, state.reason) == ("failed", "cancelled")
    assert [m.tool_call_id for m in state.messages if m.role == "tool"] == ["c1", "c2"]
    state, out = feed(react, state, [sig.request_failed()])
    assert (state.status, state.reason) == ("failed", "cancelled") and out == []


def test_request_failed_while_waiting_fails_the_run() -> None:
    react, state, [d], sig = start()
    state, _ = feed(react, state, [sig.request_failed()])
    outcome = react.outcome(state)
    assert outcome is not None and isinstance(outcome.result, Err)
    assert outcome.result.error.type == "cancelled" and outcome.reason == "cancelled"
    # a late response for the cancelled call is stale now
    after, out = feed(react, state, sig.llm_reply(d, "late"))
    assert after == state and out == []


def test_request_failed_after_completion_is_ignored() -> None:
    react, state, [d], sig = start()
    state, _ = feed(react, state, sig.llm_reply(d, "done"))
    assert feed(react, state, [sig.request_failed()])[0] == state


@pytest.mark.parametrize("phase", ["awaiting_llm", "awaiting_tool"])
def test_second_request_while_busy_is_rejected(phase: str) -> None:
    react, state, [d], sig = start()
    if phase == "awaiting_tool":
        state, _ = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("add", "c1")]))
    before = state
    state, [reject] = feed(react, state, [sig.request_started("another")])
    assert isinstance(reject, EmitRequestError)
    assert reject.error.type == "busy" and reject.reason == "busy"
    assert reject.id == "r1/reject/1"
    assert state.status == phase
    assert msgspec.structs.replace(state, reject_count=0) == before
    _, [again] = feed(react, state, [sig.request_started("third")])
    assert again.id == "r1/reject/2"


def test_idle_run_starts_on_request_and_completed_run_continues_the_conversation() -> None:
    react, state, directives, sig = start(prompt=None)
    assert state.status == "idle" and directives == []
    assert react.outcome(state) is None
    state, [d] = feed(react, state, [sig.request_started("hi")])
    state, _ = feed(react, state, sig.llm_reply(d, "hello"))
    assert state.status == "completed"
    state, [d2] = feed(react, state, [sig.request_started({"prompt": "again"})])
    assert isinstance(d2, LLMGenerate) and d2.id == "r1/llm/2"
    assert [m.content for m in d2.messages] == ["hi", "hello", "again"]
    assert state.iteration == 1 and react.outcome(state) is None


def test_snapshot_is_json_safe_and_round_trips() -> None:
    react, state, [d], sig = start()
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=[call("add", "c1", x=1)]))
    state, _ = feed(react, state, [sig.tool_result(execs[0], {"v": (1, 2)})])
    snap = react.snapshot(state)
    text = msgspec.json.encode(snap)
    assert msgspec.json.decode(text) == snap
    assert msgspec.json.decode(text, type=ReActState) == state
    assert snap["status"] == "awaiting_llm"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_iterations": 0},
        {"llm_timeout_ms": 0},
        {"tool_timeout_ms": -1},
        {"llm_max_retries": -1},
        {"tool_max_retries": -2},
        {"model": "a", "model_alias": "b"},
    ],
)
def test_invalid_config_raises_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="ReAct"):
        ReAct(**kwargs)


def test_config_is_frozen() -> None:
    react = ReAct()
    with pytest.raises(AttributeError):
        react.max_iterations = 3  # type: ignore[misc]


@given(
    n=st.integers(min_value=1, max_value=6),
    order=st.randoms(use_true_random=False),
    payloads=st.lists(st.integers(), min_size=6, max_size=6),
)
def test_any_arrival_order_gives_call_order(n: int, order: Any, payloads: list[int]) -> None:
    react, state, [d], sig = start()
    calls = [call("add", f"c{i}") for i in range(n)]
    state, execs = feed(react, state, sig.llm_reply(d, "", tool_calls=calls))
    shuffled = list(range(n))
    order.shuffle(shuffled)
    for i in shuffled:
        state, _ = feed(react, state, [sig.tool_result(execs[i], payloads[i])])
    tool_messages = [m for m in state.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == [f"c{i}" for i in range(n)]
    assert [m.content for m in tool_messages] == [
        tool_result_content(Ok(payload=payloads[i])) for i in range(n)
    ]


def test_the_same_signals_give_the_same_state_and_directives() -> None:
    def once() -> tuple[ReActState, list[Directive]]:
        react, state, first, sig = start()
        state, out = feed(react, state, sig.llm_reply(first[0], "", tool_calls=[call("add", "c1")]))
        state, out2 = feed(react, state, sig.tool_reply(out[0], 5))
        return state, [*first, *out, *out2]

    assert once() == once()
