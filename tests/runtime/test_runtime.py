"""Runtime and run scopes: lifecycle, cancellation, mission deadlines, child runs, bad strategies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from ptcflow.directives import Directive, LLMGenerate, RunChild, ToolExec
from ptcflow.errors import RunError, UsageError
from ptcflow.runtime import Limits, Runtime, Step, run, run_sync
from ptcflow.signals import (
    LLM_RESPONSE,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    LLMResponse,
    Ok,
    Signal,
)
from ptcflow.strategies import Outcome, RunInfo
from ptcflow.tools import ToolContext

from .support import MSGS, FakeLLM, Probe, terminals

pytestmark = pytest.mark.anyio


class ListBus:
    """A minimal bus: anything with a sync ``publish`` works."""

    def __init__(self) -> None:
        self.signals: list[Signal] = []

    def publish(self, signal: Signal) -> None:
        self.signals.append(signal)

    def of_run(self, run_id: str) -> list[Signal]:
        return [s for s in self.signals if s.run_id == run_id]


def _hanging_tools(started: anyio.Event | None = None, count: int = 1) -> dict[str, Any]:
    entered = [0]

    async def hang() -> None:
        entered[0] += 1
        if started is not None and entered[0] >= count:
            started.set()
        await anyio.sleep_forever()

    return {"hang": hang}


# -- lifecycle -------------------------------------------------------------------------


async def test_run_returns_a_step_and_signals_are_ordered() -> None:
    async def add(x: int, y: int) -> int:
        return x + y

    bus = ListBus()
    async with Runtime(tools={"add": add}, bus=bus) as rt:
        step = await rt.run(
            Probe([ToolExec(id="t", tool_name="add", arguments={"x": 1, "y": 2})]), "go"
        )
    assert step.ok and step.value == [3] and step.reason == "done"
    assert step.signals == ()  # not recorded unless asked
    types = [s.type for s in bus.of_run(step.run_id)]
    assert types == [REQUEST_STARTED, TOOL_STARTED, TOOL_RESULT, REQUEST_COMPLETED]
    assert [s.seq for s in bus.signals] == [1, 2, 3, 4]
    assert step.duration_ms >= 0


async def test_a_recorded_run_on_a_bus_records_and_publishes_the_same_signals() -> None:
    async def add(x: int, y: int) -> int:
        return x + y

    bus = ListBus()
    async with Runtime(tools={"add": add}, bus=bus) as rt:
        step = await rt.run(
            Probe([ToolExec(id="t", tool_name="add", arguments={"x": 1, "y": 2})]),
            "go",
            record=True,
        )
    assert step.signals == tuple(bus.of_run(step.run_id))
    assert [s.seq for s in step.signals] == [1, 2, 3, 4]


async def test_strategy_sees_every_signal_but_request_started() -> None:
    probe = Probe([ToolExec(id="t", tool_name="nope")])
    async with Runtime() as rt:
        step = await rt.run(probe, {"q": 1}, run_id="run_fixed")
    assert step.run_id == "run_fixed"
    assert [s.type for s in probe.received] == [TOOL_STARTED, TOOL_RESULT, REQUEST_COMPLETED]
    info = probe.infos[0]
    assert (info.run_id, info.input, info.request_id) == ("run_fixed", {"q": 1}, "run_fixed")


async def test_tool_specs_reach_the_strategy() -> None:
    def search(query: str) -> str:
        """Search the web."""
        return query

    probe = Probe()
    async with Runtime(tools=[search]) as rt:
        await rt.run(probe, "go")
    assert [(t.name, t.description) for t in probe.infos[0].tools] == [
        ("search", "Search the web.")
    ]


async def test_runtime_is_single_use_and_must_be_open() -> None:
    rt = Runtime()
    with pytest.raises(UsageError, match="not open"):
        await rt.run(Probe(), "x")
    async with rt:
        pass
    with pytest.raises(UsageError, match="closed"):
        await rt.run(Probe(), "x")
    with pytest.raises(UsageError, match="entered once"):
        async with rt:
            pass


async def test_bad_arguments_are_usage_errors() -> None:
    async with Runtime() as rt:
        with pytest.raises(UsageError, match="needs a strategy"):
            await rt.run(object(), "x")
        with pytest.raises(UsageError, match="timeout must be > 0"):
            await rt.run(Probe(), "x", timeout=0)
    with pytest.raises(UsageError, match="Directive subclasses"):
        Runtime(handlers={int: print})  # type: ignore[dict-item]


async def test_run_checks_its_arguments_when_called_and_starts_when_awaited() -> None:
    async with Runtime(llm=FakeLLM()) as rt:
        with pytest.raises(UsageError, match="needs a strategy"):
            rt.run(object(), "x")  # type: ignore[unused-coroutine]  # the call itself checks
        probe = Probe([LLMGenerate(id="g", messages=MSGS)])
        pending = rt.run(probe, "x")
        assert probe.infos == [] and rt.statistics().runs_started == 0  # nothing started
        pending.close()  # never awaited: no run, nothing left behind
        assert rt.statistics().runs_started == 0 and "runs=0" in repr(rt)
        step = await rt.run(probe, "x")
        assert step.ok and len(probe.infos) == 1
        assert rt.statistics().runs_started == 1 and "runs=0" in repr(rt)


async def test_module_level_run() -> None:
    step = await run(Probe([LLMGenerate(id="g", messages=MSGS)]), "x", llm=FakeLLM())
    assert step.ok


def test_run_sync_from_sync_code() -> None:
    step = run_sync(Probe([LLMGenerate(id="g", messages=MSGS)]), "x", llm=FakeLLM())
    assert step.ok and step.turns == 1


async def test_run_sync_inside_a_loop_is_refused_with_a_hint() -> None:
    with pytest.raises(UsageError, match=r"await ptcflow\.runtime\.run"):
        run_sync(Probe(), "x")


def test_step_unwrap_raises_run_error() -> None:
    from ptcflow.signals import ErrorEnvelope

    step = Step(run_id="r", ok=False, error=ErrorEnvelope.make("timeout", "too slow"))
    with pytest.raises(RunError, match="timeout: too slow") as info:
        step.unwrap()
    assert info.value.error == step.error


# -- bad strategies --------------------------------------------------------------------


async def test_a_strategy_that_raises_fails_the_run_with_an_internal_error() -> None:
    async def ok() -> int:
        return 1

    probe = Probe([ToolExec(id="t", tool_name="ok")], fail_on=TOOL_RESULT, name="brittle")
    async with Runtime(tools={"ok": ok}) as rt:
        step = await rt.run(probe, "x", record=True)
    assert not step.ok and step.error is not None
    assert step.error.type == "internal"
    assert "'brittle'" in step.error.message and "ai.tool.result" in step.error.message
    assert step.signals[-1].type == REQUEST_FAILED


async def test_a_strategy_that_raises_in_init_fails_cleanly() -> None:
    class Broken(Probe):
        def init(self, run: Any) -> Any:
            raise RuntimeError("no init")

    async with Runtime() as rt:
        step = await rt.run(Broken(), "x")
    assert step.error is not None and "init" in step.error.message


async def test_unknown_signal_types_are_routed_and_ignored() -> None:
    from ptcflow.runtime.lowlevel import DirectiveContext

    class Ping(Directive, frozen=True, kw_only=True, tag="ping_test"):
        pass

    async def ping(d: Ping, ctx: DirectiveContext) -> str:
        ctx.emit("x.vendor.unknown", {"any": "thing"})
        return "pong"

    probe = Probe([Ping(id="p")])
    async with Runtime(handlers={Ping: ping}) as rt:
        step = await rt.run(probe, "x")
    assert step.ok and step.value == ["pong"]
    assert "x.vendor.unknown" in [s.type for s in probe.received]


# -- cancellation ----------------------------------------------------------------------


async def test_handle_cancel_gives_every_pending_tool_call_a_cancelled_result() -> None:
    started = anyio.Event()
    probe = Probe([ToolExec(id=f"t{i}", tool_name="hang") for i in range(3)])
    async with Runtime(tools=_hanging_tools(started, count=3)) as rt:
        handle = rt.start(probe, "x", record=True)
        await started.wait()
        handle.cancel()
        step = await handle.wait()
        stats = rt.statistics()
    assert handle.done and handle.step is step
    assert not step.ok and step.error is not None and step.error.type == "cancelled"
    for i in range(3):
        (sig,) = terminals(step.signals, f"t{i}")
        assert sig.data.result.error.type == "cancelled"
    assert step.signals[-1].type == REQUEST_FAILED
    assert probe.received[-1].type == REQUEST_FAILED  # the strategy saw it too
    assert stats.in_flight == 0 and stats.runs_active == 0 and stats.cancelled == 3


async def test_cancelling_the_awaiting_task_cancels_the_run() -> None:
    started = anyio.Event()
    bus = ListBus()
    probe = Probe([ToolExec(id="t", tool_name="hang"), LLMGenerate(id="g", messages=MSGS)])
    llm = FakeLLM(_forever)
    async with Runtime(tools=_hanging_tools(started), llm=llm, bus=bus) as rt:
        async with anyio.create_task_group() as tg:

            async def runner() -> None:
                await rt.run(probe, "x")

            tg.start_soon(runner)
            await started.wait()
            tg.cancel_scope.cancel()
        stats = rt.statistics()
    by_type = {s.call_id: s for s in bus.signals if s.type in (TOOL_RESULT, LLM_RESPONSE)}
    assert by_type["t"].data.result.error.type == "cancelled"
    assert by_type["g"].data.result.error.type == "cancelled"
    assert bus.signals[-1].type == REQUEST_FAILED
    assert stats.in_flight == 0 and stats.runs_active == 0


async def _forever(request: Any) -> Any:
    await anyio.sleep_forever()


async def test_mission_timeout_fails_the_run_with_timeout() -> None:
    probe = Probe([ToolExec(id="t", tool_name="hang")])
    async with Runtime(tools=_hanging_tools()) as rt:
        step = await rt.run(probe, "x", timeout=0.05, record=True)
    assert step.error is not None and step.error.type == "timeout"
    assert step.reason == "timeout"
    (sig,) = terminals(step.signals, "t")
    assert sig.data.result.error.type in ("timeout", "cancelled")


async def test_limits_supply_the_default_mission_timeout() -> None:
    async with Runtime(tools=_hanging_tools(), limits=Limits(mission_timeout_ms=30)) as rt:
        step = await rt.run(Probe([ToolExec(id="t", tool_name="hang")]), "x")
        unlimited = rt.start(Probe([ToolExec(id="u", tool_name="hang")]), "x", timeout=None)
        unlimited.cancel()
        other = await unlimited.wait()
    assert step.error is not None and step.error.type == "timeout"
    assert other.error is not None and other.error.type == "cancelled"


async def test_no_task_outlives_a_cancelled_run() -> None:
    started = anyio.Event()
    async with Runtime(tools=_hanging_tools(started, count=2)) as rt:
        before = len(anyio.get_running_tasks())
        handle = rt.start(Probe([ToolExec(id=f"t{i}", tool_name="hang") for i in range(2)]), "x")
        await started.wait()
        assert len(anyio.get_running_tasks()) > before
        handle.cancel()
        await handle.wait()
        await anyio.lowlevel.checkpoint()
        assert len(anyio.get_running_tasks()) <= before


async def test_leaving_the_block_with_an_error_cancels_started_runs() -> None:
    started = anyio.Event()
    with pytest.raises(KeyError, match="user bug"):  # itself, not in an exception group
        async with Runtime(tools=_hanging_tools(started)) as rt:
            handle = rt.start(Probe([ToolExec(id="t", tool_name="hang")]), "x")
            await started.wait()
            raise KeyError("user bug")
    assert handle.step is not None and handle.step.error is not None
    assert handle.step.error.type == "cancelled"


async def test_leaving_the_block_waits_for_started_runs() -> None:
    async with Runtime(llm=FakeLLM()) as rt:
        handle = rt.start(Probe([LLMGenerate(id="g", messages=MSGS)]), "x")
    assert handle.step is not None and handle.step.ok


# -- child runs ------------------------------------------------------------------------


async def test_child_run_result_comes_back_as_a_tool_result() -> None:
    bus = ListBus()
    child = Probe([LLMGenerate(id="cg", messages=MSGS)], name="helper")
    parent = Probe([RunChild(id="c1", agent="helper", input={"task": "sum"})])
    async with Runtime(llm=FakeLLM(), bus=bus, agents={"helper": child}) as rt:
        step = await rt.run(parent, "x", record=True)
    assert step.ok
    (result,) = terminals(step.signals, "c1")
    assert result.type == TOOL_RESULT and result.data.tool_name == "helper"
    # the child's value as the journal reads it back (plain JSON data, so a replay of the
    # parent sees exactly what the live run saw)
    expected = msgspec.json.decode(msgspec.json.encode(LLMResponse(text="ok", model="fake-1")))
    assert result.data.result.payload == [expected]
    child_signals = [s for s in bus.signals if s.parent_run_id == step.run_id]
    assert child_signals and all(s.run_id == f"{step.run_id}/c1" for s in child_signals)
    assert child_signals[0].type == REQUEST_STARTED
    assert child.infos[0].input == {"task": "sum"}
    assert child.infos[0].parent_run_id == step.run_id


async def test_unknown_child_agent_is_an_unknown_tool_error() -> None:
    async with Runtime() as rt:
        step = await rt.run(Probe([RunChild(id="c1", agent="ghost")]), "x", record=True)
    (result,) = terminals(step.signals, "c1")
    assert result.data.result.error.type == "unknown_tool"
    assert "ghost" in result.data.result.error.message


async def test_cancelling_the_parent_cancels_the_child() -> None:
    started = anyio.Event()
    bus = ListBus()
    child = Probe([ToolExec(id="ct", tool_name="hang")], name="helper")
    parent = Probe([RunChild(id="c1", agent="helper")])
    async with Runtime(tools=_hanging_tools(started), bus=bus) as rt:
        handle = rt.start(parent, "x", agents={"helper": child})
        await started.wait()
        handle.cancel()
        step = await handle.wait()
        stats = rt.statistics()
    assert step.error is not None and step.error.type == "cancelled"
    child_end = [s for s in bus.signals if s.run_id.endswith("/c1") and s.type == REQUEST_FAILED]
    assert len(child_end) == 1
    child_tool = [s for s in bus.signals if s.call_id == "ct" and s.type == TOOL_RESULT]
    assert child_tool[0].data.result.error.type == "cancelled"
    assert stats.runs_active == 0 and stats.in_flight == 0


async def test_concurrent_runs_keep_their_signals_apart() -> None:
    async def echo(v: int) -> int:
        await anyio.lowlevel.checkpoint()
        return v

    bus = ListBus()
    results: dict[int, Step] = {}
    async with Runtime(tools={"echo": echo}, bus=bus) as rt:

        async def one(i: int) -> None:
            ds = [ToolExec(id=f"t{j}", tool_name="echo", arguments={"v": i}) for j in range(2)]
            results[i] = await rt.run(Probe(ds), i)

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
    for i, step in results.items():
        assert step.value == [i, i]
        seqs = [s.seq for s in bus.of_run(step.run_id)]
        assert seqs == list(range(1, len(seqs) + 1))


async def test_a_strategy_returning_a_non_directive_fails_the_run() -> None:
    class Sloppy(Probe):
        def init(self, run: Any) -> Any:
            return super().init(run)[0], ["not a directive"]

    async with Runtime() as rt:
        step = await rt.run(Sloppy(), "x")
    assert step.error is not None and step.error.type == "internal"
    assert (
        "returned str" in step.error.message and "(state, [Directive, ...])" in step.error.message
    )


async def test_a_crashing_snapshot_fails_only_that_tool_call() -> None:
    class NoSnapshot(Probe):
        def snapshot(self, state: Any) -> Any:
            raise RuntimeError("cannot snapshot")

    async def look(ctx: ToolContext) -> str:
        return "never"

    async with Runtime(tools={"look": look}) as rt:
        step = await rt.run(NoSnapshot([ToolExec(id="t", tool_name="look")]), "x", record=True)
    (result,) = terminals(step.signals, "t")
    assert result.data.result.error.type == "internal"
    assert "snapshot()" in result.data.result.error.message


async def test_every_signal_of_a_run_encodes_to_json() -> None:
    import msgspec

    async def odd() -> Any:
        return {"when": object(), "bytes": b"\x00", "nested": (1, {2, 3})}

    async with Runtime(tools={"odd": odd, "boom": _boom}, llm=FakeLLM()) as rt:
        step = await rt.run(
            Probe(
                [
                    ToolExec(id="a", tool_name="odd"),
                    ToolExec(id="b", tool_name="boom"),
                    LLMGenerate(id="g", messages=MSGS),
                ]
            ),
            "x",
            record=True,
        )
    for signal in step.signals:
        msgspec.json.encode(signal)  # raises if any payload is not JSON-safe


async def _boom() -> None:
    raise ValueError({"api_key": "sk-secret"})


async def test_end_signal_comes_after_every_terminal_when_the_strategy_crashes() -> None:
    started = anyio.Event()
    probe = Probe(
        [ToolExec(id="h", tool_name="hang"), ToolExec(id="q", tool_name="quick")],
        fail_on=TOOL_RESULT,
    )

    async def quick() -> int:
        await started.wait()
        return 1

    tools = {**_hanging_tools(started), "quick": quick}
    async with Runtime(tools=tools) as rt:
        step = await rt.run(probe, "x", record=True)
    assert step.error is not None and step.error.type == "internal"
    types = [(s.type, s.call_id) for s in step.signals]
    assert types[-1][0] == REQUEST_FAILED
    (hung,) = terminals(step.signals, "h")
    assert hung.data.result.error.type == "cancelled"
    assert hung.seq < step.signals[-1].seq


async def test_a_strategy_that_asks_for_nothing_ends_instead_of_hanging() -> None:
    async with Runtime() as rt:
        with anyio.fail_after(5):
            step = await rt.run(Idle(), "x")
    assert step.error is not None and step.reason == "stalled"
    assert "stopped asking for work" in step.error.message


class Idle(Probe):
    """Waits for a request that never comes: no directive, no outcome."""

    def outcome(self, state: Any) -> Any:
        return None


async def test_cancelling_a_run_waits_for_a_blocking_sync_tool_and_answers_cancelled() -> None:
    import threading

    entered = threading.Event()
    release = threading.Event()

    def blocking() -> str:
        entered.set()
        release.wait(5)  # the tool's own blocking work; the test releases it
        return "late"

    async with Runtime(tools={"blocking": blocking}) as rt:
        handle = rt.start(Probe([ToolExec(id="b", tool_name="blocking")]), "x", record=True)
        await anyio.to_thread.run_sync(entered.wait)
        handle.cancel()
        assert not handle.done  # the thread cannot be interrupted: the run waits for it
        release.set()
        step = await handle.wait()
    (result,) = terminals(step.signals, "b")
    assert result.data.result.error.type == "cancelled"
    assert step.error is not None and step.error.type == "cancelled"


async def test_statistics_are_readable_before_and_after_the_block() -> None:
    rt = Runtime(llm=FakeLLM())
    assert rt.statistics().runs_started == 0
    async with rt:
        await rt.run(Probe([LLMGenerate(id="g", messages=MSGS)]), "x")
    assert rt.statistics().runs_started == 1 and rt.statistics().succeeded == 1


class InPlace:
    """A strategy that updates a mutable state in place and hands back the same object."""

    name = "in-place"

    def init(self, run: RunInfo) -> tuple[dict[str, Any], Sequence[Directive]]:
        return {"done": False}, [ToolExec(id="t", tool_name="add", arguments={"x": 1, "y": 2})]

    def handle(self, state: dict[str, Any], signal: Signal) -> tuple[dict[str, Any], Any]:
        if signal.type == TOOL_RESULT:
            state["done"] = True  # same object, changed in place
        return state, ()

    def outcome(self, state: dict[str, Any]) -> Outcome | None:
        return Outcome(result=Ok(payload="ok")) if state["done"] else None

    def snapshot(self, state: dict[str, Any]) -> Any:
        return dict(state)


async def test_a_strategy_that_mutates_its_state_in_place_is_still_asked_for_its_outcome() -> None:
    async def add(x: int, y: int) -> int:
        return x + y

    async with Runtime(tools={"add": add}) as rt:
        step = await rt.run(InPlace(), "go")
    assert step.ok and step.value == "ok"


async def test_usage_errors_of_run_come_out_as_themselves() -> None:
    with pytest.raises(UsageError, match="needs a strategy") as info:
        await run(object(), "x", llm=FakeLLM())
    assert not isinstance(info.value, BaseExceptionGroup)
    with pytest.raises(UsageError, match="timeout must be > 0"):
        await run(Probe(), "x", timeout=-1)
    with pytest.raises(UsageError, match="needs an input"):
        await run(Probe(), None)


def test_usage_errors_of_run_sync_come_out_as_themselves() -> None:
    with pytest.raises(UsageError, match="needs a strategy") as info:
        run_sync(object(), "x")
    assert not isinstance(info.value, BaseExceptionGroup)
    with pytest.raises(UsageError, match="pass it as the second argument"):
        run_sync(Probe())
