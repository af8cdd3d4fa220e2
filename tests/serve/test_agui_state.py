"""AG-UI state: the SubAgents' memory by default, the mission tree only when asked
(``mission=True``), which then writes exactly what the stream wrote when the tree was the
default state (fixtures recorded at commit 4eda420 by fixtures/record_agui_mission.py:
each run's signals and its stream, fed one signal at a time, at once, in two batches)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import Event
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.serve import AGUIStream, agui_endpoint
from ptcflow.signals import (
    Ok,
    ProgramOutput,
    ProgramResultData,
    RequestStartedData,
    Signal,
    SignalBus,
    decode_signal,
)
from ptcflow.strategies import ReAct
from ptcflow.trace import Mission

from .support import call, streaming_planner

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = ("react", "planner", "paused", "resumed")
EVENT = TypeAdapter(Event)


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def recorded(name: str) -> tuple[list[Signal], dict[str, str]]:
    fixture = json.loads((FIXTURES / f"agui_mission_{name}.json").read_text())
    return [decode_signal(line) for line in fixture["signals"]], fixture


def events_of(sse: bytes) -> list[dict[str, Any]]:
    out = [json.loads(line[6:]) for line in sse.decode().split("\n") if line.startswith("data: ")]
    for event in out:
        EVENT.validate_python(event)
    return out


def applied(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The state a client holds at the end: the snapshot, each JSON patch applied."""
    state: dict[str, Any] = {}
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            state = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            for op in event["delta"]:
                assert op["op"] == "add"
                _, top, key = op["path"].split("/")
                state[top][key.replace("~1", "/").replace("~0", "~")] = op["value"]
    return state


@pytest.mark.parametrize("name", RUNS)
def test_the_mission_tree_writes_what_the_default_state_wrote(name: str) -> None:
    signals, expected = recorded(name)
    root = signals[0].run_id

    def stream() -> AGUIStream:
        return AGUIStream(root, thread_id="t", mission=True)

    fed = stream()
    assert b"".join(fed.feed(s) for s in signals).decode() == expected["feed"]
    assert stream().feed_many(signals).decode() == expected["many"]
    half = len(signals) // 2
    halves = stream()
    two = halves.feed_many(signals[:half]) + halves.feed_many(signals[half:])
    assert two.decode() == expected["halves"]
    assert isinstance(fed.mission, Mission) and fed.done


@pytest.mark.parametrize("name", RUNS)
def test_the_default_state_is_the_memory_and_folds_no_mission(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_tree(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a Mission was built or folded")

    monkeypatch.setattr(Mission, "__init__", no_tree)
    monkeypatch.setattr(Mission, "add", no_tree)
    signals, with_tree = recorded(name)
    root = signals[0].run_id
    stream, built = AGUIStream(root, thread_id="t"), AGUIStream(root, thread_id="t")
    assert stream.mission is None
    sse = b"".join(stream.feed(s) for s in signals)
    encoder = EventEncoder()  # feed writes what the protocol's encoder writes
    assert sse == "".join(encoder.encode(e) for s in signals for e in built.events(s)).encode()
    events = events_of(sse)
    snapshots = [e for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert [e["snapshot"] for e in snapshots] == [{"memory": {}}]
    assert events[1] == snapshots[0]  # right after RUN_STARTED
    paths = [op["path"] for e in events if e["type"] == "STATE_DELTA" for op in e["delta"]]
    assert all(path.startswith("/memory/") for path in paths)
    assert b'"mission"' not in sse
    # the same events as with the tree, less its state
    told = [e for e in events_of(with_tree["feed"].encode()) if not e["type"].startswith("STATE_")]
    assert [e for e in events if not e["type"].startswith("STATE_")] == told
    # at once and in two batches: the same state, the same events less merged chunks
    many = events_of(AGUIStream(root, thread_id="t").feed_many(signals))
    half = len(signals) // 2
    halves = AGUIStream(root, thread_id="t")
    two = events_of(halves.feed_many(signals[:half]) + halves.feed_many(signals[half:]))
    assert applied(many) == applied(two) == applied(events)
    merged = [
        e for e in events_of(with_tree["many"].encode()) if not e["type"].startswith("STATE_")
    ]
    assert [e for e in many if not e["type"].startswith("STATE_")] == merged


def test_the_memory_state_follows_each_programs_memory() -> None:
    def program(run: str, seq: int, memory: dict[str, str]) -> Signal:
        output = ProgramOutput(memory=memory)
        data = ProgramResultData(result=Ok(payload=output))
        return Signal.create("ai.program.result", data, run_id=run, seq=seq, call_id=f"p{seq}")

    started = Signal.create("ai.request.started", RequestStartedData(input="go"), run_id="r", seq=1)
    stream = AGUIStream("r", thread_id="t")
    events = [
        events_of(stream.feed(signal))
        for signal in (
            started,
            program("r", 2, {"n": "21"}),
            program("r", 3, {"n": "21"}),  # unchanged: nothing sent
            program("r/c1", 4, {"a/b~": "[1 2]"}),  # a child run's, its key a JSON Pointer
            program("r", 5, {"n": "22", "m": '"x"'}),
        )
    ]
    assert [[e["type"] for e in sent] for sent in events] == [
        ["RUN_STARTED", "STATE_SNAPSHOT"], ["STATE_DELTA"], [], ["STATE_DELTA"], ["STATE_DELTA"],
    ]  # fmt: skip
    assert events[3][0]["delta"] == [
        {"op": "add", "path": "/memory/r~1c1", "value": {"a/b~": "[1 2]"}}
    ]
    state = applied([e for sent in events for e in sent])
    assert state == {"memory": {"r": {"n": "22", "m": '"x"'}, "r/c1": {"a/b~": "[1 2]"}}}
    # without state, none of it
    quiet = AGUIStream("r", thread_id="t", state=False)
    assert [e["type"] for e in events_of(quiet.feed(started) + quiet.feed(program("r", 2, {"n": "1"})))] == [
        "RUN_STARTED"
    ]  # fmt: skip


def test_the_mission_tree_needs_the_state() -> None:
    with pytest.raises(UsageError, match=r"state=False, mission=True.*give state=True"):
        AGUIStream("r", thread_id="t", state=False, mission=True)
    with pytest.raises(UsageError, match=r"state=False, mission=True.*leave mission=False"):
        agui_endpoint(lambda: None, ReAct(), state=False, mission=True)  # type: ignore[arg-type,return-value]


def _input() -> bytes:
    return json.dumps(
        {"threadId": "t1", "runId": "a1", "messages": [{"id": "m", "role": "user", "content": "go"}],
         "state": {}, "tools": [], "context": [], "forwardedProps": {}}
    ).encode()  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("mission", [False, True])
async def test_the_endpoint_sends_the_mission_tree_only_when_asked(mission: bool) -> None:
    planner, llm = streaming_planner(add)
    async with Runtime(llm=llm, bus=SignalBus()) as rt:
        app = agui_endpoint(rt, planner, input=lambda _: {}, mission=mission)
        response = await call(app, _input())
    assert response.status == 200
    events = response.events()
    for event in events:
        EVENT.validate_python(event)
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    state = applied(events)
    memory = state.pop("memory")
    # the planner's and the doubler's (empty: a program's return ends its run unwritten)
    assert len(memory) == 2 and list(memory.values()) == [{}, {}]
    if mission:
        kinds = {node["k"] for node in state.pop("mission").values()}
        assert {"run", "llm", "tool"} <= kinds
    assert state == {}


@pytest.mark.parametrize("cut", range(13))
def test_a_batch_merges_each_messages_chunks_and_drops_what_follows_the_end(cut: int) -> None:
    from ptcflow.signals import LLMChunk, LLMDeltaData, RequestEndData, Usage, UsageData

    def chunk(message: str | None, text: str) -> Signal:
        data = LLMDeltaData(chunk=LLMChunk(text=text))
        return Signal.create("ai.llm.delta", data, run_id="r", call_id=message)

    started = Signal.create("ai.request.started", RequestStartedData(input="go"), run_id="r")
    ended = Signal.create("ai.request.completed", RequestEndData(result=Ok(payload="ab")), run_id="r")  # fmt: skip
    usage = Signal.create("ai.usage", UsageData(usage=Usage()), run_id="r")
    signals = [
        started, chunk("m1", ""), chunk("m1", "a"), chunk("m1", ""), chunk("m1", "b"),
        chunk("m2", "c"), chunk(None, "d"), chunk(None, "e"), chunk("m1", "f"), usage,
        chunk("m1", "g"), ended, chunk("m1", "late"),
    ]  # fmt: skip
    fed = AGUIStream("r", thread_id="t")
    one_by_one = events_of(b"".join(fed.feed(s) for s in signals))
    stream = AGUIStream("r", thread_id="t")
    batched = events_of(stream.feed_many(signals[:cut]) + stream.feed_many(signals[cut:]))

    def merged(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for e in events:
            if e["type"] == "TEXT_MESSAGE_CONTENT":
                if out and out[-1][0] == e["messageId"]:
                    out[-1] = (e["messageId"], out[-1][1] + e["delta"])
                else:
                    out.append((e["messageId"], e["delta"]))
        return out

    assert merged(batched) == merged(one_by_one) == [
        ("m1", "ab"), ("m2", "c"), ("", "de"), ("m1", "fg"),
    ]  # fmt: skip
    others = [e for e in one_by_one if e["type"] != "TEXT_MESSAGE_CONTENT"]
    assert [e for e in batched if e["type"] != "TEXT_MESSAGE_CONTENT"] == others
    assert others[-1]["type"] == "RUN_FINISHED" and stream.done


def test_a_none_value_and_an_unnamed_agent_leave_their_fields_out() -> None:
    from ptcflow.signals import LLMChunk, LLMDeltaData, RequestEndData

    signals = [
        Signal.create("ai.request.started", RequestStartedData(input="go"), run_id="r"),
        Signal.create(
            "ai.llm.delta", LLMDeltaData(chunk=LLMChunk(text="hi")), run_id="r", call_id="m"
        ),
        Signal.create("ai.request.completed", RequestEndData(result=Ok(payload=None)), run_id="r"),
    ]
    fed, built = AGUIStream("r", thread_id="t"), AGUIStream("r", thread_id="t")
    sse = b"".join(fed.feed(s) for s in signals)
    encoder = EventEncoder()
    assert sse == "".join(encoder.encode(e) for s in signals for e in built.events(s)).encode()
    events = events_of(sse)
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    assert "name" not in start and start["role"] == "assistant"
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    assert events_of(AGUIStream("r", thread_id="t").feed_many(signals))[-1] == events[-1]
