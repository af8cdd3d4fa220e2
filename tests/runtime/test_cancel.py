"""Cancelling runs: the driver's cancel scope, enclosing scopes, shielded sections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ptcflow.directives import Directive, ToolExec
from ptcflow.runtime import Runtime
from ptcflow.signals import TOOL_RESULT, Signal
from ptcflow.strategies import Outcome, RunInfo

from .support import Probe, terminals

pytestmark = pytest.mark.anyio


async def test_cancelling_a_started_run_interrupts_the_directive_its_driver_awaits() -> None:
    entered = anyio.Event()

    async def slow() -> str:
        entered.set()
        await anyio.sleep(30)
        return "never"

    async with Runtime(tools={"slow": slow}) as rt:
        handle = rt.start(Probe([ToolExec(id="s", tool_name="slow")]), "x", record=True)
        await entered.wait()
        with anyio.fail_after(5):
            handle.cancel()
            step = await handle.wait()
    assert not step.ok and step.error is not None and step.error.type == "cancelled"
    (result,) = terminals(step.signals, "s")
    assert result.data.result.error.type == "cancelled"


async def test_an_enclosing_scope_cancelled_from_outside_still_cancels_the_caller() -> None:
    entered = anyio.Event()

    async def slow() -> str:
        entered.set()
        await anyio.sleep(30)
        return "never"

    async with Runtime(tools={"slow": slow}) as rt:
        with anyio.fail_after(5):
            with anyio.CancelScope() as outer:  # no deadline: the driver's scope is native

                async def cancel_soon() -> None:
                    await entered.wait()
                    outer.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_soon)
                    await rt.run(Probe([ToolExec(id="s", tool_name="slow")]), "x")
                    pytest.fail("rt.run returned inside a cancelled scope")
        assert outer.cancelled_caught


class FirstWins:
    """Starts two tool calls and completes with the first result that arrives."""

    name = "first-wins"

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        calls = [ToolExec(id="s", tool_name="slow"), ToolExec(id="f", tool_name="fast")]
        return None, calls

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        if signal.type == TOOL_RESULT and state is None:
            return signal.data.result, ()
        return state, ()

    def outcome(self, state: Any) -> Outcome | None:
        return None if state is None else Outcome(result=state, reason="first")

    def snapshot(self, state: Any) -> Any:
        return None


async def test_the_run_ending_cancels_the_directive_its_driver_performs() -> None:
    """The driver awaits ``slow``; ``fast`` (in a task) ends the run: ``slow`` is cancelled."""

    async def slow() -> str:
        await anyio.sleep(30)
        return "never"

    async def fast() -> str:
        await anyio.sleep(0.01)
        return "done"

    async with Runtime(tools={"slow": slow, "fast": fast}) as rt:
        with anyio.fail_after(5):
            step = await rt.run(FirstWins(), "x", record=True)
    assert step.ok and step.value == "done"
    results = {s.call_id: s.data.result for s in step.signals if s.type == TOOL_RESULT}
    assert results["s"].error.type == "cancelled"


async def test_a_run_cut_by_an_enclosing_deadline_ends_with_timeout() -> None:
    from ptcflow.signals import REQUEST_FAILED, SignalBus

    async def slow() -> str:
        await anyio.sleep(30)
        return "never"

    bus = SignalBus()
    async with Runtime(tools={"slow": slow}, bus=bus) as rt, bus.subscribe(REQUEST_FAILED) as sub:
        with anyio.move_on_after(0.05) as outer:
            await rt.run(Probe([ToolExec(id="s", tool_name="slow")]), "x")
        assert outer.cancelled_caught
        end = sub.receive_nowait()  # published before rt.run re-raised
    assert end.data.result.error.type == "timeout"
    assert end.data.reason == "timeout"


async def test_cancelling_a_run_reaches_into_a_task_group_the_tool_opened() -> None:
    entered = anyio.Event()
    children_done: list[str] = []

    async def fan_out() -> str:
        async def child(name: str) -> None:
            try:
                entered.set()
                await anyio.sleep(30)
            finally:
                children_done.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(child, "a")
            tg.start_soon(child, "b")
        return "never"

    async with Runtime(tools={"fan_out": fan_out}) as rt:
        handle = rt.start(Probe([ToolExec(id="t", tool_name="fan_out")]), "x", record=True)
        with anyio.fail_after(5):
            await entered.wait()
            handle.cancel()
            step = await handle.wait()
    (result,) = terminals(step.signals, "t")
    assert result.data.result.error.type == "cancelled"
    assert sorted(children_done) == ["a", "b"]


async def test_a_driver_awaiting_rt_run_directly_is_cancelled_with_its_task_group() -> None:
    """rt.run in a task of the caller's task group: the group's cancellation reaches it
    through the native scope, the run ends cancelled, and nothing is left running."""
    entered = anyio.Event()
    steps: list[Any] = []

    async def slow() -> str:
        entered.set()
        await anyio.sleep(30)
        return "never"

    async with Runtime(tools={"slow": slow}) as rt:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def one() -> None:
                    steps.append(await rt.run(Probe([ToolExec(id="s", tool_name="slow")]), "x"))

                tg.start_soon(one)
                await entered.wait()
                tg.cancel_scope.cancel()
        assert steps == []  # the cancellation was re-raised, not turned into a Step
        assert rt.statistics().runs_active == 0
        assert rt.statistics().in_flight == 0
