"""SubAgent streaming: the program text as the model writes it, the program's tool calls,
prints and value as they happen, the run's value last; nested agents' events carry their
path; a stream that breaks off never runs its half-written program."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from ptcflow import SubAgent
from ptcflow.core import RunInfo
from ptcflow.directives import LLMStream
from ptcflow.errors import UsageError
from ptcflow.lisp import Limits, run as run_lisp
from ptcflow.runtime import LLMRequest, Runtime, StreamEvent
from ptcflow.signals import (
    LLM_DELTA,
    PROGRAM_PRINT,
    PROGRAM_RESULT,
    TOOL_STARTED,
    EmbedResponse,
    LLMChunk,
    LLMResponse,
    ProgramPrintData,
    SignalBus,
)
from ptcflow.strategies import PTC
from ptcflow.testing import ScriptedLLM, Turn, collect_signals

pytestmark = pytest.mark.anyio

PROGRAM = (
    "```clojure\n"
    '(println "adding")\n'
    '(def total (call "add" {:a 1 :b 2}))\n'
    '(println "total" total)\n'
    "(return total)\n"
    "```"
)


class Calls:
    """A tool that counts its calls."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        self.count += 1
        return a + b


def adder(calls: Calls, **options: Any) -> SubAgent:
    return SubAgent(
        prompt="Add", signature="() -> :int", tools={"add": calls.add}, name="adder", **options
    )


async def events_of(rt: Runtime, agent: Any, **options: Any) -> tuple[list[StreamEvent], Any]:
    async with rt.stream(agent, **options) as events:
        got = [event async for event in events]
    return got, events.step


async def test_the_program_streams_as_written_then_runs_whole() -> None:
    calls = Calls()
    async with Runtime(llm=ScriptedLLM([PROGRAM]), bus=SignalBus()) as rt:
        got, step = await events_of(rt, adder(calls, stream=True))
    assert step.ok and step.value == 3 and calls.count == 1
    kinds = [e.kind for e in got]
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended"
    chunks = [e.text for e in got if e.kind == "text"]
    (message,) = [e for e in got if e.kind == "message"]
    assert len(chunks) > 5  # chunk by chunk, not at once
    assert "".join(chunks) == message.text == PROGRAM  # the concatenation is the program
    assert step.trace is not None
    source = step.trace.turns[0].program.source
    assert source is not None and source in PROGRAM  # the program run: the whole text's
    # nothing of the program ran before its text was whole
    assert kinds.index("message") > max(i for i, k in enumerate(kinds) if k == "text")
    after = kinds[kinds.index("message") + 1 :]
    assert after == [
        "printed",
        "tool_started",
        "tool_ended",
        "printed",
        "program_ended",
        "run_ended",
    ]
    by_kind = {e.kind: e for e in got}
    assert [e.text for e in got if e.kind == "printed"] == ["adding\n", "total 3\n"]
    assert by_kind["tool_started"].name == "add"
    assert by_kind["tool_started"].arguments == {"a": 1, "b": 2}
    assert by_kind["tool_ended"].value == 3 and by_kind["tool_ended"].error is None
    assert by_kind["program_ended"].value == 3
    assert by_kind["run_ended"].value == 3 and by_kind["run_ended"].error is None
    assert {e.path for e in got} == {("adder",)}
    assert {e.run_id for e in got} == {step.run_id}


async def test_the_signals_on_the_bus() -> None:
    """The events are the bus's signals: ``ai.llm.delta`` per chunk, ``ai.program.print``
    per print of the program directive (numbered), then its ``ai.program.result``."""
    bus = SignalBus()
    async with Runtime(llm=ScriptedLLM([PROGRAM]), bus=bus) as rt:
        with collect_signals(bus, "**") as log:
            step = await rt.run(adder(Calls()), stream=True)
    assert step.ok
    signals = log.signals
    deltas = [s.data.chunk.text for s in signals if s.type == LLM_DELTA]
    assert "".join(deltas) == PROGRAM
    prints = [s for s in signals if s.type == PROGRAM_PRINT]
    assert [s.data for s in prints] == [
        ProgramPrintData(text="adding\n", index=0),
        ProgramPrintData(text="total 3\n", index=1),
    ]
    (result,) = [s for s in signals if s.type == PROGRAM_RESULT]
    assert {s.call_id for s in prints} == {result.call_id} == {f"{step.run_id}/program/1"}
    assert signals.index(prints[-1]) < signals.index(result)
    assert result.data.result.payload.prints == ("adding\n", "total 3\n")


async def test_a_run_that_does_not_stream_publishes_no_deltas_nor_prints() -> None:
    bus = SignalBus()
    async with Runtime(llm=ScriptedLLM([PROGRAM]), bus=bus) as rt:
        with collect_signals(bus, "**") as log:
            got, step = await events_of(rt, adder(Calls()))
    assert step.ok and step.value == 3
    types = set(log.types())
    assert LLM_DELTA not in types and PROGRAM_PRINT not in types
    kinds = [e.kind for e in got]
    assert "text" not in kinds and "printed" not in kinds
    (message,) = [e for e in got if e.kind == "message"]
    assert message.text == PROGRAM  # the whole text, once the model answered


class CutStream:
    """A provider whose stream breaks off after ``keep`` chunks of ``text`` (the
    connection dropped)."""

    name = "cut"

    def __init__(self, text: str, keep: int) -> None:
        self.pieces = ScriptedLLM([Turn(text=text)])
        self.keep = keep
        self.requests = 0

    async def generate(self, request: LLMRequest) -> LLMResponse:
        raise AssertionError("a streaming run asks for a stream")

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        self.requests += 1
        chunks: Any = self.pieces.stream(request)
        try:
            for _ in range(self.keep):
                yield await anext(chunks)
        finally:
            await chunks.aclose()
        raise ConnectionError("the connection was reset mid-stream")

    async def embed(self, request: Any) -> EmbedResponse:
        raise AssertionError("no embeddings here")


async def test_a_stream_cut_mid_program_never_runs_the_partial_program() -> None:
    calls = Calls()
    text = '```clojure\n(call "add" {:a 1 :b 2})\n(call "add" {:a 3 :b 4})\n(return 0)\n```'
    # cut after the first call form is whole: that part would run, if anything did
    model = CutStream(text, keep=9)
    bus = SignalBus()
    async with Runtime(llm=model, bus=bus) as rt:
        with collect_signals(bus, "**") as log:
            got, step = await events_of(rt, adder(calls, max_turns=3), stream=True)
    streamed = "".join(e.text for e in got if e.kind == "text")
    assert '(call "add" {:a 1 :b 2})' in streamed and streamed != text
    assert not step.ok and step.error is not None and step.error.type == "transient"
    assert calls.count == 0  # no tool ran
    types = log.types()
    assert TOOL_STARTED not in types and PROGRAM_RESULT not in types  # no program ran
    assert model.requests == 1  # deltas were seen: not retried
    (message,) = [e for e in got if e.kind == "message"]
    assert message.error is not None and message.text == streamed
    assert got[-1].kind == "run_ended" and got[-1].error is not None


async def test_nested_agents_stream_with_their_path() -> None:
    child = SubAgent(
        prompt="Double {{n}}",
        signature="(n :int) -> :int",
        name="doubler",
        description="Doubles n.",
    )
    parent = SubAgent(
        prompt="Go", signature="() -> :int", tools=[child.as_tool()], name="planner", stream=True
    )
    child_program = '```clojure\n(println "doubling" ctx/n)\n(return (* 2 ctx/n))\n```'

    def script(request: LLMRequest) -> str:
        if "Double" in str(request.messages[-1].content):
            return child_program
        return '```clojure\n(return (call "doubler" {:n 21}))\n```'

    async with Runtime(llm=ScriptedLLM(script), bus=SignalBus()) as rt:
        got, step = await events_of(rt, parent)
    assert step.ok and step.value == 42
    inner = [e for e in got if e.path == ("planner", "doubler")]
    assert inner and all(e.run_id.startswith(step.run_id + "/") for e in inner)
    assert inner[0].kind == "run_started" and inner[0].name == "doubler"
    # the child inherits streaming: its program text chunk by chunk, its prints
    assert "".join(e.text for e in inner if e.kind == "text") == child_program
    assert [e.text for e in inner if e.kind == "printed"] == ["doubling 21\n"]
    assert [e.value for e in inner if e.kind == "run_ended"] == [42]
    outer = [e for e in got if e.path == ("planner",)]
    assert {e.run_id for e in outer} == {step.run_id}
    (call,) = [e for e in outer if e.kind == "tool_started"]
    assert call.name == "doubler" and inner[0].run_id == f"{step.run_id}/{call.call_id}"
    assert got[-1].kind == "run_ended" and got[-1].path == ("planner",)


async def test_run_stream_opens_a_runtime_of_its_own() -> None:
    agent = SubAgent(prompt="Inc {{x}}", signature="(x :int) -> :int", name="inc")
    program = "```clojure\n(println ctx/x)\n(return (+ ctx/x 1))\n```"
    async with agent.run_stream(llm=ScriptedLLM([program]), context={"x": 1}) as events:
        got = [event async for event in events]
    assert events.step is not None and events.step.value == 2
    assert "".join(e.text for e in got if e.kind == "text") == program
    assert [e.text for e in got if e.kind == "printed"] == ["1\n"]


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    release = anyio.Event()

    async def wait_forever(a: int, b: int) -> int:
        """Never answers."""
        await release.wait()
        return a + b

    agent = SubAgent(prompt="Add", signature="() -> :int", tools={"add": wait_forever})
    async with Runtime(llm=ScriptedLLM([PROGRAM]), bus=SignalBus()) as rt:
        async with rt.stream(agent) as events:
            async for event in events:
                if event.kind == "tool_started":
                    break
        assert events.handle.done
        assert events.step is not None and events.step.error is not None
        assert events.step.error.type == "cancelled"


async def test_stream_needs_a_signal_bus() -> None:
    async with Runtime(llm=ScriptedLLM([PROGRAM])) as rt:
        with pytest.raises(UsageError, match=r"bus=SignalBus\(\)"):
            rt.stream(adder(Calls()))


async def test_the_strategy_asks_for_a_stream() -> None:
    ptc = PTC(prompt="Add", signature="() -> :int", stream=True)
    _, (ask,) = ptc.init(RunInfo(run_id="r1", input={}))
    assert isinstance(ask, LLMStream)
    plain = PTC(prompt="Add", signature="() -> :int")
    _, (ask,) = plain.init(RunInfo(run_id="r1", input={}))
    assert not isinstance(ask, LLMStream)


async def test_on_print_sees_each_chunk_as_it_is_printed() -> None:
    seen: list[str] = []
    result = await run_lisp(
        '(println "a") (print "b") (prn {:c 1}) (println (apply str (repeat 50 "x")))',
        on_print=seen.append,
        limits=Limits(max_output_chars=20),
    )
    assert seen == result.prints
    assert seen[:3] == ["a\n", "b", "{:c 1}\n"]
    assert seen[-1].endswith("...[output truncated]")


# -- over the wire: the local model server, the real SDKs streaming ---------------------

KINDS = ["openai-compatible", "anthropic"]
LINES = (*(line + "\n" for line in PROGRAM.split("\n")[:-1]), "```")


def wire_turn(kind: str, **kw: Any) -> Any:
    from ptcflow.testing import _anthropic_replies as aw, _openai_replies as ow

    if kind == "anthropic":
        return aw.messages_turn(aw.Turn(**kw))
    return ow.chat_turn(ow.Turn(**kw))


async def wire_stream(kind: str, reply: Any, calls: Calls) -> tuple[list[StreamEvent], Any, int]:
    """Run the streaming adder against a local server of ``kind`` answering ``reply``:
    its events, Step and the number of requests the server saw."""
    pytest.importorskip("h11")
    from ptcflow.providers import ModelRegistry, ProviderConfig
    from ptcflow.runtime import RetryPolicy
    from ptcflow.testing import open_model_server

    async with open_model_server(responder=None) as server:
        base = f"{server.base_url}/v1" if kind == "openai-compatible" else server.base_url
        config = ProviderConfig(kind=kind, base_url=base, api_key_env="TEST_KEY")  # type: ignore[arg-type]
        models = ModelRegistry(providers={"test": config}, env={"TEST_KEY": "sk-test-0123456789"})
        await models.connect()
        server.push(reply)
        policy = RetryPolicy(jitter="none", max_backoff_ms=0)
        async with models, Runtime(llm=models, bus=SignalBus(), retry=policy) as rt:
            got, step = await events_of(rt, adder(calls, llm="test:model-x", stream=True))
        return got, step, len(server.requests)


@pytest.mark.parametrize("kind", KINDS)
async def test_over_the_wire_the_deltas_join_to_the_program(kind: str) -> None:
    calls = Calls()
    got, step, requests = await wire_stream(
        kind, wire_turn(kind, text=PROGRAM, chunks=LINES), calls
    )
    assert step.ok and step.value == 3 and calls.count == 1 and requests == 1
    chunks = [e.text for e in got if e.kind == "text"]
    assert len(chunks) >= len(LINES) - 1 and "".join(chunks) == PROGRAM
    assert [e.text for e in got if e.kind == "printed"] == ["adding\n", "total 3\n"]


@pytest.mark.parametrize("kind", KINDS)
async def test_over_the_wire_a_dropped_stream_runs_nothing(kind: str) -> None:
    calls = Calls()
    # cut once the tool call's form is whole: that part would run, if anything did
    events = 4 if kind == "openai-compatible" else 6  # anthropic opens with 2 more events
    reply = wire_turn(kind, text=PROGRAM, chunks=LINES, drop_after=events)
    got, step, requests = await wire_stream(kind, reply, calls)
    streamed = "".join(e.text for e in got if e.kind == "text")
    assert PROGRAM.startswith(streamed) and streamed != PROGRAM
    assert '(call "add" {:a 1 :b 2})' in streamed
    assert not step.ok and step.error is not None and step.error.type == "transient"
    assert calls.count == 0 and requests == 1
    kinds = [e.kind for e in got]
    assert "tool_started" not in kinds and "program_ended" not in kinds


class FakeHandle:
    """A run handle for an EventStream fed by hand."""

    run_id = "r1"
    done = True

    def cancel(self, message: str = "") -> None:
        raise AssertionError("not cancelled")

    async def wait(self) -> Any:
        return None


async def test_a_program_run_again_prints_again_but_each_print_is_given_once() -> None:
    """A retried program prints from index 0 again: the stream gives each print once."""
    from ptcflow.runtime import EventStream
    from ptcflow.signals import (
        REQUEST_COMPLETED,
        REQUEST_STARTED,
        Ok,
        RequestEndData,
        RequestStartedData,
        Signal,
    )

    bus = SignalBus()
    events = EventStream(FakeHandle(), bus.subscribe("**"))
    bus.publish(Signal.create(REQUEST_STARTED, RequestStartedData(agent="a"), run_id="r1"))
    for index, text in [(0, "x"), (1, "y"), (0, "x"), (1, "y"), (2, "z")]:
        data = ProgramPrintData(text=text, index=index)
        bus.publish(Signal.create(PROGRAM_PRINT, data, run_id="r1", call_id="r1/program/1"))
    done = RequestEndData(result=Ok(payload=1))
    bus.publish(Signal.create(REQUEST_COMPLETED, done, run_id="r1"))
    async with events:
        got = [e async for e in events]
    assert [e.text for e in got if e.kind == "printed"] == ["x", "y", "z"]
    assert got[-1].kind == "run_ended" and got[-1].value == 1 and got[-1].path == ("a",)


async def test_a_react_run_streams_the_same_way() -> None:
    from ptcflow.strategies import ReAct

    def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "The sum is 5"])
    async with Runtime(llm=llm, tools=[add], bus=SignalBus()) as rt:
        got, step = await events_of(rt, ReAct(stream=True), input="2 + 3?", name="mathy")
    assert step.ok and step.value == "The sum is 5"
    assert "".join(e.text for e in got if e.kind == "text") == "The sum is 5"
    assert [e.kind for e in got if e.kind not in ("text", "message")] == [
        "run_started",
        "tool_started",
        "tool_ended",
        "run_ended",
    ]
    assert {e.path for e in got} == {("mathy",)}


async def test_stream_is_a_run_option_of_the_shorthand_and_a_checked_field() -> None:
    import ptcflow.agent

    bus = SignalBus()
    async with Runtime(llm=ScriptedLLM([PROGRAM]), bus=bus) as rt:
        with collect_signals(bus, "**") as log:
            step = await ptcflow.agent.run(adder(Calls()), runtime=rt, stream=True)
    assert step.ok and LLM_DELTA in log.types() and PROGRAM_PRINT in log.types()
    with pytest.raises(UsageError, match="stream must be True or False"):
        SubAgent(prompt="Add", stream="yes")  # type: ignore[arg-type]
