"""Work a SubAgent run does once: the returned value checked once (by the host, the strategy
takes its verdict), the signature parsed once, a tool call's arguments made plain once, the
Step's parts asked in one pass."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow import SubAgent
from ptcflow.directives import RunProgram
from ptcflow.program import ProgramCache, perform_program
from ptcflow.program._memory import return_ends_run, return_verdict
from ptcflow.signals import Err, Ok, ProgramOutput, ProgramToolCall
from ptcflow.signature import parse
from ptcflow.strategies import PTC, RunInfo
from ptcflow.strategies._subagent import call_warnings, check_return
from ptcflow.testing import SignalFactory

SIG = "(q :string) -> {n :int, tags [:string]?}"
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["n", "tags", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    value=VALUES,
    mode=st.sampled_from(["enabled", "strict", "warn_only", "disabled", ":strict"]),
    signature=st.sampled_from([SIG, None]),
)
def test_the_hosts_verdict_is_the_strategys_check(
    value: Any, mode: str, signature: str | None
) -> None:
    """The verdict the host puts on the output is check_return's: ends the run exactly when
    check_return finds no problem, with the same warnings."""
    d = RunProgram(id="p", source="1", return_signature=signature, return_validation=mode)
    problem, warnings = check_return(None if signature is None else parse(signature), value, mode)
    verdict = return_verdict(d, value, ProgramCache())
    assert (verdict is not None) == (problem is None)
    assert return_ends_run(d, value, ProgramCache()) == (problem is None)
    if verdict is not None:
        assert list(verdict) == warnings


def program_of(source: str, mode: str | None = "enabled") -> RunProgram:
    return RunProgram(
        id="r1/program/1", source=source, return_signature="{n :int}", return_validation=mode
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("source", "mode", "ends", "warnings"),
    [
        ("(return {:n 1})", "enabled", True, ()),
        ('(return {:n "1"})', "enabled", False, ()),
        ('(return {:n "1"})', "warn_only", True, ('n: expected int, got string "1"',)),
        ("(return {:n 1})", None, False, ()),  # no mode: the host cannot tell
        ("{:n 1}", "enabled", False, ()),  # no return
    ],
)
async def test_the_output_carries_the_verdict(
    source: str, mode: str | None, ends: bool, warnings: tuple[str, ...]
) -> None:
    out = await perform_program(program_of(source, mode))
    assert (out.return_ends_run, out.return_warnings) == (ends, warnings)


def ended_with(out: ProgramOutput, mode: str = "enabled") -> Any:
    ptc = PTC(prompt="go", signature="{n :int}", signature_validation=mode)
    sig = SignalFactory("r1")
    state, (llm,) = ptc.init(RunInfo(run_id="r1", input={}))
    for s in sig.llm_reply(llm, "```clojure\n(return {:n 1})\n```"):
        state, _ = ptc.handle(state, s)
    state, _ = ptc.handle(state, sig.program_result("r1/program/1", out))
    return state


def test_the_strategy_takes_the_hosts_verdict_and_its_warnings() -> None:
    out = ProgramOutput(
        value={"n": "1"}, returned=True, return_ends_run=True, return_warnings=("w1",)
    )
    state = ended_with(out, "warn_only")
    assert (state.status, state.value) == ("completed", {"n": "1"})
    problem = state.turns[-1].problem
    assert problem is not None and problem.message == "w1"


def test_an_output_without_the_verdict_is_checked_by_the_strategy() -> None:
    """An older journal's output (no ``return_ends_run``) is checked as before."""
    state = ended_with(ProgramOutput(value={"n": "1"}, returned=True))
    assert state.status == "awaiting_llm" and state.turns[0].problem is not None
    state = ended_with(ProgramOutput(value={"n": 1}, returned=True))
    assert (state.status, state.value) == ("completed", {"n": 1})


def test_ptc_keeps_its_parsed_signature_beside_its_fields() -> None:
    ptc = PTC(
        prompt="go", signature="(a :int) -> {n :int}", context_signature="(b :string) -> :any"
    )
    assert ptc.parsed_signature() == parse("(a :int) -> {n :int}")
    # not a field: not encoded, not compared
    assert msgspec.json.decode(msgspec.json.encode(ptc)).keys() == set(PTC.__struct_fields__)
    assert ptc == msgspec.json.decode(msgspec.json.encode(ptc), type=PTC)
    copied = copy.copy(ptc)  # made without __post_init__: parsed again when asked
    assert copied.parsed_signature() == ptc.parsed_signature()
    replaced = msgspec.structs.replace(ptc, signature="{m :string}")
    assert replaced.parsed_signature() == parse("{m :string}")
    state, _ = copied.init(RunInfo(run_id="r1", input={"a": 1, "b": "x"}))
    assert "a" in state.system and "b" in state.system


def test_a_subagent_parses_its_signature_and_builds_its_tools_once() -> None:
    def add(x: int, y: int) -> int:
        """Add."""
        return x + y

    agent = SubAgent(prompt="Add {{a}}", signature="(a :int) -> {sum :int}", tools=[add])
    assert agent.parsed_signature is agent.parsed_signature
    assert agent.parsed_signature == parse("(a :int) -> {sum :int}")
    assert [s.name for s in agent._toolbox.specs] == ["add"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "warnings"),
    [
        ({"x": 1}, ()),
        ({"x": "1"}, ('x: coerced string "1" to int',)),
        ({"x": 2.0}, ("x: coerced float 2.0 to int",)),
        ({"x": None, "q": "text"}, ()),
    ],
)
def test_call_warnings_are_found_for_strings_and_floats(
    args: dict[str, Any], warnings: tuple[str, ...]
) -> None:
    assert call_warnings({"t": "(x :int?) -> :any"}, "t", args) == warnings


@pytest.mark.anyio
async def test_a_calls_arguments_are_made_plain_once_and_recorded_alike() -> None:
    seen: list[ProgramToolCall] = []

    async def call(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
        await anyio.lowlevel.checkpoint()
        return Ok(payload=1)

    d = RunProgram(id="p", source='(call "t" {:k :v :n [1 2]})', tool_names=("t",))
    out = await perform_program(d, call, on_call=seen.append)
    assert seen[0].args == out.tool_calls[0].args == {"k": "v", "n": [1, 2]}
    assert out.tool_calls[0].args is seen[0].args


def test_the_steps_parts_are_asked_in_one_pass_as_one_by_one() -> None:
    from ptcflow.core import (
        step_agent,
        step_details,
        step_memory,
        step_messages,
        step_parts,
        step_summary,
    )
    from ptcflow.signals import ProgramMemory

    ptc = PTC(prompt="go", signature="{n :int}")
    sig = SignalFactory("r1")
    state, (llm,) = ptc.init(RunInfo(run_id="r1", input={}, memory=ProgramMemory()))
    for s in sig.llm_reply(llm, "```clojure\n(return {:n 1})\n```"):
        state, _ = ptc.handle(state, s)
    state, _ = ptc.handle(
        state, sig.program_result("r1/program/1", ProgramOutput(value={"n": 1}, returned=True))
    )
    one_by_one = (
        step_messages(ptc, state),
        step_memory(ptc, state),
        step_summary(ptc, state),
        step_agent(ptc, state, "a"),
        step_details(ptc, state),
    )
    assert step_parts(ptc, state, "a") == one_by_one
    assert one_by_one[0] and one_by_one[1] is not None and one_by_one[4]["trace"] is not None
    assert step_parts(object(), None, "a") == ((), None, None, "a", {})


@pytest.mark.anyio
async def test_an_agent_on_the_runtimes_own_provider_plans_with_the_runtimes_source() -> None:
    """``agent.run(llm=p)`` opens a Runtime on ``p``: the plan takes its model source as is
    (one ``ModelSource`` per run less); another model, or a function, gets its own."""
    from ptcflow.runtime import Runtime
    from ptcflow.testing import ScriptedLLM

    own, other = ScriptedLLM(["x"]), ScriptedLLM(["y"])
    agent = SubAgent(prompt="go", signature="{n :int}")
    async with Runtime(llm=own) as rt:
        assert agent.plan_run(rt, None, {"llm": own}).llm is rt.model_source
        planned = agent.plan_run(rt, None, {"llm": other}).llm
        assert planned is not None and planned.given is other

        def answer(prompt: Any) -> str:
            return "(return {:n 1})"

        called = agent.plan_run(rt, None, {"llm": answer}).llm
        assert called is not None and called.given is not answer  # a CallbackLLM around it
