"""A recorded SubAgent run replays from its journal: same state, same Step, nothing called;
and each of its programs reruns from its recorded tool calls to the same output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from ptcflow import SubAgent
from ptcflow.directives import RunProgram
from ptcflow.program import perform_program
from ptcflow.runtime import Runtime
from ptcflow.signals import (
    PROGRAM_RESULT,
    Ok,
    ProgramOutput,
    SignalBus,
    read_journal,
    record_journal,
)
from ptcflow.strategies import PTC, JsonAgent, replay
from ptcflow.testing import Recording, ScriptedLLM

from .ptc_support import block

pytestmark = pytest.mark.anyio

CALLS: list[str] = []


def search(query: str) -> list[dict[str, Any]]:
    """Search orders."""
    CALLS.append(query)
    return [{"id": 1, "amount": 10.0, "_note": "hidden"}, {"id": 2, "amount": 5.0}]


AGENT = SubAgent(
    prompt="Total the orders matching {{query}}",
    signature="(query :string) -> {total :float, _ids [:int]}",
    tools=[search],
    name="totaller",
)


def ptc(debug: bool = False) -> PTC:
    strategy = AGENT.strategy(debug=debug)
    assert isinstance(strategy, PTC)
    return strategy


SCRIPT = [
    block(
        '(def hits (call "search" {:query ctx/query}))\n(defn total [xs] (sum-by :amount xs))\n(count hits)'
    ),
    block("(+ 1 nil)"),
    block("(return {:total (total hits) :_ids (map :id hits)})"),
]


async def test_the_journal_replays_to_the_same_state_and_step(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    bus = SignalBus()
    llm = ScriptedLLM(SCRIPT)
    strategy = ptc(debug=True)
    recording = Recording(strategy)
    CALLS.clear()
    async with (
        record_journal(bus, path),
        Runtime(llm=llm, bus=bus) as rt,
    ):
        step = await rt.run(recording, {"query": "x"}, tools=dict(AGENT.tools), name="totaller")
    assert step.ok and step.value == {"total": 15.0, "_ids": [1, 2]}
    assert step.fail is None and step.trace is not None and len(step.trace.turns) == 3
    calls, requests = len(CALLS), len(llm.requests)

    journal = read_journal(path)
    state = replay(ptc(debug=True), journal)
    assert state == recording.state
    outcome = strategy.outcome(state)
    assert outcome is not None
    assert outcome.result == Ok(payload=step.value)
    assert (outcome.fail, outcome.trace) == (step.fail, step.trace)
    assert (len(CALLS), len(llm.requests)) == (calls, requests)  # no tool, no model


async def test_a_failed_run_replays_with_its_fail_and_trace(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    bus = SignalBus()
    llm = ScriptedLLM([block('(fail {:reason :empty :message "nothing found" :details {:q "x"}})')])
    async with (
        record_journal(bus, path),
        Runtime(llm=llm, bus=bus) as rt,
    ):
        step = await AGENT.run(context={"query": "x"}, runtime=rt)
    assert not step.ok and step.fail is not None and step.fail.details == {"q": "x"}
    outcome = ptc().outcome(replay(ptc(), read_journal(path)))
    assert outcome is not None and (outcome.fail, outcome.trace) == (step.fail, step.trace)


async def test_a_json_mode_run_replays_too(tmp_path: Path) -> None:
    agent = SubAgent(
        prompt="Search {{query}}",
        signature="(query :string) -> {n :int}",
        tools=[search],
        output="json",
    )
    path = tmp_path / "run.jsonl"
    bus = SignalBus()
    llm = ScriptedLLM([ScriptedLLM.tool_call("search", query="x"), '{"n": "2"}', '{"n": 2}'])
    async with record_journal(bus, path), Runtime(llm=llm, bus=bus) as rt:
        step = await agent.run(context={"query": "x"}, runtime=rt)
    assert step.ok and step.value == {"n": 2}
    strategy = agent.strategy()
    assert isinstance(strategy, JsonAgent)
    outcome = strategy.outcome(replay(strategy, read_journal(path)))
    assert outcome is not None and outcome.trace == step.trace


async def test_each_program_reruns_from_its_journaled_calls_without_calling_a_tool(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    bus = SignalBus()
    CALLS.clear()
    async with record_journal(bus, path), Runtime(llm=ScriptedLLM(SCRIPT), bus=bus) as rt:
        step = await AGENT.run(context={"query": "x"}, runtime=rt)
    assert step.ok and CALLS == ["x"]
    journal = read_journal(path)
    # The journal alone rebuilds each program directive (the strategy is pure) ...
    again = Recording(ptc())
    replay(again, journal)
    programs = [d for d in again.directives if isinstance(d, RunProgram)]
    results = {s.call_id: s.data.result for s in journal if s.type == PROGRAM_RESULT}
    assert [p.id for p in programs] == list(results) and len(programs) == 3
    # ... and each reruns from its recorded calls: no tool runs, the same output
    for program in programs:
        recorded = results[program.id]
        assert isinstance(recorded, Ok)
        rerun = await perform_program(program, None, replay=recorded.payload.tool_calls)
        assert _timeless(rerun) == _timeless(recorded.payload)
    assert CALLS == ["x"]


def _timeless(out: ProgramOutput) -> ProgramOutput:
    calls = tuple(msgspec.structs.replace(c, duration_ms=0.0) for c in out.tool_calls)
    return msgspec.structs.replace(out, duration_ms=0.0, tool_calls=calls)
