"""The runtime's ``RunProgram`` kind: programs run with their tool calls as sub-calls.

Every ``(call ...)`` of a program goes through the ToolExec machinery (validation, the
tool's timeout, limits, signals, spans); the directive ends with exactly one
``ai.program.result``; cancellation unwinds the program and its calls; a retry never repeats
a completed call.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ptcflow.directives import RunProgram
from ptcflow.runtime import Limits, RetryPolicy, Runtime, Step, Telemetry
from ptcflow.signals import (
    PROGRAM_RESULT,
    TOOL_RESULT,
    TOOL_STARTED,
    Err,
    Ok,
    ProgramOutput,
)
from ptcflow.tools import tool

from .support import Probe, terminals
from .test_telemetry import Otel, _id, _parent_id

pytestmark = pytest.mark.anyio

ORDERS = [
    {"id": 1, "customer": "ann", "amount": 20.0, "status": "delivered"},
    {"id": 2, "customer": "bob", "amount": 5.5, "status": "open"},
    {"id": 3, "customer": "ann", "amount": 7.25, "status": "delivered"},
]
CALLS: list[str] = []


async def orders(status: str) -> list[dict[str, Any]]:
    """Orders with a status."""
    CALLS.append("orders")
    await anyio.lowlevel.checkpoint()
    return [o for o in ORDERS if o["status"] == status]


def rate(customer: str) -> float:
    """A customer's discount rate (a sync tool: it runs in a worker thread)."""
    CALLS.append(f"rate {customer}")
    return {"ann": 0.5, "bob": 1.0}[customer]


HANGING: list[anyio.Event] = []


async def hang() -> int:
    """Never returns (until cancelled)."""
    CALLS.append("hang")
    for event in HANGING:
        event.set()
    await anyio.sleep_forever()
    return 0  # pragma: no cover


TOOLS = [orders, rate, hang]
PROGRAM = """
(def rows (call "orders" {:status "delivered"}))
(def by-customer (group-by :customer rows))
(def rates (pmap #(call "rate" {:customer %}) (keys by-customer)))
(return {:total (sum-by :amount rows) :customers (count by-customer) :rates rates})
"""


def program(source: str = PROGRAM, **fields: Any) -> RunProgram:
    base: dict[str, Any] = {
        "id": "r/program/1",
        "iteration": 1,
        "source": source,
        "tool_names": ("orders", "rate", "hang"),
    }
    return RunProgram(**{**base, **fields})


async def run_one(d: RunProgram, **runtime: Any) -> Step:
    CALLS.clear()
    async with Runtime(tools=runtime.pop("tools", TOOLS), **runtime) as rt:
        step = await rt.run(Probe([d]), "go", run_id="r", record=True)
        assert rt.statistics().in_flight == 0
    return step


def program_result(step: Step, call_id: str = "r/program/1") -> Ok[Any] | Err:
    (end,) = terminals(step.signals, call_id)
    assert end.type == PROGRAM_RESULT
    result: Ok[Any] | Err = end.data.result
    return result


async def test_a_program_ends_with_one_program_result_after_its_calls() -> None:
    step = await run_one(program())
    result = program_result(step)
    assert isinstance(result, Ok) and isinstance(result.payload, ProgramOutput)
    out = result.payload
    assert out.returned and out.value == {"total": 27.25, "customers": 1, "rates": [0.5]}
    assert [(c.index, c.name) for c in out.tool_calls] == [(0, "orders"), (1, "rate")]
    subs = [s for s in step.signals if s.call_id and "/tool/" in s.call_id]
    assert [(s.type, s.call_id) for s in subs] == [
        (TOOL_STARTED, "r/program/1/tool/0"),
        (TOOL_RESULT, "r/program/1/tool/0"),
        (TOOL_STARTED, "r/program/1/tool/1"),
        (TOOL_RESULT, "r/program/1/tool/1"),
    ]
    assert all(s.causation_id == "r/program/1" and s.iteration == 1 for s in subs)
    end = terminals(step.signals, "r/program/1")[0]
    assert end.seq > max(s.seq for s in subs)  # the sub-calls' results come first
    assert step.tool_calls == 2 and CALLS == ["orders", "rate ann"]


async def test_a_program_error_is_an_ok_output_and_the_call_results_are_recorded() -> None:
    d = program('(def n (count (call "orders" {:status "open"})))\n(+ n nil)')
    out = program_result(await run_one(d))
    assert isinstance(out, Ok)
    assert out.payload.error is not None and out.payload.error.category == "type"
    assert (out.payload.error.line, out.payload.error.column) == (2, 1)
    assert out.payload.tool_calls[0].result == Ok(payload=[ORDERS[1]])


async def test_sub_calls_are_validated_and_timed_out_like_tool_execs() -> None:
    slow = tool(hang, timeout_ms=30)
    d = program('[(call "orders" {:status 5}) (call "hang" {})]')
    step = await run_one(d, tools=[orders, rate, slow])
    out = program_result(step)
    assert isinstance(out, Ok) and out.payload.error is not None
    assert out.payload.error.category == "tool_error"
    assert "status: expected string" in out.payload.error.message
    (call,) = out.payload.tool_calls  # the bad arguments ended the program
    assert isinstance(call.result, Err) and call.result.error.type == "validation"

    step = await run_one(program('(call "hang" {})'), tools=[orders, rate, slow])
    out = program_result(step)
    assert isinstance(out, Ok) and "timeout" in (out.payload.error.message or "")
    (sub,) = terminals(step.signals, "r/program/1/tool/0")
    assert sub.data.result.error.type == "timeout"


async def test_a_tool_the_runtime_lacks_is_an_unknown_tool_error_of_the_call() -> None:
    step = await run_one(program('(call "rate" {:customer "ann"})'), tools=[orders])
    out = program_result(step)
    assert isinstance(out, Ok) and out.payload.error is not None
    (sub,) = terminals(step.signals, "r/program/1/tool/0")
    assert sub.data.result.error.type == "unknown_tool"


async def test_pmap_calls_run_concurrently() -> None:
    both = anyio.Event()
    started = 0

    async def meet(n: int) -> int:
        """Waits until two calls are in flight."""
        nonlocal started
        started += 1
        if started == 2:
            both.set()
        with anyio.fail_after(5):
            await both.wait()
        return n

    step = await run_one(
        RunProgram(
            id="r/program/1", source='(pmap #(call "meet" {:n %}) [1 2])', tool_names=("meet",)
        ),
        tools=[meet],
    )
    out = program_result(step)
    assert isinstance(out, Ok) and out.payload.value == [1, 2]


async def test_cancelling_the_run_mid_program_unwinds_it_and_its_calls() -> None:
    d = program('(call "orders" {:status "open"})\n(call "hang" {})\n(call "rate" {:customer "x"})')
    CALLS.clear()
    hanging = anyio.Event()
    HANGING[:] = [hanging]
    async with Runtime(tools=TOOLS) as rt:
        handle = rt.start(Probe([d]), "go", run_id="r", record=True)
        with anyio.fail_after(5):
            await hanging.wait()
        handle.cancel()
        step = await handle.wait()
        assert rt.statistics().in_flight == 0
    assert not step.ok and step.error is not None and step.error.type == "cancelled"
    result = program_result(step)
    assert isinstance(result, Err) and result.error.type == "cancelled"
    (hung,) = terminals(step.signals, "r/program/1/tool/1")
    assert hung.data.result.error.type == "cancelled"
    assert CALLS == ["orders", "hang"]  # the program did not go on after the cancellation
    assert step.signals[-1].type == "ai.request.failed"


async def test_the_directive_deadline_is_an_err_and_the_programs_own_limit_is_an_output() -> None:
    # long enough for the call to start on a loaded machine (the tool hangs: no test waits it)
    step = await run_one(program('(call "hang" {})', timeout_ms=1000))
    result = program_result(step)
    assert isinstance(result, Err) and result.error.type == "timeout"
    assert result.error.details["scope"] == "directive"
    (sub,) = terminals(step.signals, "r/program/1/tool/0")
    assert isinstance(sub.data.result, Err)

    step = await run_one(program('(call "hang" {})', limits={"timeout_ms": 50}))
    result = program_result(step)
    assert isinstance(result, Ok) and result.payload.error is not None
    assert result.payload.error.category == "timeout"


async def test_a_crash_of_the_kind_is_an_internal_err() -> None:
    step = await run_one(program("(+ 1 x)", memory={"x": "(+ 1"}))  # not memory it wrote
    result = program_result(step)
    assert isinstance(result, Err) and result.error.type == "internal"
    assert "RunProgram" in result.error.message


async def test_a_retry_never_repeats_a_completed_call() -> None:
    hung_once = False

    async def flaky() -> str:
        """Hangs on its first call."""
        nonlocal hung_once
        CALLS.append("flaky")
        if not hung_once:
            hung_once = True
            await anyio.sleep_forever()
        return "ok"

    d = RunProgram(
        id="r/program/1",
        source='[(count (call "orders" {:status "delivered"})) (call "flaky" {})]',
        tool_names=("orders", "flaky"),
        max_retries=1,
        retry_backoff_ms=0,
    )
    step = await run_one(d, tools=[orders, flaky], retry=RetryPolicy(attempt_timeout_ms=200))
    result = program_result(step)
    assert isinstance(result, Ok) and result.payload.value == [2, "ok"]
    assert CALLS == ["orders", "flaky", "flaky"]  # orders was answered from the record
    assert terminals(step.signals, "r/program/1")[0].data.attempts == 2
    ids = [s.call_id for s in step.signals if s.type == TOOL_RESULT]
    assert ids == ["r/program/1/tool/0", "r/program/1/tool/1", "r/program/1/tool/1/attempt/2"]
    first, second = (terminals(step.signals, str(i))[0].data.result for i in ids[1:])
    assert isinstance(first, Err) and first.error.type == "cancelled" and isinstance(second, Ok)


async def test_tool_limits_apply_to_program_calls() -> None:
    in_flight = peak = 0

    async def slow(n: int) -> int:
        """Counts concurrent calls."""
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.01)
        in_flight -= 1
        return n

    d = RunProgram(
        id="r/program/1", source='(pmap #(call "slow" {:n %}) (range 6))', tool_names=("slow",)
    )
    step = await run_one(d, tools=[slow], limits=Limits(tool_limits={"slow": 2}))
    out = program_result(step)
    assert isinstance(out, Ok) and out.payload.value == [0, 1, 2, 3, 4, 5] and peak == 2


async def test_spans_nest_run_turn_program_tool() -> None:
    otel = Otel()
    d = program()
    step = await run_one(d, telemetry=otel.telemetry())
    assert step.ok
    spans = otel.exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    run, prog = by_name["invoke_agent probe"], by_name["execute_program probe"]
    assert _parent_id(prog) == _id(run)  # a Probe has no turns: directly under the run
    subs = [s for s in spans if s.name.startswith("execute_tool")]
    assert {s.name for s in subs} == {"execute_tool orders", "execute_tool rate"}
    assert all(_parent_id(s) == _id(prog) for s in subs)
    attrs = dict(prog.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_program"
    assert attrs["ptcflow.program.tool_calls"] == 2
    assert attrs["ptcflow.program.outcome"] == "returned"
    assert "ptcflow.program.source" not in attrs  # content capture is off
    assert prog.end_time is not None and run.end_time is not None
    assert prog.end_time <= run.end_time


async def test_a_program_error_marks_its_span_without_its_text() -> None:
    otel = Otel()
    step = await run_one(program('(+ 1 "secret")'), telemetry=otel.telemetry())
    assert step.ok
    prog = next(s for s in otel.exporter.get_finished_spans() if s.name.startswith("execute_"))
    attrs = dict(prog.attributes or {})
    assert attrs["error.type"] == "type" and attrs["ptcflow.program.outcome"] == "error"
    assert prog.status.description == "type"


async def test_program_events_are_logged_with_their_correlation() -> None:
    with capture_logs() as logs:
        await run_one(program(), telemetry=Telemetry(log_events=True))
    events = {e["event"]: e for e in logs if e["event"].startswith("program.")}
    assert set(events) == {"program.started", "program.finished"}
    assert all(e["run_id"] == "r" and e["call_id"] == "r/program/1" for e in events.values())
    assert events["program.finished"]["tool_calls"] == 2
    assert events["program.finished"]["returned"] is True
