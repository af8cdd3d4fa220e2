"""replay(): the journal of a run rebuilds its final state."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.signals import Signal, SignalBus, ToolCall, ToolSpec, read_journal, record_journal
from ptcflow.strategies import ReAct, RunInfo, replay
from ptcflow.testing import Recording, ScriptedLLM, SignalFactory

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
    child = msgspec.structs.replace(child, parent_run_id=journal[0].run_id)
    shuffled = [journal[0], *reversed(journal[1:]), child]
    assert replay(react, shuffled, tools=TOOLS) == final
    other = msgspec.structs.replace(child, parent_run_id=None)  # a second top-level run
    assert replay(react, [*shuffled, other], tools=TOOLS, run_id=journal[0].run_id) == final


def test_replay_without_tools_differs_when_the_run_had_tools() -> None:
    react, journal, final = live_run()
    assert replay(react, journal) != final


def test_replay_needs_a_start_signal() -> None:
    _, journal, _ = live_run()
    with pytest.raises(UsageError, match=r"ai\.request\.started"):
        replay(ReAct(), journal[1:])


@pytest.mark.anyio
async def test_replay_of_a_journal_file_equals_the_live_final_state(tmp_path: Path) -> None:
    def add(x: int, y: int) -> int:
        """Add."""
        return x + y

    llm = ScriptedLLM(
        [
            [ScriptedLLM.tool_call("add", x=2, y=3), ScriptedLLM.tool_call("missing")],
            ScriptedLLM.server_error(),
            "the answer is 5",
        ]
    )
    keep = Recording(ReAct(system_prompt="sys", stream=True))
    bus = SignalBus()
    path = tmp_path / "run.jsonl"
    async with record_journal(bus, path), Runtime(llm=llm, tools=[add], bus=bus) as rt:
        step = await rt.run(keep, "2+3?")
    assert step.ok
    journal = read_journal(path)
    assert [s.type for s in journal].count("ai.llm.delta") >= 4
    assert keep.run is not None
    replayed = replay(ReAct(system_prompt="sys", stream=True), journal, tools=keep.run.tools)
    assert replayed == keep.state
    assert replayed.status == "completed" and replayed.text == "the answer is 5"
    # the start signal records the run's tools: the journal alone is enough
    assert keep.run.tools
    assert replay(ReAct(system_prompt="sys", stream=True), journal) == keep.state


def test_replay_accepts_any_iterable_and_keeps_journal_order_for_equal_seq() -> None:
    react, journal, final = live_run()
    assert replay(react, iter(journal), tools=TOOLS) == final
    # two signals with the same seq (a hand-made journal): folded in the order given
    sig = SignalFactory("r1", request_id="q")
    start = sig.request_started("hi")
    _, [d] = react.init(RunInfo(run_id="r1", input="hi", request_id="q"))
    a, b = sig.delta(d, "a"), sig.delta(d, "b")
    same_seq = [start, a, msgspec.structs.replace(b, seq=a.seq)]
    assert replay(ReAct(stream=True), same_seq).streamed == "ab"
    assert replay(ReAct(stream=True), [start, same_seq[2], a]).streamed == "ba"
