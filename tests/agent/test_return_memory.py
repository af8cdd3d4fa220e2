"""The PTC strategy tells its programs when a ``return`` ends the run, so that its memory is
not written; a rejected return still leaves its memory for the next turn."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ptcflow import SubAgent
from ptcflow.directives import RunProgram
from ptcflow.runtime import Runtime
from ptcflow.signals import PROGRAM_RESULT, Ok, SignalBus, read_journal, record_journal
from ptcflow.strategies import PTC
from ptcflow.testing import ScriptedLLM

from .ptc_support import Drive, block

COUNTER = PTC(prompt="Count for {{user}}", signature="(user :string) -> {count :int}")


def drive(ptc: PTC = COUNTER) -> Drive:
    return Drive(ptc, {"user": "alice"}, {"rows": lambda: [1, 2, 3]})


def test_the_program_directive_carries_the_signature_and_the_mode() -> None:
    d = drive(msgspec.structs.replace(COUNTER, signature_validation="strict"))
    d.reply(block("(return {:count 1})"))
    (program,) = [x for x in d.directives if isinstance(x, RunProgram)]
    assert program.return_signature == COUNTER.signature
    assert program.return_validation == "strict"


def test_a_return_that_ends_the_run_writes_no_memory() -> None:
    d = drive()
    d.reply(block('(def n (count (call "rows" {})))\nn'))
    d.reply(block('(def xs (call "rows" {}))\n(defn f [v] v)\n(return {:count (+ n (count xs))})'))
    assert d.status == "completed" and d.state.value == {"count": 6}
    first, last = d.outputs
    assert first.memory == {"n": "3"}
    assert last.memory == first.memory and last.functions == {} and last.dropped == {}


def test_a_rejected_return_keeps_its_memory_for_the_next_turn() -> None:
    d = drive()
    d.reply(
        block('(def xs (call "rows" {}))\n(defn total [v] (reduce + v))\n(return {:count "3"})')
    )
    assert d.status == "awaiting_llm" and "does not match the expected output" in d.last_prompt
    assert d.outputs[0].memory == {"xs": "[1 2 3]"} and "total" in d.outputs[0].functions
    d.reply(block("(return {:count (total memory/xs)})"))  # what the rejected turn defined
    assert d.status == "completed" and d.state.value == {"count": 6}


@pytest.mark.parametrize("mode", ["warn_only", "disabled"])
def test_modes_that_never_reject_never_write_a_returns_memory(mode: str) -> None:
    d = drive(msgspec.structs.replace(COUNTER, signature_validation=mode))
    d.reply(block('(def xs (call "rows" {}))\n(return {:count "3"})'))
    assert d.status == "completed" and d.state.value == {"count": "3"}
    assert d.outputs[0].memory == {}


def test_with_debug_the_memory_is_written_and_traced() -> None:
    d = drive(msgspec.structs.replace(COUNTER, debug=True))
    d.reply(block('(def xs (call "rows" {}))\n(return {:count (count xs)})'))
    assert d.status == "completed" and d.outputs[0].memory == {"xs": "[1 2 3]"}
    outcome = d.ptc.outcome(d.state)
    assert outcome is not None and outcome.trace is not None
    assert outcome.trace.turns[0].execution.memory == {"xs": "[1 2 3]"}


BIG = '(def big (apply str (repeat 2000 "x")))\n'


def test_a_return_that_ends_the_run_is_not_held_to_the_memory_limit() -> None:
    d = drive(msgspec.structs.replace(COUNTER, memory_limit_bytes=1000))
    d.reply(block(f"{BIG}(return {{:count (count big)}})"))
    assert d.status == "completed" and d.state.value == {"count": 2000}


def test_a_rejected_return_over_the_memory_limit_ends_the_run() -> None:
    d = drive(msgspec.structs.replace(COUNTER, memory_limit_bytes=1000))
    d.reply(block(f'{BIG}(return {{:count "many"}})'))
    assert d.status == "failed" and d.state.reason == "memory_limit"


@pytest.mark.anyio
async def test_on_a_runtime_the_returning_programs_result_carries_no_new_memory(
    tmp_path: Path,
) -> None:
    agent = SubAgent(
        prompt="Count for {{user}}",
        signature="(user :string) -> {count :int}",
        tools={"rows": lambda: [1, 2, 3]},
        name="counter",
    )
    llm = ScriptedLLM(
        [
            block('(def xs (call "rows" {}))\n(return {:count "3"})'),
            block("(def n (count memory/xs))\n(return {:count n})"),
        ]
    )
    path, bus = tmp_path / "run.jsonl", SignalBus()
    async with record_journal(bus, path), Runtime(llm=llm, bus=bus) as rt:
        step = await agent.run(context={"user": "alice"}, runtime=rt)
    assert step.ok and step.value == {"count": 3} and step.turns == 2
    results = [s.data.result for s in read_journal(path) if s.type == PROGRAM_RESULT]
    assert all(isinstance(r, Ok) for r in results)
    rejected, accepted = (r.payload for r in results if isinstance(r, Ok))
    assert rejected.memory == {"xs": "[1 2 3]"}
    assert accepted.memory == {"xs": "[1 2 3]"}  # as it was given: no "n"
