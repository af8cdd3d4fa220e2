"""``DirectiveContext.call_tool``: tool calls a directive's handler makes (sub-calls).

A custom directive kind calls tools the way a PTC-Lisp program will: each sub-call goes
through the ToolExec machinery (validation, the tool's timeout and retries, limits, worker
threads, spans) and publishes its own ``ai.tool.started`` / ``ai.tool.result``, correlated
to the directive, before the directive's own terminal.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from ptcflow.directives import Directive
from ptcflow.errors import UsageError
from ptcflow.runtime import Limits, Runtime, Step
from ptcflow.runtime.lowlevel import DirectiveContext
from ptcflow.signals import TOOL_RESULT, TOOL_STARTED, Err, Ok, Signal
from ptcflow.tools import tool

from .support import Probe, terminals
from .test_telemetry import Otel, _id, _parent_id

pytestmark = pytest.mark.anyio


class Batch(Directive, frozen=True, kw_only=True, tag="test_batch"):
    """Call these tools, one after the other or all at once."""

    calls: list[tuple[Any, Any]] = []
    parallel: bool = False


async def batch(d: Batch, ctx: DirectiveContext) -> list[Any]:
    results: list[Any] = [None] * len(d.calls)

    async def one(n: int, name: str, arguments: Any) -> None:
        result = await ctx.call_tool(name, arguments, index=n)
        assert isinstance(result, Ok | Err)  # these tools never wait for a person (Parked)
        results[n - 1] = result.payload if isinstance(result, Ok) else result.error.type

    if d.parallel:
        async with anyio.create_task_group() as tg:
            for n, (name, arguments) in enumerate(d.calls, 1):
                tg.start_soon(one, n, name, arguments)
    else:
        for n, (name, arguments) in enumerate(d.calls, 1):
            await one(n, name, arguments)
    return results


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def shout(text: str) -> str:
    """A sync tool (runs in a worker thread)."""
    return text.upper() + ("" if threading.current_thread() is threading.main_thread() else "!")


async def _run(d: Directive, **rt: Any) -> Step:
    async with Runtime(handlers={Batch: batch}, **rt) as runtime:
        return await runtime.run(Probe([d]), "go", record=True)


def _of(step: Step, call_id: str) -> list[Signal]:
    return [s for s in step.signals if s.call_id == call_id]


async def test_sub_calls_are_correlated_ordered_and_kept_apart_from_the_directive() -> None:
    d = Batch(
        id="b",
        request_id="req",
        iteration=3,
        calls=[("add", {"x": 1, "y": 2}), ("shout", {"text": "hi"})],
    )
    step = await _run(d, tools=[add, shout])
    assert step.ok and step.value == [[3, "HI!"]]  # shout ran in a worker thread
    for n in (1, 2):
        sub = _of(step, f"b/tool/{n}")
        assert [s.type for s in sub] == [TOOL_STARTED, TOOL_RESULT]
        assert all((s.causation_id, s.request_id, s.iteration) == ("b", "req", 3) for s in sub)
    (terminal,) = terminals(step.signals, "b")  # the directive's own terminal, once
    positions = [s.seq for s in step.signals if s.type == TOOL_RESULT]
    assert positions[-1] == terminal.seq, "sub-call results come before the directive's"
    assert terminal.data.result.payload == [3, "HI!"]
    assert step.tool_calls == 3  # two sub-calls and the directive


async def test_sub_calls_validate_their_input_like_tool_exec() -> None:
    d = Batch(
        id="b",
        calls=[("add", {"x": "one"}), ("nope", {}), ("add", [1, 2]), (7, {})],
    )
    step = await _run(d, tools=[add])
    assert step.value == [["validation", "unknown_tool", "validation", "validation"]]
    started = [s.call_id for s in step.signals if s.type == TOOL_STARTED]
    assert started == ["b/tool/1", "b/tool/2"], "invalid calls start nothing"


async def test_the_tools_own_timeout_and_retries_apply() -> None:
    tries: list[int] = []

    async def flaky() -> str:
        tries.append(1)
        if len(tries) < 3:
            await anyio.sleep_forever()
        return "third time"

    async def stuck() -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    d = Batch(id="b", retry_backoff_ms=1, calls=[("flaky", {}), ("stuck", {})])
    tools = [tool(flaky, timeout_ms=20, max_retries=2), tool(stuck, timeout_ms=20)]
    with anyio.fail_after(5):
        step = await _run(d, tools=tools)
    assert step.value == [["third time", "timeout"]]
    results = {s.call_id: s.data for s in step.signals if s.type == TOOL_RESULT}
    assert results["b/tool/1"].attempts == 3
    assert results["b/tool/2"].result.error.details["scope"] == "attempt"


async def test_sub_calls_run_concurrently_under_the_tool_limits() -> None:
    now = peak = 0

    async def work(n: int) -> int:
        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        now -= 1
        return n

    d = Batch(id="b", parallel=True, calls=[("work", {"n": n}) for n in range(4)])
    step = await _run(d, tools={"work": work})
    assert step.value == [[0, 1, 2, 3]] and peak == 4
    peak = 0
    step = await _run(d, tools={"work": work}, limits=Limits(per_tool=2))
    assert step.value == [[0, 1, 2, 3]] and peak == 2


async def test_cancelling_the_run_mid_call_answers_each_sub_call_once() -> None:
    entered = anyio.Event()

    async def hang() -> str:
        entered.set()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    d = Batch(id="b", parallel=True, calls=[("hang", {}), ("hang", {}), ("add", {"x": 1, "y": 1})])
    async with Runtime(handlers={Batch: batch}, tools=[hang, add]) as rt:
        handle = rt.start(Probe([d]), "go", record=True)
        with anyio.fail_after(5):
            await entered.wait()
            handle.cancel()
            step = await handle.wait()
        stats = rt.statistics()
    assert step.error is not None and step.error.type == "cancelled"
    for n in (1, 2):
        (result,) = [s for s in _of(step, f"b/tool/{n}") if s.type == TOOL_RESULT]
        assert result.data.result.error.type == "cancelled"
    (terminal,) = terminals(step.signals, "b")
    assert terminal.data.result.error.type == "cancelled"
    assert stats.in_flight == 0 and stats.runs_active == 0


async def test_a_run_deadline_reaches_sub_calls() -> None:
    async def hang() -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    async with Runtime(handlers={Batch: batch}, tools=[hang]) as rt:
        with anyio.fail_after(5):
            step = await rt.run(
                Probe([Batch(id="b", calls=[("hang", {})])]), "go", record=True, timeout=0.05
            )
    assert step.reason == "timeout"
    (sub,) = [s for s in _of(step, "b/tool/1") if s.type == TOOL_RESULT]
    assert sub.data.result.error.type == "timeout"


async def test_sub_call_spans_nest_under_the_directives_span() -> None:
    otel = Otel()
    d = Batch(id="b", calls=[("add", {"x": 1, "y": 2}), ("add", {"x": 2, "y": 2})])
    async with Runtime(handlers={Batch: batch}, tools=[add], telemetry=otel.telemetry()) as rt:
        step = await rt.run(Probe([d]), "go", record=True)
    assert step.ok
    spans = otel.exporter.get_finished_spans()
    parent = next(s for s in spans if s.name == "execute_tool test_batch")
    subs = [s for s in spans if s.name == "execute_tool add"]
    assert len(subs) == 2 and all(_parent_id(s) == _id(parent) for s in subs)
    ids = {s.attributes["gen_ai.tool.call.id"] for s in subs if s.attributes}
    assert ids == {"b/tool/1", "b/tool/2"}
    started = [s for s in step.signals if s.type == TOOL_STARTED]
    assert all(s.traceparent and s.traceparent.split("-")[2] != "0" * 16 for s in started)


async def test_an_index_is_an_int_used_once_per_attempt() -> None:
    errors: list[str] = []

    async def misuse(d: Batch, ctx: DirectiveContext) -> str:
        await ctx.call_tool("add", {"x": 1, "y": 1}, index=1)
        for bad in (1, -1, True):
            try:
                await ctx.call_tool("add", {"x": 1, "y": 1}, index=bad)
            except UsageError as exc:
                errors.append(str(exc))
        return "ok"

    async with Runtime(handlers={Batch: misuse}, tools=[add]) as rt:
        step = await rt.run(Probe([Batch(id="b")]), "go")
    assert step.ok and len(errors) == 3
    assert "used already" in errors[0] and "int >= 0" in errors[1] and "int >= 0" in errors[2]


async def test_a_sub_call_result_is_what_the_handler_gets() -> None:
    got: list[Any] = []

    async def look(d: Batch, ctx: DirectiveContext) -> str:
        got.append(await ctx.call_tool("add", {"x": 2, "y": 3}, index=1))
        got.append(await ctx.call_tool("add", {"x": 2}, index=2))
        return "ok"

    async with Runtime(handlers={Batch: look}, tools=[add]) as rt:
        await rt.run(Probe([Batch(id="b")]), "go")
    assert got[0] == Ok(payload=5)
    assert isinstance(got[1], Err) and got[1].error.type == "validation"
