"""The runtime under faults (issue 15): blocking sync tools, deadlines against late work,
stray cancellations, provider output that the journal could not read back, and the
body's own exception out of ``async with Runtime()``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import anyio
import pytest

from ptcflow.directives import ToolExec
from ptcflow.runtime import Limits, Runtime
from ptcflow.signals import (
    LLM_RESPONSE,
    TOOL_RESULT,
    LLMResponse,
    ToolCall,
    decode_signal,
    encode_signal,
)
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import tool

from .support import FakeLLM, Probe, terminals

pytestmark = pytest.mark.anyio


class Blocker:
    """A sync tool stuck on I/O until the test releases it (or for ``limit`` seconds)."""

    def __init__(self, limit: float = 10.0) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()
        self.limit = limit

    def block(self) -> str:
        """Wait for the release (the tool's own blocking call)."""
        self.entered.set()
        self.release.wait(self.limit)
        self.returned.set()
        return "late"

    async def wait_returned(self) -> None:
        self.release.set()
        await anyio.to_thread.run_sync(self.returned.wait, 5)


# -- a blocking sync tool never holds a run past its deadline --------------------------------


async def test_a_blocking_sync_tool_does_not_hold_the_run_past_its_deadline() -> None:
    blocker = Blocker()
    llm = ScriptedLLM([ScriptedLLM.tool_call("block"), "never"])
    async with Runtime(llm=llm, tools={"block": blocker.block}) as rt:
        start = anyio.current_time()
        with anyio.move_on_after(5):
            step = await rt.run(ReAct(), "go", timeout=0.3, record=True)
        elapsed = anyio.current_time() - start
        stats = rt.statistics()
        assert stats.abandoned_threads == 1  # still blocked, and visible
        await blocker.wait_returned()
        await anyio.lowlevel.checkpoint()
        after = rt.statistics()
    assert elapsed < 2.0, f"the run waited {elapsed:.1f} s for a thread it had abandoned"
    assert step.reason == "timeout" and step.error is not None
    (result,) = [s for s in step.signals if s.type == TOOL_RESULT]
    assert result.data.result.error.type == "timeout"
    assert (after.abandoned_threads, after.late_results) == (0, 1)  # dropped and counted


async def test_a_sync_tools_own_timeout_is_reported_on_time() -> None:
    blocker = Blocker()
    slow = tool(blocker.block, name="block", timeout_ms=200)
    async with Runtime(tools=[slow]) as rt:
        start = anyio.current_time()
        with anyio.fail_after(5):
            step = await rt.run(Probe([ToolExec(id="t", tool_name="block")]), "go", record=True)
        elapsed = anyio.current_time() - start
        await blocker.wait_returned()
    assert elapsed < 2.0
    (result,) = terminals(step.signals, "t")
    assert result.data.result.error.type == "timeout"
    assert result.data.result.error.details["scope"] == "attempt"


async def test_a_cancelled_run_does_not_wait_for_its_blocked_thread() -> None:
    blocker = Blocker()
    async with Runtime(tools={"block": blocker.block}) as rt:
        handle = rt.start(Probe([ToolExec(id="t", tool_name="block")]), "go", record=True)
        await anyio.to_thread.run_sync(blocker.entered.wait, 5)
        handle.cancel()
        with anyio.fail_after(2):
            step = await handle.wait()
        await blocker.wait_returned()
    (result,) = terminals(step.signals, "t")
    assert result.data.result.error.type == "cancelled"


async def test_abandoned_threads_keep_their_slot_so_they_stay_bounded() -> None:
    blocker = Blocker()
    calls = [ToolExec(id=f"t{i}", tool_name="block", timeout_ms=200) for i in range(2)]
    async with Runtime(tools={"block": blocker.block}, limits=Limits(sync_tool_threads=1)) as rt:
        with anyio.fail_after(5):
            step = await rt.run(Probe(calls), "go", record=True)
        stats = rt.statistics()
        await blocker.wait_returned()
    assert stats.abandoned_threads == 1, "one thread ever ran: the second call found no slot"
    errors = [terminals(step.signals, d.id)[0].data.result.error.type for d in calls]
    assert errors == ["timeout", "timeout"]


# -- a deadline wins over late work ----------------------------------------------------------


async def test_a_run_whose_deadline_passes_in_a_shielded_section_ends_with_its_deadline() -> None:
    async def commit() -> str:
        """Work that must not be interrupted."""
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.3)  # the commit's own work, past the run's deadline
        return "committed"

    llm = ScriptedLLM([ScriptedLLM.tool_call("commit"), "all done"])
    async with Runtime(llm=llm, tools=[commit]) as rt:
        with anyio.fail_after(5):
            step = await rt.run(ReAct(), "go", timeout=0.05, record=True)
    assert not step.ok and step.reason == "timeout"
    (result,) = [s for s in step.signals if s.type == TOOL_RESULT]
    assert result.data.result.payload == "committed"  # recorded: nothing lost
    assert len(llm.requests) == 1, "no model call started after the deadline"


# -- a stray CancelledError is the tool's error, not a cancellation ---------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_stray_cancelled_error_is_the_tools_failure() -> None:
    async def stray() -> str:
        """Awaits a future someone else cancelled."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    llm = ScriptedLLM([ScriptedLLM.tool_call("stray"), "recovered"])
    async with Runtime(llm=llm, tools=[stray]) as rt:
        step = await rt.run(ReAct(), "go", record=True)  # must not raise CancelledError
        assert rt.statistics().in_flight == 0
    assert step.ok and step.value == "recovered"
    (result,) = [s for s in step.signals if s.type == TOOL_RESULT]
    error = result.data.result.error
    assert error.type == "tool_error" and "CancelledError" in error.message
    assert "nothing cancelled it" in error.message


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_provider_raising_a_stray_cancelled_error_fails_its_call() -> None:
    async def stray(request: Any) -> LLMResponse:
        raise asyncio.CancelledError("a cancellation from somewhere else")

    async with Runtime(llm=FakeLLM(stray)) as rt:
        from ptcflow.directives import LLMGenerate

        from .support import MSGS

        step = await rt.run(Probe([LLMGenerate(id="g", messages=MSGS)]), "go", record=True)
    (result,) = terminals(step.signals, "g")
    assert result.data.result.error.type == "provider_error"


# -- everything the runtime writes, it can read back -----------------------------------------


async def test_a_tool_call_whose_input_is_not_an_object_is_a_model_error() -> None:
    async def model(request: Any) -> LLMResponse:
        return LLMResponse(tool_calls=(ToolCall(id="c1", name="add", input=[1, 2]),))  # type: ignore[arg-type]

    def add(x: int, y: int) -> int:
        """Add."""
        return x + y

    async with Runtime(llm=FakeLLM(model), tools=[add]) as rt:
        step = await rt.run(ReAct(llm_max_retries=0), "go", record=True)
    (response,) = [s for s in step.signals if s.type == LLM_RESPONSE]
    error = response.data.result.error
    assert error.type == "provider_error" and "input" in error.message
    assert not step.ok  # the strategy saw the model's error
    for signal in step.signals:
        assert decode_signal(encode_signal(signal)) == signal


# -- the body's exception comes out as itself -------------------------------------------------


async def test_the_bodys_exception_comes_out_unwrapped() -> None:
    with pytest.raises(KeyError, match="user bug"):
        async with Runtime():
            raise KeyError("user bug")
    rt = Runtime(llm=FakeLLM())
    with pytest.raises(ValueError, match="after a run") as info:
        async with rt:
            await rt.run(Probe(), "go")
            raise ValueError("after a run")
    assert not isinstance(info.value, BaseExceptionGroup)
