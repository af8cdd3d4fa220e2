"""Agents and Python types: ``output_type``, typed contexts, and the spec audit's edges of
the front door (B14, U5, U7, K5, K8, K10, J3, O10, compile's sample form)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import msgspec
import pydantic
import pytest
from structlog.testing import capture_logs

import ptcflow
from ptcflow import Step, SubAgent, tool
from ptcflow.agent import run as run_agent
from ptcflow.errors import ConfigError, UsageError
from ptcflow.runtime import Runtime
from ptcflow.strategies import PTC, RunInfo
from ptcflow.testing import ScriptedLLM

from .ptc_support import block

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Invoice:
    number: str
    total: float
    due: datetime.date


class Rating(pydantic.BaseModel):
    score: int
    why: str = ""

    @pydantic.field_validator("score")
    @classmethod
    def at_most_five(cls, value: int) -> int:
        if not 0 <= value <= 5:
            raise ValueError("score must be between 0 and 5")
        return value


class Customer(msgspec.Struct):
    name: str
    tier: str


BILLER = SubAgent(
    prompt="Bill {{name}} ({{tier}})",
    signature="(name :string, tier :string)",
    output_type=Invoice,
    max_turns=3,
    name="biller",
)


async def test_step_value_is_an_instance_of_the_output_type(anyio_backend: str) -> None:
    llm = ScriptedLLM(
        [
            block('(return {:number "A1" :total 12.5 :due "2026-13-01"})'),
            block('(return {:number "A1" :total 12.5 :due "2026-12-01"})'),
        ]
    )
    step = await BILLER.run(llm=llm, context=Customer(name="Ada", tier="gold"))
    assert step.ok and step.value == Invoice("A1", 12.5, datetime.date(2026, 12, 1))
    assert step.turns == 2
    assert (
        BILLER.signature
        == "(name :string, tier :string) -> {number :string, total :float, due :string}"
    )
    system = llm.requests[0].messages[0].content
    assert "{number :string, total :float, due :string}" in system
    assert 'due: an ISO 8601 date string, e.g. "2026-05-01"' in system
    feedback = llm.requests[1].messages[-1].content
    assert "does not fit Invoice" in feedback and "due:" in feedback
    assert "Bill Ada (gold)" in llm.requests[0].messages[1].content


async def test_json_mode_runs_pydantic_validators_and_tells_the_model(anyio_backend: str) -> None:
    rater = SubAgent(prompt="Rate it", output_type=Rating, output="json", max_turns=3)
    llm = ScriptedLLM(['{"score": 9}', '{"score": 4, "why": "good"}'])
    step = await rater.run(llm=llm)
    assert step.ok and step.value == Rating(score=4, why="good")
    assert "score must be between 0 and 5" in llm.requests[1].messages[-1].content


async def test_a_typed_step_chains_as_plain_data(anyio_backend: str) -> None:
    first = await BILLER.run(
        llm=ScriptedLLM([block('(return {:number "A1" :total 3.0 :due "2026-12-01"})')]),
        context={"name": "Ada", "tier": "gold"},
    )
    reader = SubAgent(
        prompt="Read {{number}}", signature="(number :string, due :string) -> :string"
    )
    llm = ScriptedLLM(["(return ctx/due)"])
    second = await reader.run(llm=llm, context=first)
    assert second.ok and second.value == "2026-12-01"


async def test_as_tool_of_a_typed_agent_answers_plain_data(anyio_backend: str) -> None:
    boss = SubAgent(prompt="Bill Ada", tools={"bill": BILLER.as_tool()}, signature="{due :string}")
    llm = ScriptedLLM(
        [
            block('(return (call "bill" {:name "Ada" :tier "gold"}))'),
            block('(return {:number "A9" :total 1.0 :due "2026-01-02"})'),
        ]
    )
    step = await boss.run(llm=llm)
    assert step.ok and step.value == {"number": "A9", "total": 1.0, "due": "2026-01-02"}


def test_output_type_and_signature_must_agree() -> None:
    with pytest.raises(ConfigError, match="disagree"):
        SubAgent(prompt="x", signature="() -> :int", output_type=Invoice)
    same = SubAgent(
        prompt="x", signature="{number :string, total :float, due :string}", output_type=Invoice
    )
    assert same.parsed_signature is not None


def test_an_output_type_with_no_json_form_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="output_type: unsupported type hint complex"):
        SubAgent(prompt="x", output_type=complex)


async def test_an_output_type_a_worker_cannot_import_fails_the_run_saying_so(
    anyio_backend: str,
) -> None:
    ptc = PTC(prompt="Go", signature="{n :int}", output_type="no_such_module:Thing", max_turns=1)
    async with Runtime(llm=ScriptedLLM(["(return {:n 1})"])) as rt:
        step = await rt.run(ptc, {})
    assert not step.ok and step.error is not None
    assert "output_type 'no_such_module:Thing' cannot be imported" in step.error.message


def test_a_typed_answer_that_does_not_fit_on_the_client_is_a_failed_step() -> None:
    step = BILLER.typed(Step(run_id="r", ok=True, value={"number": "A", "total": 1.0, "due": "x"}))
    assert not step.ok and step.reason == "validation" and step.error is not None
    assert "due:" in step.error.message


# -- B14 / U7 / U5: the context at the front door -------------------------------------------

FINDER = SubAgent(prompt="Find {{user}}", signature="(user :string, n :int) -> :int")


def test_b14_the_context_is_checked_against_the_parameters() -> None:
    with pytest.raises(UsageError, match=r"does not match its parameters.*user: expected string"):
        FINDER.run_sync(llm=ScriptedLLM(["(return 1)"]), context={"user": 5, "n": 1})
    with pytest.raises(UsageError, match="n: missing"):
        FINDER.run_sync(llm=ScriptedLLM(["(return 1)"]), context={"user": "u"})
    llm = ScriptedLLM(["(return ctx/n)"])
    step = FINDER.run_sync(llm=llm, context={"user": "u", "n": "7"})
    assert step.ok and step.value == 7  # coerced as as_tool coerces
    loose = FINDER.run_sync(
        llm=ScriptedLLM(["(return 1)"]), context={"user": "u"}, signature_validation="disabled"
    )
    assert loose.ok


def test_u7_a_context_value_that_is_not_plain_data_names_its_key() -> None:
    agent = SubAgent(prompt="x", max_turns=1)
    with pytest.raises(UsageError, match="context key 'user': a object is not plain data"):
        agent.run_sync(llm=ScriptedLLM(["1"]), context={"user": object()})


def test_u5_ptcflow_run_sync_takes_an_agent_and_its_context() -> None:
    step = ptcflow.run_sync(
        SubAgent(prompt="Hi {{x}}", max_turns=1), context={"x": 1}, llm=ScriptedLLM(["(+ 1 ctx/x)"])
    )
    assert step.ok and step.value == 2
    bare = ptcflow.run_sync(SubAgent(prompt="Hi", max_turns=1), llm=ScriptedLLM(["(+ 1 1)"]))
    assert bare.value == 2
    from ptcflow.strategies import ReAct

    with pytest.raises(UsageError, match="options of an agent's run"):
        ptcflow.run_sync(ReAct(), "hi", context={"x": 1}, llm=ScriptedLLM(["hi"]))


async def test_u5_ptcflow_run_takes_an_agent(anyio_backend: str) -> None:
    step = await ptcflow.run(SubAgent(prompt="Hi", max_turns=1), llm=ScriptedLLM(["(+ 2 2)"]))
    assert step.value == 4


# -- K8 / K10 / J3 / K5 -----------------------------------------------------------------------


def test_k8_warn_only_logs_its_warnings_and_keeps_the_trace_as_asked() -> None:
    agent = SubAgent(prompt="Go", signature="{n :int}", max_turns=2)
    with capture_logs() as logs:
        step = agent.run_sync(
            llm=ScriptedLLM(['(return {:n "x"})']), signature_validation="warn_only", trace=False
        )
    assert step.ok and step.trace is None
    (event,) = [e for e in logs if e["event"] == "validation warning"]
    assert event["log_level"] == "warning" and "n: expected int" in event["warnings"]


def test_k10_strict_refuses_untyped_tools_naming_the_parameters() -> None:
    def loose(x, y: int) -> int:  # type: ignore[no-untyped-def]
        return y

    with pytest.warns(Warning, match="no type hint"):
        agent = SubAgent(prompt="Go", tools=[loose])
    with pytest.raises(UsageError, match=r"fully typed; untyped: loose: x\b"):
        agent.run_sync(llm=ScriptedLLM(["(return 1)"]), signature_validation="strict")
    typed = SubAgent(prompt="Go", tools=[(loose, "(x :int, y :int) -> :int")])
    assert typed.run_sync(llm=ScriptedLLM(["(return 1)"]), signature_validation="strict").ok


def test_j3_a_one_argument_lambda_receives_the_argument_map() -> None:
    seen: list[Any] = []
    agent = SubAgent(prompt="Go", tools={"get_time": lambda _args: seen.insert(0, _args) or "noon"})  # type: ignore[func-returns-value]
    step = agent.run_sync(llm=ScriptedLLM(['(return (call "get_time" {:tz "UTC"}))']))
    assert step.ok and step.value == "noon" and seen == [{"tz": "UTC"}]
    assert agent.tools["get_time"].pass_input


def test_k5_coercions_of_tool_arguments_reach_the_feedback_and_the_trace() -> None:
    @tool
    def check(id: int, name: str) -> bool:
        """Check."""
        return id == 42

    llm = ScriptedLLM(['(call "check" {:id "42" :name "Alice"})', "(return 1)"])
    step = SubAgent(prompt="Go", tools=[check], max_turns=2).run_sync(llm=llm)
    feedback = llm.requests[1].messages[-1].content
    assert 'Tool validation warnings:\n- check: id: coerced string "42" to int' in feedback
    assert step.trace is not None
    (call,) = step.trace.turns[0].execution.tool_calls
    assert call.warnings == ('id: coerced string "42" to int',)


# -- O10, compile's sample -------------------------------------------------------------------


def test_o10_repr_of_a_step_is_compact() -> None:
    step = SubAgent(prompt="Go", max_turns=1).run_sync(llm=ScriptedLLM(["(+ 1 2)"]))
    text = repr(step)
    assert len(text) < 300 and "value=3" in text and "turns=1" in text
    assert "trace=<1 turn(s)>" in text and "You solve" not in text
    assert step.trace is not None and step.trace.turns[0].prompt.system  # one call away


SCORER = SubAgent(
    prompt="Score {{report}}",
    signature="(report :map) -> {score :float}",
    name="scorer",
)
FUNCTION = "(defn score [report] {:score (float (:amount report))})"


def test_compile_takes_a_list_of_sample_values_for_one_parameter() -> None:
    reports = [{"region": "eu", "amount": 5}, {"region": "us", "amount": 1}]
    llm = ScriptedLLM([f"```clojure\n{FUNCTION}\n```"])
    compiled = SCORER.compile_sync(llm=llm, sample=reports)
    assert compiled.execute_sync({"report": {"amount": 2}}).value == {"score": 2.0}
    assert '- {:report {:region "eu", :amount 5}}' in llm.requests[0].messages[-1].content


async def test_run_agent_module_function_passes_output_type(anyio_backend: str) -> None:
    step = await run_agent(
        "Rate {{x}}",
        signature="(x :string)",
        output_type=Rating,
        output="json",
        context={"x": "it"},
        llm=ScriptedLLM(['{"score": 3}']),
    )
    assert step.value == Rating(score=3)


def test_the_strategy_carries_the_type_by_name() -> None:
    assert BILLER.describe()["output_type"] == f"{__name__}:Invoice"
    ptc = BILLER.strategy()
    assert isinstance(ptc, PTC) and ptc.output_type == f"{__name__}:Invoice"
    state, _ = ptc.init(RunInfo(run_id="r", input={"name": "a", "tier": "b"}))
    assert state.status == "awaiting_llm"


@dataclasses.dataclass
class Score:
    score: float


@dataclasses.dataclass
class Report:
    amount: int


def test_a_compiled_agent_keeps_the_output_type_and_takes_typed_inputs() -> None:
    scorer = SubAgent(
        prompt="Score {{report}}", signature="(report :map)", output_type=Score, name="s"
    )
    llm = ScriptedLLM([f"```clojure\n{FUNCTION}\n```"])
    compiled = scorer.compile_sync(llm=llm, sample=[{"amount": 5}])
    assert compiled.output_type is Score
    assert compiled.execute_sync({"report": {"amount": 2}}).value == Score(2.0)
    (one,) = compiled.execute_many_sync([{"report": Report(amount=3)}])
    assert one.value == Score(3.0)
    tool_value = compiled.as_tool().fn({"report": {"amount": 4}})
    import anyio

    assert anyio.run(lambda: tool_value) == {"score": 4.0}


def test_an_llm_tool_with_an_output_type_checks_the_answer_and_answers_plain_data() -> None:
    from ptcflow import LLMTool

    rate = LLMTool(prompt="Rate {{text}}", signature="(text :string)", output_type=Rating)
    assert str(rate.signature) == "llm_tool(text :string) -> {score :int, why :string?}"
    boss = SubAgent(prompt="Go", tools={"rate": rate}, signature="{score :int}", max_turns=2)
    llm = ScriptedLLM(
        [
            block('(return (call "rate" {:text "ok"}))'),
            block("{:score 9}"),  # the judgment: refused by the validator, the call fails
            block("(return {:score 1})"),
        ]
    )
    step = boss.run_sync(llm=llm)
    assert step.ok and step.value == {"score": 1}
    assert "score must be between 0 and 5" in llm.requests[2].messages[-1].content


def test_a_step_with_a_typed_value_encodes_with_msgspec() -> None:
    from ptcflow.signature import to_plain

    step = Step(run_id="r", ok=True, value=Rating(score=3))
    data = msgspec.json.decode(msgspec.json.encode(step, enc_hook=to_plain))
    assert data["value"] == {"score": 3, "why": ""}
    typed = Step(run_id="r", ok=True, value=Invoice("A", 1.0, datetime.date(2026, 1, 2)))
    assert msgspec.json.decode(msgspec.json.encode(typed))["value"]["due"] == "2026-01-02"


def test_a_saved_compiled_agent_loads_with_its_agents_output_type(tmp_path: Any) -> None:
    from ptcflow import CompiledAgent

    scorer = SubAgent(
        prompt="Score {{report}}", signature="(report :map)", output_type=Score, name="s"
    )
    compiled = scorer.compile_sync(
        llm=ScriptedLLM([f"```clojure\n{FUNCTION}\n```"]), sample=[{"amount": 5}]
    )
    path = compiled.save(tmp_path / "s.clj")
    loaded = CompiledAgent.load(path, agent=scorer)
    assert loaded.execute_sync({"report": {"amount": 1}}).value == Score(1.0)
