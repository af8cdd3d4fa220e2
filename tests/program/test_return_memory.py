"""A program whose ``return`` ends the run writes no memory; any other program still does."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from ptcflow.directives import RunProgram
from ptcflow.program import ProgramCache, perform_program
from ptcflow.signals import Err, Ok, ProgramOutput

pytestmark = pytest.mark.anyio

SIGNATURE = "(q :string) -> {n :int, _ids [:int]}"
KEPT = {"old": "[1 2 3]"}
KEPT_FNS = {"twice": "(defn twice [x] (* 2 x))"}
DEFINES = '(def x (call "rows" {}))\n(defn inc2 [v] (+ v 2))\n(memory/put :seen (count x))\n'


async def rows(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
    await anyio.lowlevel.checkpoint()
    return Ok(payload=[{"id": 1}, {"id": 2}])


def program(value: str, **fields: Any) -> RunProgram:
    base: dict[str, Any] = {
        "id": "r1/program/2",
        "source": f"{DEFINES}(return {value})",
        "memory": KEPT,
        "functions": KEPT_FNS,
        "tool_names": ("rows",),
        "return_signature": SIGNATURE,
        "return_validation": "enabled",
    }
    return RunProgram(**{**base, **fields})


def size(out: ProgramOutput) -> int:
    parts = (out.memory, out.functions)
    return sum(len(k) + len(v.encode()) for part in parts for k, v in part.items())


def kept_as_given(out: ProgramOutput) -> bool:
    """The output keeps the memory and functions it was given, and nothing else."""
    return out.memory == KEPT and out.functions == KEPT_FNS and out.dropped == {}


async def test_a_return_that_validates_writes_no_memory() -> None:
    out = await perform_program(program("{:n (twice 2) :_ids (map :id x)}"), rows)
    assert out.returned and out.error is None and out.value == {"n": 4, "_ids": [1, 2]}
    assert kept_as_given(out) and out.memory_bytes == size(out)
    assert len(out.tool_calls) == 1  # the program itself ran the same


async def test_a_return_that_is_rejected_writes_its_memory_for_the_next_turn() -> None:
    out = await perform_program(program('{:n "4" :_ids []}'), rows)
    assert out.returned and out.value == {"n": "4", "_ids": []}
    assert out.memory == {**KEPT, "x": "[{:id 1} {:id 2}]", "seen": "2"}
    assert out.functions == {**KEPT_FNS, "inc2": "(defn inc2 [v] (+ v 2))"}
    assert out.memory_bytes == size(out)


@pytest.mark.parametrize(
    ("mode", "value", "written"),
    [
        ("enabled", "{:n 1 :_ids [] :extra 1}", False),  # lenient on extra fields
        ("strict", "{:n 1 :_ids [] :extra 1}", True),  # rejected: the next turn needs it
        (":strict", "{:n 1 :_ids []}", False),
        ("warn_only", '{:n "1"}', False),  # never rejects
        ("disabled", "[1 2]", False),  # never rejects
        ("enabled", "{:n 1}", True),  # a missing field
    ],
)
async def test_each_validation_mode_writes_memory_only_when_it_rejects(
    mode: str, value: str, written: bool
) -> None:
    out = await perform_program(program(value, return_validation=mode), rows)
    assert out.returned
    assert ("x" in out.memory) is written and ("inc2" in out.functions) is written
    assert kept_as_given(out) is not written


async def test_without_a_signature_any_return_ends_the_run() -> None:
    out = await perform_program(program('"anything"', return_signature=None), rows)
    assert out.value == "anything" and kept_as_given(out)


async def test_a_program_that_does_not_return_writes_its_memory() -> None:
    d = program("1", source=f"{DEFINES}{{:n 1 :_ids []}}")  # a valid value, but no return
    out = await perform_program(d, rows)
    assert not out.returned and "x" in out.memory and "inc2" in out.functions


async def test_a_directive_without_the_fields_writes_memory_as_before() -> None:
    d = program("{:n 4 :_ids []}", return_signature=None, return_validation=None)
    out = await perform_program(d, rows)
    assert "x" in out.memory and "inc2" in out.functions
    # a directive journaled before the fields existed decodes to exactly that
    data = msgspec.json.decode(msgspec.json.encode(program("{:n 4 :_ids []}")))
    del data["return_signature"], data["return_validation"]
    old = msgspec.json.decode(msgspec.json.encode(data), type=RunProgram)
    assert isinstance(old, RunProgram) and old.problems() == []
    assert (old.return_signature, old.return_validation) == (None, None)
    again = await perform_program(old, rows)
    assert again.memory == out.memory and again.functions == out.functions


async def test_a_returning_program_over_the_memory_limit() -> None:
    big = '(def big (apply str (repeat 2000 "x")))\n'
    accepted = program(
        "{:n (count big) :_ids []}", source=f"{big}(return {{:n (count big) :_ids []}})"
    )
    accepted = msgspec.structs.replace(accepted, memory_limit_bytes=1000)
    out = await perform_program(accepted, rows)
    # nothing is kept, so there is nothing to bound: the value is the run's answer
    assert out.value == {"n": 2000, "_ids": []} and kept_as_given(out)
    assert out.memory_bytes == size(out) <= 1000
    rejected = msgspec.structs.replace(accepted, source=f'{big}(return {{:n "2000"}})')
    out = await perform_program(rejected, rows)
    # its memory is needed and too large: over the limit, the strategy ends the run
    assert out.memory == KEPT and out.memory_bytes > 1000


async def test_the_output_is_the_same_on_every_run_of_the_directive() -> None:
    cache = ProgramCache()
    d = program("{:n 4 :_ids []}")
    first = await perform_program(d, rows, cache=cache)
    again = await perform_program(d, None, replay=first.tool_calls)  # no cache: a replay
    assert msgspec.structs.replace(again, duration_ms=0.0, tool_calls=()) == (
        msgspec.structs.replace(first, duration_ms=0.0, tool_calls=())
    )
    await perform_program(program('{:n "4"}', id="r1/program/3"), rows, cache=cache)
    assert list(cache.signatures) == [SIGNATURE]  # parsed once per run


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"return_validation": "lenient"}, "return_validation must be one of"),
        ({"return_signature": "(q :string -> :int"}, "return_signature does not parse"),
    ],
)
def test_bad_fields_are_problems_of_the_directive(fields: dict[str, Any], problem: str) -> None:
    problems = program("1", **fields).problems()
    assert len(problems) == 1 and problem in problems[0]
