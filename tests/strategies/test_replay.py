"""replay(): the journal of a run rebuilds its final state."""

from __future__ import annotations

import pytest

from ptcflow.errors import UsageError
from ptcflow.signals import Signal, ToolCall, ToolSpec
from ptcflow.strategies import ReAct, RunInfo, replay
from ptcflow.testing import SignalFactory

TOOLS = (ToolSpec(name="add"),)


def live_run() -> tuple[ReAct, list[Signal], object]:
    react = ReAct(system_prompt="sys")
    sig = SignalFactory("r1", request_id="q")
    journal = [sig.request_started("2+3?")]
    state, [d] = react.init(RunInfo(run_id="r1", input="2+3?", request_id="q", tools=TOOLS))
    calls = [ToolCall(id="c1", name="add", input={"x": 2}), ToolCall(id="c2", name="nope")]
    steps = [
        *sig.llm_reply(d, "", tool_calls=calls),
        sig.tool_started("c1", "add"),
        sig.tool_result("c2", {"ok": False, "error": {"type": "unknown_tool", "message": "x"}}),
        sig.tool_result("c1", 5, tool_name="add"),
        *sig.llm_reply("r1/llm/2", "5"),
    ]
    for s in steps:
        state, _ = react.handle(state, s)
    journal.extend(steps)
    return react, journal, state


def test_replay_reproduces_the_final_state() -> None:
    react, journal, final = live_run()
    assert replay(react, journal, tools=TOOLS) == final


def test_replay_sorts_by_seq_and_skips_other_runs() -> None:
    react, journal, final = live_run()
    child = SignalFactory("child").request_started("other")
    shuffled = [journal[0], *reversed(journal[1:]), child]
    assert replay(react, shuffled, tools=TOOLS) == final


def test_replay_without_tools_differs_when_the_run_had_tools() -> None:
    react, journal, final = live_run()
    assert replay(react, journal) != final


def test_replay_needs_a_start_signal() -> None:
    _, journal, _ = live_run()
    with pytest.raises(UsageError, match=r"ai\.request\.started"):
        replay(ReAct(), journal[1:])
