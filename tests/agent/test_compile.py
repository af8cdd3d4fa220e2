"""SubAgent.compile: one model call writes a PTC-Lisp function; bad answers are typed errors."""

from __future__ import annotations

from typing import Any

import pytest

import ptcflow
from ptcflow import CompiledAgent, SubAgent, Tool
from ptcflow.agent import CompileError, compile_sync
from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


def lookup_threshold(region: str) -> float:
    """The anomaly threshold of a region."""
    return {"eu": 100.0, "us": 150.0}.get(region, 120.0)


SCORER = SubAgent(
    prompt="Calculate anomaly score for {{report}}",
    signature="(report :map) -> {score :float, reason :string}",
    tools=[lookup_threshold],
    name="scorer",
    description="Scores a report.",
)
FUNCTION = """(defn score [report]
  (let [limit (call "lookup_threshold" {:region (:region report)})
        amount (:amount report)]
    {:score (if (> amount limit) (/ (float amount) limit) 0.0)
     :reason (if (> amount limit) "over threshold" "normal")}))"""
SAMPLES = [{"report": {"region": "eu", "amount": 250}}, {"report": {"region": "us", "amount": 10}}]


def answer(code: str) -> str:
    return f"Here is the function:\n```clojure\n{code}\n```\n"


async def test_compile_asks_once_and_returns_a_compiled_agent() -> None:
    llm = ScriptedLLM([answer(FUNCTION)])
    compiled = await SCORER.compile(llm=llm, sample=SAMPLES)
    assert isinstance(compiled, CompiledAgent)
    assert compiled.source == FUNCTION
    assert compiled.signature == SCORER.signature
    assert compiled.name == "scorer" and compiled.description == "Scores a report."
    assert list(compiled.tools) == ["lookup_threshold"]
    meta = compiled.metadata
    assert meta is not None and meta.turns == 1 and meta.tokens_used > 0
    assert meta.llm_model == "scripted:scripted" and meta.compiled_at.tzinfo is not None
    assert len(llm.requests) == 1
    system, user = (m.content for m in llm.requests[0].messages)
    assert "The last (defn ...) is the function. It takes 1 argument" in system
    assert "report :map" in system and "{score :float, reason :string}" in system
    assert "lookup_threshold(region :string) -> :float" in system
    assert "## PTC-Lisp" in system and "(defn scorer [report]" in system
    assert "Calculate anomaly score for {{report}}" in user
    assert '{:report {:region "eu", :amount 250}}' in user and "(2 of 2)" in user
    step = await compiled.execute({"report": {"region": "eu", "amount": 200}})
    assert step.ok and step.value == {"score": 2.0, "reason": "over threshold"}
    assert step.turns == 0 and step.tool_calls == 1  # no model: the tool only
    assert len(llm.requests) == 1


def test_module_functions_and_a_single_sample_map() -> None:
    compiled = compile_sync(SCORER, llm=ScriptedLLM([answer(FUNCTION)]), sample=SAMPLES[0])
    assert compiled.execute_sync(SAMPLES[1]).value == {"score": 0.0, "reason": "normal"}
    assert ptcflow.compile is ptcflow.agent.compile
    with pytest.raises(UsageError, match="takes a SubAgent"):
        compile_sync("not an agent", llm=ScriptedLLM([]))  # type: ignore[arg-type]


async def test_compile_runs_on_a_given_runtime_with_its_signals() -> None:
    llm = ScriptedLLM([answer(FUNCTION)])
    async with Runtime(llm=llm) as rt:
        compiled = await SCORER.compile(runtime=rt, sample=SAMPLES, run_id="compile-1")
    assert compiled.metadata is not None and compiled.metadata.turns == 1
    assert len(llm.requests) == 1 and compiled.metadata.llm_model == "scripted:scripted"


async def test_a_model_name_goes_with_the_call() -> None:
    llm = ScriptedLLM([answer(FUNCTION)])
    async with Runtime(llm=llm) as rt:
        compiled = await SCORER.compile(llm="haiku", runtime=rt, sample=SAMPLES)
    assert [r.model for r in llm.requests] == ["haiku"]
    assert compiled.metadata is not None and compiled.metadata.llm_model == "haiku"


async def test_a_function_llm_gets_the_callback_input() -> None:
    seen: list[dict[str, Any]] = []

    def model(request: dict[str, Any]) -> str:
        seen.append(request)
        return answer(FUNCTION)

    await SCORER.compile(llm=model, sample=SAMPLES)
    assert seen[0]["turn"] == 1 and "## Rules" in seen[0]["system"]


async def test_compile_retries_a_failed_model_call() -> None:
    agent = SubAgent(
        prompt="Score {{report}}",
        signature="(report :map) -> {score :float, reason :string}",
        tools=[lookup_threshold],
        llm_retry={"max_attempts": 2, "base_ms": 1},
    )
    llm = ScriptedLLM([ScriptedLLM.rate_limited(retry_after=0.001), answer(FUNCTION)])
    compiled = await agent.compile(llm=llm, sample=SAMPLES)
    assert compiled.source == FUNCTION and len(llm.requests) == 2


async def test_a_failed_model_call_is_a_compile_error() -> None:
    agent = SubAgent(
        prompt="Score {{report}}",
        signature="(report :map) -> :float",
        llm_retry={"max_attempts": 1},
    )
    llm = ScriptedLLM([ScriptedLLM.rate_limited(retry_after=0.001)])
    with pytest.raises(CompileError) as info:
        await agent.compile(llm=llm, sample={"report": {}})
    assert info.value.step.fail is not None and info.value.step.fail.reason == "llm_error"
    assert info.value.response is None


@pytest.mark.parametrize(
    ("response", "reason", "says"),
    [
        ("I cannot do that.", "no_code", "no program found"),
        (answer("(defn a [r] 1)") + answer("(defn b [r] 2)"), "several_blocks", "2 code blocks"),
        (answer("(def limit 10)"), "no_function", "defines no function"),
        (answer(FUNCTION + "\n(score {:amount 1})"), "not_definitions", "only definitions"),
        (answer("(defn f [r] (memory/put :seen r))"), "stateful", "keeps no state"),
        (answer('(defn f [r] (call "lookup" {}))'), "invalid_program", 'unknown tool "lookup"'),
        (answer("(defn f [r] (:amount ctx/report))"), "invalid_program", "not ctx/"),
        (answer('(defn f [r] {:score (/ 1 0) :reason "x"})'), "sample_failed", "division"),
        (answer('(defn f [r] {:score "high" :reason "x"})'), "sample_failed", "invalid_return"),
        (answer('(defn f [a b] {:score 1.0 :reason "x"})'), "sample_failed", "arity"),
        (answer('(defn f [r] (fail {:reason :nope :message "no"}))'), "sample_failed", "nope"),
        (answer("(defn f [r] {:score (+ 1"), "unreadable", "does not read"),
    ],
)
def test_a_bad_answer_is_a_typed_explained_error(response: str, reason: str, says: str) -> None:
    with pytest.raises(CompileError) as info:
        SCORER.compile_sync(llm=ScriptedLLM([response]), sample=SAMPLES)
    err = info.value
    assert err.step.fail is not None and err.step.fail.reason == reason
    assert says in str(err) and "scorer" in str(err)
    assert not err.step.ok and err.response == response
    assert err.step.error is not None and err.step.error.type == "compile"
    assert err.step.usage.total_tokens > 0  # the compile call's usage stays on the Step
    assert isinstance(err, ptcflow.SubAgentError)


def test_the_failed_sample_is_named() -> None:
    code = '(defn f [r] (if (= (:region r) "us") (fail {:reason :us :message "no"}) {:score 1.0 :reason "x"}))'
    with pytest.raises(CompileError) as info:
        SCORER.compile_sync(llm=ScriptedLLM([answer(code)]), sample=SAMPLES)
    assert info.value.step.fail is not None
    assert info.value.step.fail.details["sample"] == 1
    assert "sample 1" in str(info.value) and info.value.source == code


def test_an_agent_with_a_tool_that_calls_a_model_is_refused_naming_the_tool() -> None:
    ask = Tool("ask_expert", lambda q: q, signature="(q :string) -> :string", calls_model=True)
    agent = SubAgent(
        prompt="Score {{report}}",
        signature="(report :map) -> :float",
        tools=[ask, lookup_threshold],
    )
    llm = ScriptedLLM([answer(FUNCTION)])
    with pytest.raises(UsageError, match="'ask_expert' calls a model"):
        agent.compile_sync(llm=llm, sample={"report": {}})
    assert llm.requests == []  # refused before any call
    assert ask.calls_model and not Tool("t", len).calls_model
    assert ask.replace(name="ask2").calls_model  # kept by replace()


@pytest.mark.parametrize("kind", ["agent", "llm_tool"])
def test_agents_as_tools_and_llm_tools_are_refused(kind: str) -> None:
    expert = SubAgent(prompt="Judge {{q}}", signature="(q :string) -> :string", name="expert")
    tool = (
        expert.as_tool(llm="haiku")
        if kind == "agent"
        else ptcflow.LLMTool(
            prompt="Is {{q}} urgent?", signature="(q :string) -> :bool", name="expert"
        )
    )
    agent = SubAgent(prompt="Score {{report}}", signature="(report :map) -> :float", tools=[tool])
    llm = ScriptedLLM([answer(FUNCTION)])
    with pytest.raises(UsageError, match="'expert' calls a model"):
        agent.compile_sync(llm=llm, sample={"report": {}})
    assert llm.requests == []


@pytest.mark.parametrize(
    ("agent", "sample", "says"),
    [
        (SubAgent(prompt="Do it"), None, "has no signature"),
        (SCORER, None, "needs sample="),
        (SCORER, [], "non-empty list"),
        (SCORER, [{"report": 5}], "sample 0 is not an input"),
        (SCORER, ["x"], "sample 0 is not an input"),
    ],
)
def test_bad_compile_arguments_are_usage_errors(agent: SubAgent, sample: Any, says: str) -> None:
    llm = ScriptedLLM([answer(FUNCTION)])
    with pytest.raises(UsageError, match=says):
        agent.compile_sync(llm=llm, sample=sample)
    assert llm.requests == []


def test_no_llm_is_a_usage_error_and_no_parameters_need_no_sample() -> None:
    with pytest.raises(UsageError, match="no LLM to compile with"):
        SCORER.compile_sync(sample=SAMPLES)
    constant = SubAgent(prompt="The answer", signature="() -> {answer :int}")
    compiled = constant.compile_sync(llm=ScriptedLLM([answer("(defn f [] {:answer 42})")]))
    assert compiled.execute_sync({}).value == {"answer": 42}


async def test_compile_sync_refuses_a_running_loop() -> None:
    with pytest.raises(UsageError, match=r"await agent\.compile"):
        SCORER.compile_sync(llm=ScriptedLLM([]), sample=SAMPLES)
