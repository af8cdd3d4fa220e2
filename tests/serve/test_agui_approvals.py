"""Approvals over AG-UI: a run that pauses ends with ``RUN_FINISHED`` whose outcome is
``interrupt``; the next input on the thread with ``resume`` entries continues it; bad
answers are refused (422 / 409) and leave the run waiting. Both anyio backends, through
the in-memory ASGI client (the real ``@ag-ui/client`` is in test_agui_client.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

import ptcflow
from ptcflow import SubAgent
from ptcflow.runtime import Runtime
from ptcflow.serve import MemoryPausedRuns, TaskRun, agui_endpoint
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .support import Response, call

pytestmark = pytest.mark.anyio

EVENT = TypeAdapter(Event)


def make_refund(made: list[str]) -> Any:
    @ptcflow.tool(requires_approval=lambda a: a["amount"] > 100)
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        made.append(order)
        return f"refunded {amount} on {order}"

    return refund


def model() -> ScriptedLLM:
    def answer(request: Any) -> Any:
        done = sum(1 for m in request.messages if m.role == "assistant")
        if done == 0:
            return [
                ScriptedLLM.tool_call("refund", order="A", amount=50),
                ScriptedLLM.tool_call("refund", order="B", amount=500),
            ]
        last = request.messages[-1].content or ""
        return "B was denied: " + last if "denied" in last else "Refunded A and B."

    return ScriptedLLM(answer)


def body(*, thread: str = "thread_1", question: str | None = "Refund A and B", **extra: Any) -> bytes:  # fmt: skip
    messages = [{"id": "m1", "role": "user", "content": question}] if question else []
    return json.dumps(
        {"threadId": thread, "runId": "r", "messages": messages, "state": {}, "tools": [],
         "context": [], "forwardedProps": {}, **extra}
    ).encode()  # fmt: skip


def resume(*entries: dict[str, Any], thread: str = "thread_1") -> bytes:
    return body(thread=thread, question=None, resume=list(entries))


def events(response: Response) -> list[dict[str, Any]]:
    out = response.events()
    for e in out:  # each one valid by the protocol's own models
        EVENT.validate_python(e)
    return out


async def paused(app: Any) -> dict[str, Any]:
    response = await call(app, body())
    assert response.status == 200
    out = events(response)
    assert out[0]["type"] == "RUN_STARTED" and out[-1]["type"] == "RUN_FINISHED"
    return out[-1]


async def test_a_pause_is_an_interrupt_and_an_approval_resumes_it() -> None:
    made: list[str] = []
    async with Runtime(llm=model(), tools=[make_refund(made)], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, ReAct(), state=False)
        finished = await paused(app)
        (interrupt,) = finished["outcome"]["interrupts"]
        assert finished["outcome"]["type"] == "interrupt" and "result" not in finished
        assert interrupt["reason"] == "tool_approval"
        assert interrupt["toolCallId"] == interrupt["id"]
        call_meta = interrupt["metadata"]["ptcflow"]
        assert call_meta["tool"] == "refund" and call_meta["arguments"] == {"order": "B", "amount": 500}  # fmt: skip
        assert made == ["A"]
        entry = {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"approved": True},
        }
        response = await call(app, resume(entry))
        out = events(response)
        kinds = [e["type"] for e in out]
        assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
        assert out[-1]["result"] == "Refunded A and B."
        # the call that waited gets its result, without being started again
        results = [e for e in out if e["type"] == "TOOL_CALL_RESULT"]
        assert [e["toolCallId"] for e in results] == [interrupt["id"]]
        assert "TOOL_CALL_START" not in kinds
        assert made == ["A", "B"]
        # resumed once: the pause is gone
        again = await call(app, resume(entry))
        assert again.status == 409 and "no paused run" in again.json()["error"]
        assert made == ["A", "B"]


@pytest.mark.parametrize(
    "entry",
    [
        {"status": "resolved", "payload": {"approved": False, "reason": "over the limit"}},
        {"status": "cancelled"},
    ],
)
async def test_a_denial_reaches_the_model(entry: dict[str, Any]) -> None:
    made: list[str] = []
    async with Runtime(llm=model(), tools=[make_refund(made)], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, ReAct(), state=False)
        (interrupt,) = (await paused(app))["outcome"]["interrupts"]
        out = events(await call(app, resume({"interruptId": interrupt["id"], **entry})))
        assert out[-1]["type"] == "RUN_FINISHED"
        assert out[-1]["result"].startswith("B was denied")
        reason = entry.get("payload", {}).get("reason", "cancelled")
        assert reason in out[-1]["result"]
        assert made == ["A"]


RESOLVED = {"status": "resolved"}
BAD = [
    ({"interruptId": "nope", **RESOLVED, "payload": {"approved": True}}, "no call 'nope' waits"),
    ({"interruptId": "ID", **RESOLVED, "payload": True}, "payload must be an object"),
    ({"interruptId": "ID", **RESOLVED}, "payload must be an object"),
    ({"interruptId": "ID", **RESOLVED, "payload": {"approved": "yes"}}, "must be true or false"),
    ({"interruptId": "ID", **RESOLVED, "payload": {"approved": True, "x": 1}}, "unknown payload"),
    ({"interruptId": "ID", **RESOLVED, "payload": {"approved": False, "reason": 7}}, "a string"),
    ({"interruptId": "ID", **RESOLVED, "payload": {"reason": "x" * 5000}}, "at most 2000"),
    ({"interruptId": "ID", **RESOLVED, "payload": {"approved": True, "value": 1}}, "not both"),
    ({"interruptId": "ID", "status": "maybe"}, "resume.0.status"),
]


@pytest.mark.parametrize(("entry", "said"), BAD)
async def test_a_bad_answer_is_refused_and_the_run_still_waits(entry: dict[str, Any], said: str) -> None:  # fmt: skip
    made: list[str] = []
    async with Runtime(llm=model(), tools=[make_refund(made)], bus=SignalBus()) as rt:
        store = MemoryPausedRuns()
        app = agui_endpoint(rt, ReAct(), state=False, paused=store)
        (interrupt,) = (await paused(app))["outcome"]["interrupts"]
        if entry["interruptId"] == "ID":
            entry = {**entry, "interruptId": interrupt["id"]}
        response = await call(app, resume(entry))
        assert response.status == 422, response.body
        assert said in response.json()["error"]
        assert response.json()["details"]
        assert len(store) == 1 and made == ["A"]  # nothing ran; it still waits
        ok = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        out = events(await call(app, resume(ok)))
        assert out[-1]["result"] == "Refunded A and B." and made == ["A", "B"]


async def test_twice_the_same_answer_and_resumes_without_a_pause_are_refused() -> None:
    made: list[str] = []
    async with Runtime(llm=model(), tools=[make_refund(made)], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, ReAct(), state=False)
        none = await call(app, resume({"interruptId": "x", "status": "cancelled"}, thread="other"))
        assert none.status == 409
        (interrupt,) = (await paused(app))["outcome"]["interrupts"]
        ok = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        twice = await call(app, resume(ok, ok))
        assert twice.status == 422 and "answered twice" in twice.json()["error"]
        # a new question on the thread abandons the pause
        out = events(await call(app, body(question="Refund A and B again")))
        assert out[-1]["outcome"]["type"] == "interrupt"
        assert made == ["A", "A"]
        assert app.statistics.rejected == 2


async def test_an_endpoint_with_a_start_function_and_no_resume_keeps_no_pause() -> None:
    made: list[str] = []
    async with Runtime(llm=model(), tools=[make_refund(made)], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, start=lambda rt, i, run_id: rt.start(ReAct(), "go", run_id=run_id))
        finished = await paused(app)
        (interrupt,) = finished["outcome"]["interrupts"]
        ok = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        refused = await call(app, resume(ok))
        assert refused.status == 422 and "does not resume" in refused.json()["error"]


async def test_a_resume_the_runtime_refuses_leaves_the_run_waiting() -> None:
    made: list[str] = []
    agents = [ReAct(name="other"), ReAct()]  # the first resume names another agent

    def start(rt: Runtime, run_input: Any, run_id: str) -> Any:
        return rt.start(ReAct(), "go", run_id=run_id)

    def again(rt: Runtime, run_input: Any, step: Any, decisions: Any, run_id: str) -> Any:
        agent = agents.pop(0)
        return TaskRun(lambda: rt.resume(step, decisions, agent=agent))

    async with Runtime(llm=model(), tools=[make_refund(made)], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, start=start, resume=again, state=False)
        (interrupt,) = (await paused(app))["outcome"]["interrupts"]
        ok = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        refused = events(await call(app, resume(ok)))
        assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"]
        assert refused[-1]["code"] == "PauseMismatchError" and made == ["A"]
        out = events(await call(app, resume(ok)))
        assert out[-1]["result"] == "Refunded A and B." and made == ["A", "B"]


async def test_a_child_agents_call_is_an_interrupt_of_the_top_run() -> None:
    made: list[str] = []

    @ptcflow.tool(requires_approval=True)
    def refund(order: str) -> str:
        """Refund an order."""
        made.append(order)
        return "refunded " + order

    def answer(request: Any) -> Any:
        task = next((m.content for m in request.messages if m.role == "user"), "")
        if task.startswith("Handle"):  # the child writes a program calling the tool
            return '(return (call "refund" {:order "A"}))'
        if not any(m.role == "assistant" for m in request.messages):
            return ScriptedLLM.tool_call("clerk", order="A")
        return "top: " + (request.messages[-1].content or "")

    clerk = SubAgent(
        prompt="Handle {{order}}", signature="(order :string) -> :string", name="clerk",
        tools=[refund], max_turns=2,
    )  # fmt: skip
    async with Runtime(llm=ScriptedLLM(answer), tools=[clerk.as_tool()], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, ReAct(), state=False)
        response = await call(app, body(question="Refund A"))
        out = events(response)
        kinds = [e["type"] for e in out]
        (suspended,) = [e for e in out if e["type"] == "SUBAGENT_FINISHED"]
        assert suspended["outcome"] == {"type": "suspended"}
        (interrupt,) = out[-1]["outcome"]["interrupts"]
        assert interrupt["subagentRunId"] == suspended["subagentRunId"]
        # toolCallId names the child's tool call as the stream started it
        starts = [e["toolCallId"] for e in out if e["type"] == "TOOL_CALL_START"]
        assert interrupt["toolCallId"] in starts and interrupt["toolCallId"] != interrupt["id"]
        assert interrupt["metadata"]["ptcflow"]["agent"] == ["react", "clerk"]
        assert kinds.count("TOOL_CALL_RESULT") == 0 and made == []
        ok = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        resumed = events(await call(app, resume(ok)))
        results = [e["toolCallId"] for e in resumed if e["type"] == "TOOL_CALL_RESULT"]
        assert results[0] == interrupt["toolCallId"] and len(results) == 2
        assert "TOOL_CALL_START" not in [e["type"] for e in resumed]
        assert resumed[-1]["result"].startswith("top: ") and made == ["A"]
