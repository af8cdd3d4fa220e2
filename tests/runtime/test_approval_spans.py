"""What a trace backend sees of approvals (issue 25): the waiting call's span says why it
waits, the resumed call's span carries the decision, a paused run's span is not an error,
and the resumed run's span says it resumes and links to the span it continues."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import ptcflow
from ptcflow import Approve, Deny, ReAct, Runtime, Step, SubAgent, Supply
from ptcflow.runtime import Telemetry, _resume
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


@ptcflow.tool(requires_approval=lambda args: args["amount"] > 100)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order}"


@ptcflow.tool(deferred=True)
def ship(order: str) -> dict[str, str]:
    """Ship an order (done by the warehouse, not here)."""
    raise AssertionError("a deferred tool has no body here")


def two_refunds() -> ScriptedLLM:
    return ScriptedLLM(
        [
            [
                ScriptedLLM.tool_call("refund", order="A", amount=50),
                ScriptedLLM.tool_call("refund", order="B", amount=500),
            ],
            "done",
        ]
    )


class Traced:
    """A Runtime's telemetry into an in-memory exporter."""

    def __init__(self, *, capture_content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.telemetry = Telemetry(tracer_provider=provider, capture_content=capture_content)

    def spans(self) -> list[ReadableSpan]:
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def tool_span(spans: list[ReadableSpan], call_id: str) -> ReadableSpan:
    return next(s for s in spans if attrs(s).get("gen_ai.tool.call.id") == call_id)


def agent_span(spans: list[ReadableSpan]) -> ReadableSpan:
    return next(s for s in spans if s.name.startswith("invoke_agent"))


def event(span: ReadableSpan, name: str) -> dict[str, Any]:
    (found,) = [e for e in span.events if e.name == name]
    return dict(found.attributes or {})


async def pause(traced: Traced, llm: ScriptedLLM, tools: list[Any], prompt: str) -> Step:
    async with Runtime(llm=llm, tools=tools, telemetry=traced.telemetry) as rt:
        step = await rt.run(ReAct(), prompt)
    assert step.paused, step
    return step


async def test_the_waiting_call_and_the_paused_run_as_a_trace_backend_sees_them() -> None:
    traced = Traced()
    step = await pause(traced, two_refunds(), [refund], "refund A and B")
    spans = traced.spans()
    (pending,) = step.pending
    waiting = tool_span(spans, pending.call_id)
    assert attrs(waiting)["ptcflow.approval.status"] == "pending"
    requested = event(waiting, "ptcflow.approval.requested")
    assert requested["ptcflow.approval.reason"] == "requires approval"
    assert requested["ptcflow.approval.kind"] == "approval"
    assert requested["gen_ai.tool.call.id"] == pending.call_id
    assert "gen_ai.tool.call.arguments" not in requested  # tool data: content capture is off
    assert "ptcflow.approval.expires_at" not in requested
    ran = tool_span(spans, "call_1_0")  # the call under the threshold ran, as ever
    assert not ran.events and "ptcflow.approval.status" not in attrs(ran)
    run = agent_span(spans)
    assert run.status.status_code is StatusCode.UNSET  # paused is not failed
    assert attrs(run)["ptcflow.run.paused"] is True
    assert attrs(run)["ptcflow.run.pending_calls"] == 1
    assert "error.type" not in attrs(run) and "ptcflow.run.resumed" not in attrs(run)


async def test_with_content_capture_the_request_carries_the_arguments() -> None:
    traced = Traced(capture_content=True)
    step = await pause(traced, two_refunds(), [refund], "refund A and B")
    waiting = tool_span(traced.spans(), step.pending[0].call_id)
    requested = event(waiting, "ptcflow.approval.requested")
    assert requested["gen_ai.tool.call.arguments"] == '{"order":"B","amount":500}'


async def test_the_resumed_run_links_to_the_paused_one_and_its_call_has_the_decision() -> None:
    traced = Traced()
    llm = two_refunds()
    step = await pause(traced, llm, [refund], "refund A and B")
    paused_run = agent_span(traced.spans())
    call = step.pending[0].call_id
    async with Runtime(llm=llm, tools=[refund], telemetry=traced.telemetry) as rt:
        done = await rt.resume(step, {call: Approve()}, agent=ReAct())
    assert done.ok
    spans = traced.spans()
    run = agent_span(spans)
    assert attrs(run)["ptcflow.run.resumed"] is True
    assert "ptcflow.run.paused" not in attrs(run)
    assert attrs(run)["gen_ai.conversation.id"] == step.run_id  # the same run
    assert run.context is not None and paused_run.context is not None
    assert run.context.trace_id != paused_run.context.trace_id  # a trace of its own ...
    (link,) = run.links  # ... that points at the span it continues
    assert (link.context.trace_id, link.context.span_id) == (
        paused_run.context.trace_id,
        paused_run.context.span_id,
    )
    assert dict(link.attributes or {}) == {"ptcflow.link": "resumes"}
    resumed = tool_span(spans, call)
    assert attrs(resumed)["ptcflow.approval.decision"] == "approve"
    assert event(resumed, "ptcflow.approval.resolved") == {"ptcflow.approval.decision": "approve"}
    assert resumed.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("capture", [False, True])
async def test_a_denial_and_its_reason_only_with_content_capture(capture: bool) -> None:
    traced = Traced(capture_content=capture)
    llm = two_refunds()
    step = await pause(traced, llm, [refund], "refund A and B")
    traced.spans()
    call = step.pending[0].call_id
    async with Runtime(llm=llm, tools=[refund], telemetry=traced.telemetry) as rt:
        await rt.resume(step, {call: Deny("over the limit")}, agent=ReAct())
    denied = tool_span(traced.spans(), call)
    assert attrs(denied)["ptcflow.approval.decision"] == "deny"
    assert attrs(denied)["error.type"] == "approval_denied"
    resolved = event(denied, "ptcflow.approval.resolved")
    assert resolved["ptcflow.approval.decision"] == "deny"
    if capture:
        assert resolved["ptcflow.approval.reason"] == "over the limit"
    else:
        assert "ptcflow.approval.reason" not in resolved
        assert "over the limit" not in repr(denied.to_json())


async def test_a_deferred_call_supplied_and_an_expired_one(monkeypatch: Any) -> None:
    @ptcflow.tool(requires_approval=True, approval_timeout=60)
    def wipe(disk: str) -> str:
        """Wipe a disk."""
        raise AssertionError("never approved")

    traced = Traced()
    llm = ScriptedLLM(
        [[ScriptedLLM.tool_call("ship", order="A"), ScriptedLLM.tool_call("wipe", disk="d1")], "ok"]
    )
    step = await pause(traced, llm, [ship, wipe], "ship A, wipe d1")
    spans = traced.spans()
    by_tool = {p.tool: p for p in step.pending}
    shipped = event(tool_span(spans, by_tool["ship"].call_id), "ptcflow.approval.requested")
    assert (shipped["ptcflow.approval.kind"], shipped["ptcflow.approval.reason"]) == (
        "deferred",
        "deferred tool",
    )
    wiped = event(tool_span(spans, by_tool["wipe"].call_id), "ptcflow.approval.requested")
    assert wiped["ptcflow.approval.expires_at"] == by_tool["wipe"].expires_at
    assert agent_span(spans).attributes is not None
    assert attrs(agent_span(spans))["ptcflow.run.pending_calls"] == 2
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=2)
    monkeypatch.setattr(_resume, "utcnow", lambda: later)
    async with Runtime(llm=llm, tools=[ship, wipe], telemetry=traced.telemetry) as rt:
        done = await rt.resume(step, {by_tool["ship"].call_id: Supply({"t": "Z9"})}, agent=ReAct())
    assert done.ok
    spans = traced.spans()
    decided = {
        p.tool: attrs(tool_span(spans, p.call_id))["ptcflow.approval.decision"]
        for p in step.pending
    }
    assert decided == {"ship": "supply", "wipe": "expired"}


PROGRAM = """```clojure
(let [done (pmap (fn [[o a]] (call "refund" {:order o :amount a})) [["A" 50] ["B" 500]])]
  (return {:refunds done}))
```"""


async def test_a_program_s_waiting_call_and_its_decision_on_the_sub_call_spans() -> None:
    traced = Traced()
    agent = SubAgent(
        prompt="Refund the orders",
        signature="() -> {refunds [:string]}",
        tools=[refund],
        llm=ScriptedLLM([PROGRAM]),
    )
    async with Runtime(telemetry=traced.telemetry) as rt:
        step = await rt.run(agent)
    assert step.paused
    (pending,) = step.pending
    spans = traced.spans()
    waiting = tool_span(spans, pending.call_id)
    assert attrs(waiting)["ptcflow.approval.status"] == "pending"
    assert event(waiting, "ptcflow.approval.requested")["ptcflow.approval.kind"] == "approval"
    program = next(s for s in spans if s.name.startswith("execute_program"))
    assert attrs(program)["ptcflow.approval.status"] == "pending"
    assert attrs(agent_span(spans))["ptcflow.run.paused"] is True
    async with Runtime(telemetry=traced.telemetry) as rt:
        done = await rt.resume(step, {pending.call_id: Approve()}, agent=agent)
    assert done.ok, done
    spans = traced.spans()
    assert attrs(tool_span(spans, pending.call_id))["ptcflow.approval.decision"] == "approve"
    assert attrs(agent_span(spans))["ptcflow.run.resumed"] is True


def _nested_answers(request: Any) -> Any:
    task = next(m.content for m in request.messages if m.role == "user")
    if task.startswith("Refund"):
        return '(return {:done (call "pay" {:amount ctx/amount})})'
    if len(request.messages) < 3:
        return ScriptedLLM.tool_call("refunder", amount=500)
    return "answer: " + request.messages[-1].content


async def test_an_agent_used_as_a_tool_resumes_nested_under_its_call_s_span() -> None:
    @ptcflow.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount back."""
        return f"paid {amount}"

    refunder = SubAgent(
        prompt="Refund {{amount}}",
        signature="(amount :int) -> {done :string}",
        name="refunder",
        tools={"pay": pay},
    )
    tools = {"refunder": refunder.as_tool()}
    llm = ScriptedLLM(_nested_answers)
    traced = Traced()
    async with Runtime(llm=llm, telemetry=traced.telemetry) as rt:
        step = await rt.run(ReAct(), "please refund", tools=tools)
    assert step.paused
    spans = traced.spans()
    runs = {s.name: s for s in spans if s.name.startswith("invoke_agent")}
    assert {n: attrs(s)["ptcflow.run.paused"] for n, s in runs.items()} == {
        "invoke_agent react": True,
        "invoke_agent refunder": True,
    }
    paused_child = runs["invoke_agent refunder"]
    (pending,) = step.pending
    async with Runtime(llm=llm, telemetry=traced.telemetry) as rt:
        done = await rt.resume(step, {pending.call_id: Approve()}, agent=ReAct(), tools=tools)
    assert done.ok, done
    spans = traced.spans()
    child = next(s for s in spans if s.name == "invoke_agent refunder")
    call = tool_span(spans, "call_1_0")  # the parent's call, performed again
    assert attrs(child)["ptcflow.run.resumed"] is True
    assert child.parent is not None and call.context is not None
    assert child.parent.span_id == call.context.span_id  # nested as it was
    (link,) = child.links
    assert paused_child.context is not None
    assert link.context.span_id == paused_child.context.span_id
    decided = next(s for s in spans if attrs(s).get("gen_ai.tool.name") == "pay")
    assert attrs(decided)["ptcflow.approval.decision"] == "approve"
