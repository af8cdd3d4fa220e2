"""Agents as tools: child runs on the caller's Runtime, LLM inheritance, firewall, errors."""

from __future__ import annotations

import io
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow import ReAct, SubAgent, Tool, UsageError, print_trace
from ptcflow.agent import AgentCall
from ptcflow.runtime import LLMRequest, ParentRun, Runtime, Step, Telemetry
from ptcflow.signals import TOOL_RESULT, Err, Signal
from ptcflow.testing import ScriptedLLM

from .composition_support import SPEC_ANSWERS, first_user, router, spec_tree

pytestmark = pytest.mark.anyio


def _task_models(llm: ScriptedLLM) -> dict[str, str]:
    return {first_user(r).split(" ")[0]: r.model for r in llm.requests}


async def test_the_specs_three_level_inheritance_reaches_every_model() -> None:
    llm = ScriptedLLM(router(SPEC_ANSWERS))
    async with Runtime(llm=llm) as rt:
        step = await rt.run(spec_tree(), llm="sonnet")
    assert step.ok, step.fail
    assert step.value == {"analysis": {"class": "greeting", "score": 7, "expert": "fine"}}
    by_task = {first_user(r): r.model for r in llm.requests}
    assert by_task == {
        "Analyze the data": "sonnet",  # the run argument
        'Analyze {"text":"hi"}': "sonnet",  # analyzer: inherited from the run
        "Classify hi": "haiku",  # bound at as_tool
        "Score hi": "sonnet",  # inherited through analyzer
        "Expert analysis of hi": "opus",  # its own llm wins over everything
    }


async def test_inherited_functions_and_providers_reach_the_right_model() -> None:
    """A function llm is inherited by children (wrapped with the child's own prompt); a
    provider bound at as_tool is used by its agent and by that agent's children."""
    seen: list[tuple[str, str]] = []
    bound = ScriptedLLM(router(SPEC_ANSWERS))
    classifier = SubAgent(
        prompt="Classify {{text}}", signature="(text :string) -> {category :string}"
    )
    leaf = SubAgent(prompt="Score {{text}}", signature="(text :string) -> {score :int}")
    analyzer = SubAgent(
        prompt="Analyze {{data}}",
        signature="(data :map) -> {analysis :map}",
        tools={"classifier": classifier.as_tool(llm=bound), "scorer": leaf.as_tool()},
    )
    answers = dict(SPEC_ANSWERS)
    answers["Analyze"] = (
        '(return {:analysis {:c (call "classifier" {:text "x"}) :s (call "scorer" {:text "x"})}})'
    )
    root_answers = router(answers)

    def fn(request: dict[str, Any]) -> str:
        seen.append(("fn", request["prompt"]))
        return root_answers(_as_request(request))  # type: ignore[return-value]

    root = SubAgent(prompt="Analyze the data", tools={"analyzer": analyzer.as_tool()}, llm=fn)
    step = await root.run()
    assert step.ok, step.fail
    assert [p for who, p in seen] == ["Analyze the data", 'Analyze {"text":"hi"}', "Score x"]
    assert [first_user(r) for r in bound.requests] == ["Classify x"]


def _as_request(data: dict[str, Any]) -> LLMRequest:
    from ptcflow.signals import Message

    messages = tuple(Message(role=m["role"], content=m["content"]) for m in data["messages"])
    return LLMRequest(model="fn", messages=messages)


async def test_a_missing_llm_is_an_error_naming_the_agent_before_any_call() -> None:
    child = SubAgent(
        prompt="Score {{text}}", signature="(text :string) -> {score :int}", name="scorer"
    )
    root = SubAgent(prompt="Go", tools={"scorer": child.as_tool()}, name="boss")
    with pytest.raises(UsageError, match=r"SubAgent\('boss'\) has no LLM"):
        await root.run()
    async with Runtime() as rt:
        with pytest.raises(UsageError, match=r"SubAgent\('boss'\) has no LLM"):
            await rt.run(root)
    # a caller with no model at all (a strategy run without one): the call is refused
    call = child.as_tool().fn
    assert isinstance(call, AgentCall)
    parent = ParentRun(
        run_id="r",
        name="react",
        llm=None,
        model=None,
        inherit=None,
        from_program=False,
        call_id="c",
    )
    refused = call.plan_child(parent, {"text": "x"})
    assert isinstance(refused, Err)
    assert "SubAgent('scorer') (tool 'scorer') has no LLM" in refused.error.message


async def test_a_child_is_a_child_run_on_the_same_runtime_and_bus() -> None:
    seen: list[Signal] = []

    class Bus:  # anything with a sync publish(signal) is a bus
        def publish(self, signal: Signal) -> None:
            seen.append(signal)

    bus = Bus()
    llm = ScriptedLLM(router(SPEC_ANSWERS))
    async with Runtime(llm=llm, bus=bus) as rt:
        step = await rt.run(spec_tree(), llm="sonnet", run_id="mission")
        assert rt.statistics().runs_active == 0
    assert step.ok
    runs = {s.run_id: s.parent_run_id for s in seen}
    analyzer = "mission/mission/program/1/tool/0"
    assert runs["mission"] is None
    assert runs[analyzer] == "mission"
    children = [r for r, p in runs.items() if p == analyzer]
    assert len(children) == 3  # classifier, scorer, expert: their signals on the same bus
    (call,) = [s for s in seen if s.type == TOOL_RESULT and s.run_id == "mission"]
    assert call.call_id == "mission/program/1/tool/0"
    # the child's Step (with its trace) is on the parent's tool call
    (turn,) = step.trace.turns if step.trace else ()
    (analyzed,) = turn.execution.tool_calls
    child = analyzed.child
    assert isinstance(child, Step) and child.run_id == analyzer and child.trace is not None
    grandchildren = child.trace.turns[0].execution.tool_calls
    assert [c.name for c in grandchildren] == ["classifier", "scorer", "expert"]
    assert all(isinstance(c.child, Step) for c in grandchildren)


async def test_child_spans_nest_under_the_callers_execute_tool_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    llm = ScriptedLLM(router(SPEC_ANSWERS))
    async with Runtime(llm=llm, telemetry=Telemetry(tracer_provider=provider)) as rt:
        step = await rt.run(spec_tree(), llm="sonnet")
    assert step.ok
    spans = exporter.get_finished_spans()

    def one(name: str) -> ReadableSpan:
        (span,) = [s for s in spans if s.name == name]
        return span

    def parent_of(span: ReadableSpan) -> int | None:
        return span.parent.span_id if span.parent is not None else None

    call = one("execute_tool analyzer")
    analyzer = one("invoke_agent analyzer")
    assert call.context is not None and parent_of(analyzer) == call.context.span_id
    scorer_call = one("execute_tool scorer")
    scorer = one("invoke_agent scorer")
    assert scorer_call.context is not None and parent_of(scorer) == scorer_call.context.span_id
    root = one("invoke_agent orchestrator")
    assert root.context is not None and scorer.context is not None
    assert root.context.trace_id == scorer.context.trace_id


async def test_firewalled_fields_reach_the_callers_program_never_its_model() -> None:
    child = SubAgent(
        prompt="Look up {{who}}",
        signature="(who :string) -> {name :string, _email :string}",
        name="lookup",
    )
    root = SubAgent(
        prompt="Write to bob",
        signature="{sent_to :string}",
        tools=[child.as_tool()],
    )
    llm = ScriptedLLM(
        router(
            {
                "Look up": '(return {:name "Bob" :_email "bob@secret.example"})',
                "Write to bob": lambda r: (
                    '(def who (call "lookup" {:who "bob"}))\nwho'
                    if len(r.messages) < 3
                    else "(return {:sent_to (:_email who)})"
                ),
            }
        )
    )
    step = await root.run(llm=llm)
    assert step.ok and step.value == {"sent_to": "bob@secret.example"}  # the program had it
    root_requests = [r for r in llm.requests if first_user(r) == "Write to bob"]
    assert len(root_requests) == 2
    for request in root_requests:
        assert all("bob@secret.example" not in m.content for m in request.messages)
    assert "<Firewalled>" in root_requests[1].messages[-1].content


async def test_a_react_caller_gets_the_value_without_firewalled_fields() -> None:
    child = SubAgent(
        prompt="Look up {{who}}", signature="(who :string) -> {name :string, _email :string}"
    )
    llm = ScriptedLLM(
        router(
            {
                "Look up": '(return {:name "Bob" :_email "bob@secret.example"})',
                "Who is bob?": lambda r: (
                    ScriptedLLM.tool_call("lookup", who="bob") if len(r.messages) < 3 else "Bob"
                ),
            }
        )
    )
    async with Runtime(llm=llm) as rt:
        step = await rt.run(ReAct(), "Who is bob?", tools={"lookup": child.as_tool()})
    assert step.ok and step.value == "Bob"
    answer = [r for r in llm.requests if first_user(r) == "Who is bob?"][-1]
    assert '"name":"Bob"' in answer.messages[-1].content
    assert all("secret" not in m.content for m in answer.messages)


async def test_wrong_arguments_are_a_tool_error_the_model_fixes() -> None:
    child = SubAgent(prompt="Score {{n}}", signature="(n :int) -> {score :int}", name="scorer")
    root = SubAgent(prompt="Score five", signature="{score :int}", tools=[child.as_tool()])
    llm = ScriptedLLM(
        router(
            {
                "Score five": lambda r: (
                    '(call "scorer" {:n "five"})'
                    if len(r.messages) < 3
                    else '(return (call "scorer" {:n 5}))'
                ),
                "Score 5": "(return {:score 50})",
            }
        )
    )
    step = await root.run(llm=llm)
    assert step.ok and step.value == {"score": 50}
    assert step.trace is not None
    (bad,) = step.trace.turns[0].execution.tool_calls
    assert bad.error is not None and bad.error.category == "validation"
    assert "invalid arguments for tool 'scorer'" in bad.error.message
    assert bad.child is None  # no child run was started
    second = [r for r in llm.requests if first_user(r) == "Score five"][1]
    assert "invalid arguments for tool 'scorer'" in second.messages[-1].content


async def test_a_failing_child_is_a_tool_error_carrying_its_reason() -> None:
    child = SubAgent(
        prompt="Find {{email}}", signature="(email :string) -> {id :int}", name="finder"
    )
    root = SubAgent(prompt="Find zed", signature="{found :bool}", tools=[child.as_tool()])
    llm = ScriptedLLM(
        router(
            {
                "Find zed@": '(fail {:reason :not_found :message "no such user"})',
                "Find zed": lambda r: (
                    '(call "finder" {:email "zed@example.com"})'
                    if len(r.messages) < 3
                    else "(return {:found false})"
                ),
            }
        )
    )
    step = await root.run(llm=llm)
    assert step.ok and step.value == {"found": False}
    assert step.trace is not None
    (call,) = step.trace.turns[0].execution.tool_calls
    assert call.error is not None and call.error.category == "not_found"
    assert call.error.message == "agent 'finder' failed (not_found): no such user"
    assert isinstance(call.child, Step) and call.child.fail is not None
    assert call.child.fail.reason == "not_found"
    fed_back = [r for r in llm.requests if first_user(r) == "Find zed"][1].messages[-1].content
    assert "no such user" in fed_back


async def test_waiting_on_an_agent_does_not_count_against_the_callers_program_limit() -> None:
    """The child's model takes longer than the caller's whole program time limit: the
    caller's program waits for it (an agent's run bounds itself), and is not cut."""
    slow = ScriptedLLM(lambda r: "(return {:id 7})", latency=1.0)
    child = SubAgent(
        prompt="Find {{email}}", signature="(email :string) -> {id :int}", name="finder"
    )
    root = SubAgent(
        prompt="Find zed",
        signature="{found :bool}",
        tools=[child.as_tool(llm=slow)],
        program_limits={"timeout_ms": 500},  # its own work fits, even on a loaded machine
    )
    source = '(return {:found (= 7 (:id (call "finder" {:email "zed@example.com"})))})'
    step = await root.run(llm=ScriptedLLM(lambda r: source))
    assert step.ok, step.fail
    assert step.value == {"found": True} and step.turns == 1
    assert len(slow.requests) == 1


async def test_cancelling_the_caller_cancels_its_children() -> None:
    started = anyio.Event()

    def answer(request: LLMRequest) -> Any:
        if first_user(request).startswith("Wait"):
            started.set()
            return ScriptedLLM.timeout(hang=True)
        return '(call "waiter" {:x 1})'

    child = SubAgent(prompt="Wait {{x}}", signature="(x :int) -> :int", name="waiter")
    root = SubAgent(prompt="Go", tools=[child.as_tool()])
    async with Runtime(llm=ScriptedLLM(answer)) as rt:
        handle = rt.start(root)
        await started.wait()
        assert rt.statistics().runs_active == 2
        handle.cancel()
        step = await handle.wait()
        assert rt.statistics().runs_active == 0
    assert not step.ok and step.reason == "cancelled"


async def test_a_json_mode_caller_uses_agents_as_native_tools() -> None:
    child = SubAgent(prompt="Double {{n}}", signature="(n :int) -> {n :int, _why :string}")
    root = SubAgent(
        prompt="Double three",
        signature="{n :int}",
        tools={"double": child.as_tool()},
        output="json",
    )
    llm = ScriptedLLM(
        router(
            {
                "Double three": lambda r: (
                    ScriptedLLM.tool_call("double", n=3) if len(r.messages) < 3 else '{"n": 6}'
                ),
                "Double 3": '(return {:n 6 :_why "secret reason"})',
            }
        )
    )
    step = await root.run(llm=llm)
    assert step.ok and step.value == {"n": 6}
    last = [r for r in llm.requests if first_user(r) == "Double three"][-1]
    assert all("secret reason" not in m.content for m in last.messages)


async def test_print_trace_indents_nested_agents() -> None:
    llm = ScriptedLLM(router(SPEC_ANSWERS))
    step = await spec_tree().run(llm=llm)
    out = io.StringIO()
    print_trace(step, file=out, color=False)
    text = out.getvalue()
    assert "│     Agent analyzer (ok, 1 turns):" in text
    assert "│       │     Agent scorer (ok, 1 turns):" in text
    assert "│       │       │ Prompt: Score hi" in text


async def test_as_tool_options_and_direct_calls() -> None:
    agent = SubAgent(
        prompt="Score {{n}}",
        signature="(n :int) -> {score :int}",
        name="scorer",
        description="Scores.",
    )
    tool = agent.as_tool(
        name="rate", description="Rates a number.", llm=ScriptedLLM(["(return {:score 9})"])
    )
    assert isinstance(tool, Tool) and tool.calls_model
    assert (tool.name, tool.description) == ("rate", "Rates a number.")
    assert tool.input_schema["required"] == ["n"]
    assert agent.as_tool().description == "Scores."
    assert await tool.fn(n=3) == {"score": 9}  # outside any run: on its own Runtime
    with pytest.raises(UsageError, match="as_tool"):
        agent.as_tool(llm=42)
