"""Mission: the tree folded from a journal and from a live bus, and the future signal forms."""

from __future__ import annotations

import io

import anyio
import pytest
from service_mission import open_mission_runtime, run_mission

from ptcflow.directives import RunProgram
from ptcflow.program import perform_program
from ptcflow.signals import (
    Err,
    ErrorEnvelope,
    Ok,
    ProgramResultData,
    Secrets,
    Signal,
    SignalBus,
    ToolResultData,
    ToolStartedData,
    Usage,
    UsageData,
    read_journal,
)
from ptcflow.testing import SignalFactory, collect_signals
from ptcflow.trace import HIDDEN, Mission

from .make_mission import QUESTION, RUN_ID
from .support import JOURNAL, KINDS, RUNS, agents, kinds


def test_the_recorded_mission_has_every_run_turn_call_program_and_tool() -> None:
    mission = Mission.from_journal(JOURNAL)
    assert mission.roots == [RUN_ID]
    assert dict(agents(mission)) == RUNS
    assert dict(kinds(mission)) == KINDS
    assert mission.ended and all(n.end_ms is not None for n in mission.nodes.values())


def test_three_levels_of_agents_nest_under_the_calls_that_started_them() -> None:
    mission = Mission.from_journal(JOURNAL)
    counter = next(n for n in mission.runs() if n.name == "counter")
    chain = []
    node = counter
    while node.parent is not None:
        node = mission.nodes[node.parent]
        chain.append(f"{node.kind}:{node.name}")
    assert chain == [
        "tool:counter",
        "turn:turn 1",
        "run:analyst",
        "tool:analyst",
        "program:program 1",
        "turn:turn 1",
        "run:planner",
    ]
    assert counter.parent == f"{counter.id.rsplit('/', 1)[0]}|{counter.id.rsplit('/', 1)[1]}"


def test_programs_carry_their_source_error_position_and_tool_calls() -> None:
    mission = Mission.from_journal(JOURNAL)
    failed = [n for n in mission.nodes.values() if n.kind == "program" and n.status == "error"]
    assert len(failed) == 1
    program = failed[0]
    assert program.detail["source"].splitlines()[1].startswith('(+ "total: "')
    assert program.detail["error"] == {
        "category": "type",
        "message": '+ expects numbers, got string "total: "',
        "line": 2,
        "column": 1,
    }
    (call,) = (mission.nodes[c] for c in program.children)
    assert (call.kind, call.name, call.status) == ("tool", "orders", "ok")
    assert call.detail["arguments"]["region"] == "emea"
    assert program.start_ms <= call.start_ms <= call.end_ms <= program.end_ms  # type: ignore[operator]
    turn = mission.nodes[program.parent]  # type: ignore[index]
    assert turn.kind == "turn" and turn.status == "error"


def test_retries_tool_errors_and_tokens_are_kept() -> None:
    mission = Mission.from_journal(JOURNAL)
    retried = [n for n in mission.nodes.values() if n.attempts > 1]
    assert [(n.kind, n.attempts) for n in retried] == [("llm", 2)]
    broken = [n for n in mission.nodes.values() if n.kind == "tool" and n.status == "error"]
    assert [n.name for n in broken] == ["fetch_sales"]
    assert broken[0].error is not None and broken[0].error.startswith("tool_error: ")
    planner = mission.nodes[RUN_ID]
    llm_tokens = sum(
        mission.nodes[c].input_tokens
        for t in planner.children
        for c in mission.nodes[t].children
        if mission.nodes[c].kind == "llm"
    )
    assert planner.input_tokens == llm_tokens > 0


def test_each_model_call_starts_when_its_run_handled_the_signal_before_it() -> None:
    signals = read_journal(JOURNAL)
    mission = Mission.from_signals(signals)
    first = mission.nodes[f"{RUN_ID}|{RUN_ID}/llm/1"]
    assert first.start_ms == mission.nodes[RUN_ID].start_ms
    # an analyst's second call starts when the last tool result of its first turn came in
    analyst = next(n for n in mission.runs() if n.name == "analyst")
    second = mission.nodes[f"{analyst.id}|{analyst.id}/llm/2"]
    turn = mission.nodes[f"{analyst.id}|turn/1"]
    tools = [mission.nodes[c] for c in turn.children if mission.nodes[c].kind == "tool"]
    assert sorted(t.name for t in tools) == ["counter", "fetch_sales"]
    assert second.start_ms == max(t.end_ms or 0 for t in tools)


@pytest.mark.anyio
async def test_a_live_bus_folds_to_the_same_tree_as_the_journal() -> None:
    bus = SignalBus()
    live = Mission()
    changed_kinds: set[str] = set()
    with collect_signals(bus) as log:
        async with open_mission_runtime(bus=bus, latency=0.0) as rt:
            step = await run_mission(rt, QUESTION, run_id=RUN_ID, latency=0.0)
    assert step.ok
    for signal in log.signals:
        changed_kinds |= {n.kind for n in live.add(signal)}
    assert changed_kinds == {"run", "turn", "llm", "program", "tool"}
    recorded = Mission.from_journal(JOURNAL)
    assert _shape(live) == _shape(recorded)


def _shape(mission: Mission) -> list[tuple[str, str, str, int]]:
    """The tree without ids (the scripted model's call ids differ from run to run)."""
    return sorted((n.kind, n.name, n.status, n.depth) for n in mission.nodes.values())


def test_program_sub_call_signals_and_ai_program_result_are_the_programs_calls() -> None:
    """The runtime's program kind publishes each call as ai.tool.* with call_id
    {program}/tool/{n}, then ai.program.result: the calls are the program's children,
    not duplicated from its record."""

    async def orders(name: str, args: dict[str, object], index: int) -> Ok[object] | Err:
        return Ok(payload=[{"amount": 2.5}])

    directive = RunProgram(
        id="r1/program/1", source='(return (count (call "orders" {:q 1})))', tool_names=("orders",)
    )
    output = anyio.run(perform_program, directive, orders)
    sig = SignalFactory("r1")
    signals = [
        sig.request_started("go"),
        *(
            _with_iteration(s, 1)
            for s in sig.llm_reply("r1/llm/1", '(return (count (call "orders" {:q 1})))')
        ),
        sig.make(
            "ai.tool.started",
            ToolStartedData(tool_name="orders", arguments={"q": 1}),
            call="r1/program/1/tool/1",
            iteration=1,
        ),
        sig.make(
            "ai.tool.result",
            ToolResultData(tool_name="orders", result=Ok(payload=[1]), duration_ms=3.0),
            call="r1/program/1/tool/1",
            iteration=1,
        ),
        sig.make(
            "ai.program.result",
            ProgramResultData(result=Ok(payload=output), duration_ms=5.0),
            call="r1/program/1",
            iteration=1,
        ),
    ]
    mission = Mission.from_signals(signals)
    program = mission.nodes["r1|r1/program/1"]
    assert program.kind == "program" and program.status == "ok" and program.detail["value"] == 1
    assert program.detail["source"] == '(return (count (call "orders" {:q 1})))'
    assert [mission.nodes[c].id for c in program.children] == ["r1|r1/program/1/tool/1"]
    assert mission.nodes[program.parent or ""].kind == "turn"


def _with_iteration(signal: Signal, iteration: int) -> Signal:
    import msgspec

    return msgspec.structs.replace(signal, iteration=iteration)


def test_a_child_run_seen_before_its_call_is_moved_under_the_call_when_it_arrives() -> None:
    sig = SignalFactory("p")
    child = SignalFactory("p/c1")
    started = child.request_started({"prompt": "x"})
    signals = [
        sig.request_started("go"),
        _parented(started, "p"),
        sig.make("ai.tool.started", ToolStartedData(tool_name="helper"), call="c1", iteration=1),
    ]
    mission = Mission.from_signals(signals)
    call = mission.nodes["p|c1"]
    assert call.name == "helper" and mission.nodes[call.parent or ""].kind == "turn"
    assert mission.nodes["p/c1"].parent == "p|c1"


def _parented(signal: Signal, parent: str) -> Signal:
    import msgspec

    return msgspec.structs.replace(signal, parent_run_id=parent)


def test_content_is_redacted_and_can_be_left_out() -> None:
    sig = SignalFactory("r")
    signals = [
        sig.request_started("hi"),
        sig.make(
            "ai.tool.started",
            ToolStartedData(
                tool_name="login", arguments={"user": "ada", "api_key": "sk-live-1234567"}
            ),
            call="c1",
            iteration=1,
        ),
        sig.make(
            "ai.tool.result",
            ToolResultData(
                tool_name="login",
                result=Err(error=ErrorEnvelope.make("auth", "key sk-live-1234567 rejected")),
            ),
            call="c1",
            iteration=1,
        ),
    ]
    shown = Mission.from_signals(signals, secrets=Secrets(["sk-live-1234567"])).nodes["r|c1"]
    assert shown.detail["arguments"] == {"user": "ada", "api_key": "[REDACTED]"}
    assert "sk-live" not in (shown.error or "") and "[REDACTED]" in (shown.error or "")
    hidden = Mission.from_signals(signals, content=False).nodes["r|c1"]
    assert hidden.detail["arguments"] == HIDDEN and hidden.status == "error"


def test_from_journal_reads_one_run_of_several() -> None:
    text = JOURNAL.read_text()
    other = text.replace(RUN_ID, "mission_2")
    mission = Mission.from_journal(io.StringIO(text + other), run_id="mission_2")
    assert mission.roots == ["mission_2"] and dict(agents(mission)) == RUNS
    both = Mission.from_journal(io.StringIO(text + other))
    assert both.roots == [RUN_ID, "mission_2"]


def test_a_time_that_does_not_parse_takes_the_latest_time_seen() -> None:
    import msgspec

    sig = SignalFactory("r")
    first = sig.request_started("hi")
    usage = sig.make(
        "ai.usage", UsageData(usage=Usage(input_tokens=3)), call="r/llm/1", iteration=1
    )
    odd = msgspec.structs.replace(usage, time="soon")
    mission = Mission.from_signals([first, odd])
    assert mission.nodes["r|r/llm/1"].start_ms == mission.nodes["r"].start_ms


class _MyUsage(UsageData, frozen=True):
    """A subclass of a signal's data (a provider's own usage record, say)."""


def test_data_of_a_subclass_folds_as_its_base_type() -> None:
    import msgspec

    sig = SignalFactory("r")
    first = sig.request_started("hi")
    usage = sig.make(
        "ai.usage", UsageData(usage=Usage(input_tokens=3)), call="r/llm/1", iteration=1
    )
    own = msgspec.structs.replace(usage, data=_MyUsage(usage=Usage(input_tokens=3)))
    base, subclass = Mission.from_signals([first, usage]), Mission.from_signals([first, own])
    assert subclass.nodes["r|r/llm/1"].input_tokens == 3
    assert [n.to_json() for n in subclass.walk()] == [n.to_json() for n in base.walk()]
