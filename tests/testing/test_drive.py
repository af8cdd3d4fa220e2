"""SignalFactory and run_strategy: a strategy driven as a plain function."""

from __future__ import annotations

import pytest

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.errors import UsageError
from ptcflow.signals import Err, ErrorEnvelope, Ok, Signal, SignalBus, ToolCall, ToolSpec
from ptcflow.strategies import ReAct, RunInfo
from ptcflow.testing import Recording, SignalFactory, collect_signals, run_strategy


def test_factory_numbers_and_correlates_signals() -> None:
    sig = SignalFactory("r1", request_id="q")
    d = LLMGenerate(id="r1/llm/1", request_id="q7", iteration=3, messages=())
    usage, response = sig.llm_reply(d, "hi")
    assert (usage.seq, response.seq) == (1, 2)
    assert response.call_id == response.causation_id == "r1/llm/1"
    assert (response.request_id, response.iteration) == ("q7", 3)
    assert response.run_id == "r1" and response.id == "r1/signal/2"
    started = sig.request_started("x")
    assert started.request_id == "q" and started.call_id is None


def test_factory_normalizes_tool_results() -> None:
    sig = SignalFactory()
    d = ToolExec(id="c1", tool_name="add")
    started, result = sig.tool_reply(d, (False, "boom"))
    assert started.data.tool_name == "add"
    assert isinstance(result.data.result, Err) and result.data.result.error.message == "boom"
    assert sig.tool_result("c2", ErrorEnvelope.make("timeout", "t")).data.result.error.retryable
    assert sig.tool_result("c3", 5).data.result == Ok(payload=5)


def test_run_strategy_from_a_start_signal() -> None:
    sig = SignalFactory("r1")
    call = ToolCall(id="c1", name="add", input={"x": 1})
    signals = [
        sig.request_started("2+3?"),
        *sig.llm_reply("r1/llm/1", "", tool_calls=[call]),
        *sig.tool_reply("c1", 5, tool_name="add"),
        *sig.llm_reply("r1/llm/2", "5"),
    ]
    state, directives = run_strategy(ReAct(), signals, tools=[ToolSpec(name="add")])
    assert state.text == "5"
    assert [d.id for d in directives] == ["r1/llm/1", "c1", "r1/llm/2"]


def test_run_strategy_with_explicit_run_info() -> None:
    state, directives = run_strategy(ReAct(), [], run=RunInfo(run_id="x", input="hi"))
    assert state.status == "awaiting_llm" and len(directives) == 1


def test_run_strategy_needs_a_start() -> None:
    with pytest.raises(UsageError, match="request_started"):
        run_strategy(ReAct(), [])


def test_collect_signals_reads_up_to_date_and_closes() -> None:
    bus = SignalBus()
    with collect_signals(bus, "ai.tool.*", run_id="r1") as log:
        bus.publish(Signal.create("ai.tool.started", run_id="r1"))
        assert log.types() == ["ai.tool.started"]
        bus.publish(Signal.create("ai.tool.result", run_id="r1"))
        bus.publish(Signal.create("ai.tool.result", run_id="r2"))
        bus.publish(Signal.create("ai.usage", run_id="r1"))
    bus.publish(Signal.create("ai.tool.result", run_id="r1"))
    assert log.types() == ["ai.tool.started", "ai.tool.result"]
    assert len(log.of_type("ai.tool.result")) == 1
    assert bus.statistics().subscribers == 0


def test_collect_signals_refuses_to_hide_lost_signals() -> None:
    bus = SignalBus()
    with collect_signals(bus, buffer=1) as log:
        bus.publish(Signal.create("a"))
        bus.publish(Signal.create("b"))
    with pytest.raises(UsageError, match="lost 1 signal"):
        _ = log.signals


def test_recording_records_run_signals_directives_and_state() -> None:
    rec = Recording(ReAct())
    assert rec.name == "react"
    with pytest.raises(LookupError, match="not been initialised"):
        _ = rec.state
    sig = SignalFactory("r1")
    state, directives = run_strategy(
        rec, [sig.request_started("hi"), *sig.llm_reply("r1/llm/1", "yo")]
    )
    assert rec.run is not None and rec.run.input == "hi"
    assert [s.type for s in rec.signals] == ["ai.usage", "ai.llm.response"]
    assert rec.directives == directives and rec.state == state
    assert rec.outcome(state) is not None
    assert rec.snapshot(state)["text"] == "yo"
