"""The AG-UI adapter: a run's signals as AG-UI events (validated against the protocol's own
models), the endpoint (malformed bodies, slow clients, disconnects, nothing left behind).

Runs on asyncio and trio through an in-memory ASGI client; the HTTP end to end with the
real ``@ag-ui/client`` is in test_agui_client.py (asyncio: uvicorn serves on asyncio).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from ag_ui.core import Event
from hypothesis import given, strategies as st
from pydantic import TypeAdapter

from ptcflow.runtime import Runtime
from ptcflow.serve import AGUIStream, agui_endpoint
from ptcflow.signals import SignalBus
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .support import (
    DOUBLER_PROGRAM,
    PLANNER_PROGRAM,
    FailingRun,
    Response,
    call,
    streaming_planner,
)

pytestmark = pytest.mark.anyio

EVENT = TypeAdapter(Event)


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def broken(x: int) -> int:
    """Always fails."""
    raise ValueError(f"no {x}")


def body(text: str = "What is 2 + 3?", **extra: Any) -> bytes:
    return json.dumps(
        {
            "threadId": "thread_1",
            "runId": "agui_run_1",
            "messages": [{"id": "m1", "role": "user", "content": text}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
            **extra,
        }
    ).encode()


def types(response: Response) -> list[str]:
    return [e["type"] for e in response.events()]


def validated(response: Response) -> None:
    for raw in response.events():  # every event is one of the protocol's
        EVENT.validate_python(raw)


async def test_a_streamed_react_run_is_text_and_tool_events() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "The sum is 5"])
    async with Runtime(llm=llm, tools=[add], bus=SignalBus()) as rt:
        app = agui_endpoint(rt, ReAct(stream=True), state=False)
        response = await call(app, body())
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    validated(response)
    events = response.events()
    kinds = types(response)
    contents = kinds.count("TEXT_MESSAGE_CONTENT")  # chunks a client is behind on are merged
    assert 1 <= contents <= 4
    assert kinds == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * contents,
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[0]["threadId"] == "thread_1" and events[0]["runId"] == "agui_run_1"
    assert events[1]["toolCallName"] == "add"
    assert json.loads(events[2]["delta"]) == {"x": 2, "y": 3}
    assert events[4]["content"] == "5" and events[4]["toolCallId"] == events[1]["toolCallId"]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "The sum is 5"
    assert events[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "thread_1",
        "runId": "agui_run_1",
        "result": "The sum is 5",
    }


async def test_a_run_that_does_not_stream_sends_whole_messages() -> None:
    llm = ScriptedLLM(["Hello there"])
    async with Runtime(llm=llm, bus=SignalBus()) as rt:
        response = await call(agui_endpoint(rt, ReAct(), state=False), body("hi"))
    validated(response)
    assert types(response) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert response.events()[2]["delta"] == "Hello there"


async def test_a_failed_tool_is_a_result_and_a_failed_run_is_run_error() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("broken", x=1)])  # then runs out
    async with Runtime(llm=llm, tools=[broken], bus=SignalBus()) as rt:
        response = await call(agui_endpoint(rt, ReAct(), state=False), body())
    validated(response)
    events = response.events()
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert (
        json.loads(result["content"])["error"]["message"] == "tool 'broken' raised ValueError: no 1"
    )
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "provider_error" and "script ran out" in events[-1]["message"]


async def test_state_is_the_mission_tree_then_json_patches() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    async with Runtime(llm=llm, tools=[add], bus=SignalBus()) as rt:
        response = await call(agui_endpoint(rt, ReAct(), mission=True), body())
    validated(response)
    events = response.events()
    assert events[1]["type"] == "STATE_SNAPSHOT"
    state = events[1]["snapshot"]
    for event in events[2:]:
        if event["type"] == "STATE_DELTA":
            for op in event["delta"]:
                assert op["op"] == "add"
                _, top, key = op["path"].split("/")
                state[top][key.replace("~1", "/").replace("~0", "~")] = op["value"]
    kinds = sorted(node["k"] for node in state["mission"].values())
    assert kinds == ["llm", "llm", "run", "tool", "turn", "turn"]
    root = next(node for node in state["mission"].values() if node["k"] == "run")
    assert root["st"] == "ok"


async def test_child_runs_are_subagents_and_their_events_carry_their_run() -> None:
    from ptcflow import SubAgent

    helper = SubAgent(
        prompt="Add {{x}} and {{y}}", signature="(x :int, y :int) -> :int", name="adder",
        output="json", max_turns=1,
    )  # fmt: skip
    llm = ScriptedLLM([ScriptedLLM.tool_call("adder", x=2, y=3), "5", "It is 5"])
    async with Runtime(llm=llm, tools=[helper.as_tool()], bus=SignalBus()) as rt:
        response = await call(agui_endpoint(rt, ReAct(), state=False), body())
    validated(response)
    events = response.events()
    started = next(e for e in events if e["type"] == "SUBAGENT_STARTED")
    finished = next(e for e in events if e["type"] == "SUBAGENT_FINISHED")
    assert started["name"] == "adder" and finished["result"] == 5
    child = started["subagentRunId"]
    assert child.endswith("/" + started["parentToolCallId"])
    inner = [e for e in events if e.get("subagentRunId") == child]
    assert {"TEXT_MESSAGE_START", "TEXT_MESSAGE_END"} <= {e["type"] for e in inner}
    assert events[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        (b"not json", "Invalid JSON"),
        (json.dumps({"threadId": "t", "messages": []}).encode(), "runId"),
        (
            json.dumps(
                {"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "robot"}]}
            ).encode(),
            "messages.0",
        ),
    ],
)
async def test_a_malformed_body_is_422_naming_the_field(payload: bytes, named: str) -> None:
    async with Runtime(llm=ScriptedLLM(["x"]), bus=SignalBus()) as rt:
        app = agui_endpoint(rt, ReAct())
        response = await call(app, payload)
    assert response.status == 422
    answer = response.json()
    assert answer["error"].startswith("the body is not an AG-UI RunAgentInput")
    assert named in json.dumps(answer)
    assert app.statistics.rejected == 1 and app.statistics.started == 0


async def test_get_is_405() -> None:
    async with Runtime(llm=ScriptedLLM(["x"]), bus=SignalBus()) as rt:
        response = await call(agui_endpoint(rt, ReAct()), b"", method="GET")
    assert response.status == 405


@pytest.mark.parametrize("policy", ["cancel", "continue"])
async def test_a_client_that_goes_away_cancels_its_run_or_not(policy: str) -> None:
    bus = SignalBus()
    gone = anyio.Event()

    async def leave(response: Response) -> None:
        gone.set()  # the client leaves after its first event

    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"], latency=0.05)
    async with Runtime(llm=llm, tools=[add], bus=bus) as rt:
        app = agui_endpoint(rt, ReAct(), state=False, on_disconnect=policy)  # type: ignore[arg-type]
        handles = []
        start = app.start

        def spy(rt: Runtime, request: Any, run_id: str) -> Any:
            handles.append(start(rt, request, run_id))
            return handles[-1]

        app.start = spy
        response = await call(app, body(), on_body=leave, disconnect=gone)
        assert app.statistics.disconnected == 1 and app.statistics.open == 0
        assert not app.handles
        assert types(response)[0] == "RUN_STARTED"
        (handle,) = handles
        step = await handle.wait()
    assert step.ok is (policy == "continue")
    if policy == "cancel":
        assert step.reason == "cancelled"
    assert bus.statistics().subscribers == 0


async def test_a_slow_client_is_dropped_with_an_error_event_and_the_run_goes_on() -> None:
    bus = SignalBus()
    stuck = anyio.Event()

    async def never_read(response: Response) -> None:
        await stuck.wait()  # the client reads nothing after the first chunk

    words = " ".join(f"w{n}" for n in range(40))
    llm = ScriptedLLM([words])
    async with Runtime(llm=llm, bus=bus) as rt:
        app = agui_endpoint(rt, ReAct(stream=True), state=False, buffer=4, on_disconnect="continue")
        app.send_timeout = 0.2
        handles = []
        start = app.start

        def spy(rt: Runtime, request: Any, run_id: str) -> Any:
            handles.append(start(rt, request, run_id))
            return handles[-1]

        app.start = spy
        with anyio.fail_after(10):
            response = await call(app, body(), on_body=never_read)
        step = await handles[0].wait()
    assert step.ok and step.value == words  # the run was never held up by its client
    assert app.statistics.dropped == 1 and app.statistics.open == 0
    assert bus.statistics().subscribers == 0
    assert response.closed and response.events()[-1]["type"] == "RUN_ERROR"
    assert response.events()[-1]["code"] == "client_too_slow"


def test_the_stream_alone_folds_signals_without_a_server() -> None:
    from ptcflow.signals import Ok, RequestEndData, RequestStartedData, Signal

    stream = AGUIStream("r", thread_id="t", state=False)
    assert stream.feed(Signal.create("ai.usage", run_id="other")) == b""
    stream.feed(Signal.create("ai.request.started", RequestStartedData(input=1), run_id="r"))
    end = stream.feed(
        Signal.create("ai.request.completed", RequestEndData(result=Ok(payload=[1])), run_id="r")
    )
    assert end.startswith(b"data: ") and json.loads(end[6:])["result"] == [1]
    assert stream.done
    assert stream.feed(Signal.create("ai.usage", run_id="r")) == b""


async def test_feed_writes_what_the_protocols_encoder_writes() -> None:
    from ag_ui.encoder import EventEncoder

    from ptcflow.testing import collect_signals

    bus = SignalBus()
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), 'The "sum" is\n5 ✓'])
    with collect_signals(bus) as log:
        async with Runtime(llm=llm, tools=[add], bus=bus) as rt:
            step = await rt.run(ReAct(stream=True), "2+3?", run_id="r1")
    fed, built = AGUIStream("r1", thread_id="t"), AGUIStream("r1", thread_id="t")
    encoder = EventEncoder()
    for signal in log.signals:
        expected = "".join(encoder.encode(e) for e in built.events(signal)).encode()
        assert fed.feed(signal) == expected
    assert step.ok and fed.done
    # all at once: the same events, the message's chunks merged into one
    many = AGUIStream("r1", thread_id="t", state=False).feed_many(log.signals)
    events = [
        json.loads(line[6:]) for line in many.decode().split("\n") if line.startswith("data: ")
    ]
    contents = [e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert [e["delta"] for e in contents] == ['The "sum" is\n5 ✓']
    assert events[-1]["type"] == "RUN_FINISHED"


@given(text=st.text(), name=st.text())
def test_fast_encoding_matches_the_encoder_for_any_text(text: str, name: str) -> None:
    from ag_ui.encoder import EventEncoder

    from ptcflow.signals import LLMChunk, LLMDeltaData, Signal, ToolStartedData

    encoder = EventEncoder()
    for signal in (
        Signal.create("ai.llm.delta", LLMDeltaData(chunk=LLMChunk(text=text)), run_id="r", call_id=name),
        Signal.create("ai.tool.started", ToolStartedData(tool_name=name, arguments={"a": text}), run_id="r", call_id="c"),
    ):  # fmt: skip
        fed, built = (
            AGUIStream("r", thread_id="t", state=False),
            AGUIStream("r", thread_id="t", state=False),
        )
        events = built.events(signal)
        assert fed.feed(signal) == "".join(encoder.encode(e) for e in events).encode()


async def test_a_started_run_that_raises_before_its_run_starts_is_run_error() -> None:
    async with Runtime(llm=ScriptedLLM(["x"]), bus=SignalBus()) as rt:
        app = agui_endpoint(rt, start=lambda rt, run_input, run_id: FailingRun())
        with anyio.fail_after(10):  # its last signal never comes: the stream ends anyway
            response = await call(app, body())
    validated(response)
    assert types(response) == ["RUN_STARTED", "RUN_ERROR"]
    error = response.events()[1]
    assert error["code"] == "LookupError" and "thread_1 could not be read" in error["message"]
    assert not app.handles and app.statistics.open == 0


async def test_a_started_run_that_raises_after_its_run_ended_streams_the_run() -> None:
    async with Runtime(llm=ScriptedLLM(["Hello there"]), bus=SignalBus()) as rt:

        def start(rt: Runtime, run_input: Any, run_id: str) -> FailingRun:
            return FailingRun(rt.start(ReAct(), "hi", run_id=run_id))

        app = agui_endpoint(rt, start=start, state=False)
        response = await call(app, body())
    validated(response)
    assert types(response) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


async def test_a_streaming_subagent_is_its_program_text_tool_calls_and_prints() -> None:
    planner, llm = streaming_planner(add)
    async with Runtime(llm=llm, bus=SignalBus()) as rt:
        app = agui_endpoint(rt, planner, input=lambda _: {}, state=False)  # no context
        response = await call(app, body("go"))
    validated(response)
    events = response.events()
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["result"] == 42
    started = next(e for e in events if e["type"] == "SUBAGENT_STARTED")
    child = started["subagentRunId"]
    assert started["name"] == "doubler"

    def text_of(sub: str | None) -> str:
        return "".join(
            e["delta"]
            for e in events
            if e["type"] == "TEXT_MESSAGE_CONTENT" and e.get("subagentRunId") == sub
        )

    # each program streamed as a text message, whole before anything of it ran
    assert text_of(None) == PLANNER_PROGRAM and text_of(child) == DOUBLER_PROGRAM
    kinds = [e["type"] for e in events if e.get("subagentRunId") is None]
    first_tool = kinds.index("TOOL_CALL_START")
    assert kinds.index("TEXT_MESSAGE_END") < first_tool
    assert "TEXT_MESSAGE_CONTENT" not in kinds[first_tool:]
    # the program's tool calls, the agent it called among them
    calls = {e["toolCallName"]: e for e in events if e["type"] == "TOOL_CALL_START"}
    assert set(calls) == {"add", "doubler"} and "subagentRunId" not in calls["add"]
    assert child == f"{events[0]['metadata']['ptcflow']['run_id']}/{calls['doubler']['toolCallId']}"
    # what the programs printed, as they printed it
    prints = [e for e in events if e["type"] == "CUSTOM"]
    assert [(e["name"], e["value"]["text"], e.get("subagentRunId")) for e in prints] == [
        ("ptcflow.print", "asking the doubler\n", None),
        ("ptcflow.print", "doubling 21\n", child),
    ]
    assert prints[0]["value"]["programId"].endswith("/program/1")


def test_a_print_seen_already_is_not_sent_again() -> None:
    """A program run again (a retried attempt) prints again from index 0: sent once."""
    from ptcflow.signals import PROGRAM_PRINT, ProgramPrintData, Signal

    stream = AGUIStream("r1", thread_id="t1", state=False)

    def printed(index: int, text: str) -> list[str]:
        data = ProgramPrintData(text=text, index=index)
        signal = Signal.create(PROGRAM_PRINT, data, run_id="r1", call_id="r1/program/1")
        return [e.value["text"] for e in stream.events(signal)]  # type: ignore[attr-defined]

    assert printed(0, "a") == ["a"] and printed(1, "b") == ["b"]
    assert printed(0, "a") == [] and printed(1, "b") == [] and printed(2, "c") == ["c"]


async def test_what_waits_for_a_busy_connection_goes_out_in_one_write() -> None:
    bus = SignalBus()
    busy = anyio.Event()
    words = " ".join(f"w{n}" for n in range(20))
    async with Runtime(llm=ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), words]), tools=[add], bus=bus) as rt:  # fmt: skip
        app = agui_endpoint(rt, ReAct(stream=True), state=False)
        handles = []
        start = app.start

        def spy(rt: Runtime, request: Any, run_id: str) -> Any:
            handles.append(start(rt, request, run_id))
            return handles[-1]

        app.start = spy

        async def slow_first_write(response: Response) -> None:
            if len(response.chunks) == 1:  # the connection is busy until the run ends
                # (each signal is handed to the endpoint as the run publishes it: once the
                # run has ended, all it published waits for the connection)
                await handles[0].wait()
                busy.set()

        with anyio.fail_after(10):
            response = await call(app, body(), on_body=slow_first_write)
    assert busy.is_set()
    # the first write, then everything the run made meanwhile in one, then the (empty) end
    assert len(response.chunks) == 2
    assert types(response)[-1] == "RUN_FINISHED"
    assert "".join(e.get("delta", "") for e in response.events() if e["type"] == "TEXT_MESSAGE_CONTENT") == words  # fmt: skip
