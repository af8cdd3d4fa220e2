"""``ReAct(output_type=...)``: the final answer as a Python type (issue 29).

The strategy keeps the type as data (its path, JSON Schema and compact signature), asks for
one JSON value of it, feeds back what does not fit, and ends with the plain value;
``react.typed(step)`` builds the instance at the edge.
"""

from __future__ import annotations

import dataclasses
import datetime

import msgspec
import pytest
from hypothesis import given, strategies as st

import ptcflow
from ptcflow import tool
from ptcflow.directives import LLMGenerate
from ptcflow.errors import ConfigError
from ptcflow.runtime import Runtime
from ptcflow.strategies import ReAct, RunInfo
from ptcflow.strategies.react import ReActState
from ptcflow.strategies.react._output import check_answer
from ptcflow.temporal._refs import agent_ref
from ptcflow.testing import ScriptedLLM, SignalFactory


@dataclasses.dataclass
class Invoice:
    number: str
    total: float
    due: datetime.date


class Parcel(msgspec.Struct):
    city: str
    weight: int


@tool
def price(item: str) -> float:
    """The price of an item."""
    return 12.5


GOOD = '{"number": "A1", "total": 12.5, "due": "2026-12-01"}'


def test_the_type_is_kept_as_data_and_shown_in_the_system_prompt() -> None:
    react = ReAct(system_prompt="Be brief.", output_type=Invoice)
    assert react.output_type == f"{__name__}:Invoice"
    assert react.output_spec is not None
    assert react.output_spec.signature == "{number :string, total :float, due :string}"
    assert react.output_spec.schema["properties"]["due"]["format"] == "date"
    state, (ask,) = react.init(RunInfo(run_id="r1", input="bill Ada"))
    assert isinstance(ask, LLMGenerate)
    system = ask.messages[0].content
    assert system.startswith("Be brief.\n\n## Final answer")
    assert "{number :string, total :float, due :string}" in system
    assert 'due: an ISO 8601 date string, e.g. "2026-05-01"' in system
    assert ask.tools == ()  # no extra tool: the answer is the final text
    assert react.conversation(state)[0].content == "bill Ada"


def test_a_path_string_is_the_same_type() -> None:
    assert ReAct(output_type=f"{__name__}:Invoice") == ReAct(output_type=Invoice)


@pytest.mark.parametrize(
    ("hint", "says"),
    [
        (list[Invoice], "must be a class"),
        (complex, "complex"),
        ("nowhere.at.all:X", "cannot be imported"),
    ],
)
def test_a_type_without_json_form_is_refused_when_built(hint: object, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        ReAct(output_type=hint)


def test_it_round_trips_through_temporal_and_json() -> None:
    react = ReAct(output_type=Parcel, max_iterations=3)
    ref = agent_ref(react)  # raises when it does not come back equal
    back = msgspec.json.decode(ref.config, type=ReAct)
    assert back == react and back.output_spec == react.output_spec
    assert msgspec.json.decode(msgspec.json.encode(react), type=ReAct) == react


@pytest.mark.anyio
async def test_a_dataclass_answer_after_a_tool_call(anyio_backend: str) -> None:
    react = ReAct(output_type=Invoice)
    llm = ScriptedLLM([ScriptedLLM.tool_call("price", item="lamp"), "```json\n" + GOOD + "\n```"])
    async with Runtime(llm=llm, tools=[price]) as rt:
        step = await rt.run(react, "bill Ada for a lamp")
    assert step.ok and step.reason == "final_answer"
    # the runtime builds the instance at the edge; the strategy kept the plain value
    assert step.value == Invoice("A1", 12.5, datetime.date(2026, 12, 1))
    assert react.typed(step).value == step.value  # typing a typed Step again changes nothing
    assert msgspec.json.decode(msgspec.json.encode(step)) is not None  # still plain data


@pytest.mark.anyio
async def test_a_struct_answer_with_run(anyio_backend: str) -> None:
    react = ReAct(output_type=Parcel)
    step = await ptcflow.run(react, "ship", llm=ScriptedLLM(['{"city": "Oslo", "weight": "3"}']))
    assert step.ok and step.value == Parcel(city="Oslo", weight=3)


@pytest.mark.anyio
async def test_an_invalid_answer_is_fed_back_and_corrected(anyio_backend: str) -> None:
    react = ReAct(output_type=Invoice, max_iterations=3)
    llm = ScriptedLLM(
        [
            "Here it is: A1, 12.5",
            '{"number": "A1", "total": 12.5, "due": "next week"}',
            GOOD,
        ]
    )
    step = await ptcflow.run(react, "bill Ada", llm=llm)
    assert step.ok and react.typed(step).value.due == datetime.date(2026, 12, 1)
    not_json = llm.requests[1].messages[-1]
    assert not_json.role == "user" and "not valid JSON" in not_json.content
    assert "2 model calls left" in not_json.content
    misfit = llm.requests[2].messages[-1].content
    assert "does not fit Invoice" in misfit and "- due:" in misfit and "1 model call left" in misfit
    assert step.messages is not None and step.messages[-1].content == GOOD


@pytest.mark.anyio
async def test_a_never_valid_answer_ends_as_a_typed_failure(anyio_backend: str) -> None:
    react = ReAct(output_type=Parcel, max_iterations=2)
    llm = ScriptedLLM(['{"city": "Oslo"}', '{"city": 5, "weight": 1}'])
    step = await ptcflow.run(react, "ship", llm=llm)
    assert not step.ok and step.reason == "max_iterations"
    assert step.error is not None and step.error.type == "validation"
    assert "no valid final answer after 2 model calls" in step.error.message
    assert "city: expected string" in step.error.message
    assert react.typed(step) is step
    assert "weight" in llm.requests[1].messages[-1].content  # the first problem, fed back


@pytest.mark.anyio
async def test_tools_on_the_last_call_fail_rather_than_complete_untyped(
    anyio_backend: str,
) -> None:
    react = ReAct(output_type=Invoice, max_iterations=1)
    llm = ScriptedLLM([ScriptedLLM.tool_call("price", item="lamp")])
    step = await ptcflow.run(react, "bill", llm=llm, tools=[price])
    assert not step.ok and step.reason == "max_iterations"
    assert step.error is not None and "asked for tools" in step.error.message


def test_a_type_missing_where_the_answer_is_checked_fails_the_run() -> None:
    # a worker without the class: the ReAct decodes (it imports nothing), the answer fails
    react = ReAct(output_type=Parcel)
    data = msgspec.json.encode(react).replace(b"test_react_output_type:Parcel", b"gone_mod:Parcel")
    moved = msgspec.json.decode(data, type=ReAct)
    state, (ask,) = moved.init(RunInfo(run_id="r1", input="ship", request_id="q1"))
    for signal in SignalFactory("r1", request_id="q1").llm_reply(
        ask, '{"city": "Oslo", "weight": 1}'
    ):
        state, out = moved.handle(state, signal)
        assert out == ()
    assert isinstance(state, ReActState)
    assert state.status == "failed" and state.reason == "output_type_unavailable"
    assert state.error is not None and "cannot be imported" in state.error.message


def test_without_output_type_the_answer_is_the_text() -> None:
    react = ReAct()
    assert react.output_spec is None and react.output_type is None
    assert ReAct(output_spec=ReAct(output_type=Parcel).output_spec).output_spec is None


def test_a_new_request_starts_without_the_last_value() -> None:
    react = ReAct(output_type=Parcel)
    signals = SignalFactory("r1", request_id="q1")
    state, (ask,) = react.init(RunInfo(run_id="r1", input="ship", request_id="q1"))
    for signal in signals.llm_reply(ask, '{"city": "Oslo", "weight": 1}'):
        state, _ = react.handle(state, signal)
    outcome = react.outcome(state)
    assert outcome is not None and outcome.result.payload == {"city": "Oslo", "weight": 1}  # type: ignore[union-attr]
    state, (again,) = react.handle(state, signals.request_started("and to Bergen?"))
    assert state.status == "awaiting_llm" and state.value is None
    assert isinstance(again, LLMGenerate) and again.messages[0].role == "system"


@given(st.text())
def test_any_answer_text_is_a_value_or_a_problem_never_an_exception(text: str) -> None:
    spec = ReAct(output_type=Parcel).output_spec
    assert spec is not None
    value, problem = check_answer(spec, text)
    assert (problem is None) == isinstance(value, dict)


@given(st.builds(Parcel, city=st.text(), weight=st.integers()))
def test_every_parcel_encoded_is_accepted_as_it_is(parcel: Parcel) -> None:
    spec = ReAct(output_type=Parcel).output_spec
    assert spec is not None
    value, problem = check_answer(spec, msgspec.json.encode(parcel).decode())
    assert problem is None and value == msgspec.to_builtins(parcel)


def test_only_a_typed_react_gets_a_finishing_step() -> None:
    from ptcflow.runtime.lowlevel import typed_finish

    assert typed_finish(ReAct()) is None  # nothing added to an ordinary run
    react = ReAct(output_type=Parcel)
    finish = typed_finish(react)
    assert finish is not None
    assert finish(ptcflow.Step(run_id="r", ok=True, value={"city": "Oslo", "weight": 3})).value == (
        Parcel(city="Oslo", weight=3)
    )
