"""Cancellation and ordering across strategies: no orphaned tool call, no live task,
results applied in call order whatever order they arrive in."""

from __future__ import annotations

import anyio
import pytest
from contract_kit import CASES, Case, Recorder, check_contract, of_run, tool_terminals

from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.signals import (
    REQUEST_FAILED,
    TERMINAL_TYPES,
    TOOL_RESULT,
    TOOL_STARTED,
    Err,
    Ok,
    SignalBus,
)
from ptcflow.testing import ScriptedLLM, ScriptItem, collect_signals


class Blockers:
    """Tools that block until cancelled, and report that they started and cleaned up."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.started = 0
        self.all_started = anyio.Event()
        self.cleaned = 0

    async def block(self) -> str:
        """Blocks until cancelled."""
        self.started += 1
        if self.started == self.count:
            self.all_started.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cleaned += 1
        return "never"  # pragma: no cover


def quick() -> str:
    """Returns at once."""
    return "quick"


def tools_for(blockers: Blockers) -> dict[str, object]:
    return {"block": blockers.block, "quick": quick}


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_cancel_with_pending_tool_calls(case: Case) -> None:
    blockers = Blockers(2)
    calls: list[tuple[str, dict[str, object]]] = [("block", {}), ("quick", {}), ("block", {})]
    llm = ScriptedLLM([case.calls(calls), case.answer("never")])
    recorder = Recorder(case.make())
    with anyio.fail_after(10):
        async with Runtime(llm=llm, tools=tools_for(blockers)) as rt:
            handle = rt.start(recorder, case.input, record=True)
            await blockers.all_started.wait()
            handle.cancel()
            step = await handle.wait()
            stats = rt.statistics()
            assert (stats.in_flight, stats.runs_active) == (0, 0)
    assert not step.ok and step.error is not None and step.error.type == "cancelled"
    assert blockers.cleaned == 2, "cancelled tools ran their cleanup"
    check_contract(step, recorder)
    # every call that started (a ToolExec, or a program's sub-call) has its one result
    by_tool = {s.call_id: s.data.tool_name for s in of_run(step) if s.type == TOOL_STARTED}
    assert len(by_tool) == 3
    results = {s.call_id: s.data.result for s in tool_terminals(step)}
    assert set(results) == set(by_tool), "no orphaned tool call"
    for call_id, result in results.items():
        if by_tool[call_id] == "block":
            assert isinstance(result, Err) and result.error.type == "cancelled"
        else:  # quick may have finished before the cancellation, or not
            assert isinstance(result, Ok) or result.error.type == "cancelled"
    assert len(llm.requests) == 1, "no model call after the cancellation"


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_cancel_during_a_model_call(case: Case) -> None:
    asked = anyio.Event()

    def model(request: LLMRequest) -> ScriptItem:
        asked.set()
        return ScriptedLLM.timeout(hang=True)

    llm = ScriptedLLM(model)
    recorder = Recorder(case.make())
    with anyio.fail_after(10):
        async with Runtime(llm=llm) as rt:
            handle = rt.start(recorder, case.input, record=True)
            await asked.wait()
            handle.cancel()
            step = await handle.wait()
    assert step.error is not None and step.error.type == "cancelled"
    check_contract(step, recorder)


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_cancelling_the_caller_still_answers_every_call(case: Case) -> None:
    blockers = Blockers(1)
    llm = ScriptedLLM([case.calls([("block", {})]), case.answer("never")])
    recorder = Recorder(case.make())
    bus = SignalBus()
    with collect_signals(bus) as log, anyio.fail_after(10):
        async with (
            Runtime(llm=llm, tools=tools_for(blockers), bus=bus) as rt,
            anyio.create_task_group() as tg,
        ):

            async def caller() -> None:
                await rt.run(recorder, case.input)

            tg.start_soon(caller)
            await blockers.all_started.wait()
            tg.cancel_scope.cancel()
    assert blockers.cleaned == 1
    terminals = [s for s in log.signals if s.type in TERMINAL_TYPES]
    for d in recorder.directives:
        assert [s.call_id for s in terminals].count(d.id) == 1, d.id
    assert log.signals[-1].type == REQUEST_FAILED


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_results_are_applied_in_call_order(case: Case) -> None:
    gate = anyio.Event()

    async def slow() -> str:
        """Finishes after fast."""
        await gate.wait()
        return "slow result"

    async def fast() -> str:
        """Finishes first."""
        gate.set()
        return "fast result"

    llm = ScriptedLLM([case.calls([("slow", {}), ("fast", {})]), case.answer("done")])
    recorder = Recorder(case.make())
    with anyio.fail_after(10):
        async with Runtime(llm=llm, tools={"slow": slow, "fast": fast}) as rt:
            step = await rt.run(recorder, case.input, record=True)
    assert step.ok, step.error
    check_contract(step, recorder)
    arrived = [s.data.tool_name for s in step.signals if s.type == TOOL_RESULT]
    assert arrived == ["fast", "slow"], "the results really arrived out of order"
    assert case.results_seen(llm.requests[1]) == ["slow result", "fast result"]
    assert all(isinstance(s.data.result, Ok) for s in tool_terminals(step))
