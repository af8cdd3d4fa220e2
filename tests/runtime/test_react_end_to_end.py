"""End to end: the ReAct strategy and ScriptedLLM on the Runtime."""

from __future__ import annotations

import anyio
import pytest

from ptcflow.runtime import Limits, RetryPolicy, Runtime, run_sync
from ptcflow.signals import (
    LLM_DELTA,
    LLM_RESPONSE,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
)
from ptcflow.strategies import ReAct, replay
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def test_two_turn_tool_run() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    async with Runtime(llm=llm, tools=[add]) as rt:
        step = await rt.run(ReAct(), "What is 2 + 3?", record=True)
    assert step.ok and step.value == "5"
    assert (step.turns, step.tool_calls) == (2, 1)
    assert [s.type for s in step.signals] == [
        REQUEST_STARTED,
        USAGE,
        LLM_RESPONSE,
        TOOL_STARTED,
        TOOL_RESULT,
        USAGE,
        LLM_RESPONSE,
        REQUEST_COMPLETED,
    ]
    assert step.usage.input_tokens > 0
    assert [t.name for t in step.signals[0].data.tools] == ["add"]  # replayable RunInfo
    tool_message = llm.requests[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.content == '{"ok":true,"result":5}'


async def test_replaying_the_recorded_signals_reproduces_the_final_state() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    strategy = ReAct()
    async with Runtime(llm=llm, tools=[add]) as rt:
        step = await rt.run(strategy, "What is 2 + 3?", record=True)
    state = replay(strategy, list(step.signals))  # the tools travel on ai.request.started
    outcome = strategy.outcome(state)
    assert outcome is not None and outcome.result.ok
    assert outcome.result.payload == step.value  # type: ignore[union-attr]


async def test_streaming_run_publishes_deltas() -> None:
    llm = ScriptedLLM(["The answer is five"])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(ReAct(stream=True), "hi", record=True)
    assert step.ok and step.value == "The answer is five"
    types = [s.type for s in step.signals]
    deltas = [s.data.chunk.text for s in step.signals if s.type == LLM_DELTA]
    assert len(deltas) >= 4 and "".join(deltas) == "The answer is five"
    assert types.index(USAGE) > max(i for i, t in enumerate(types) if t == LLM_DELTA)


async def test_parallel_tool_calls_run_concurrently_and_apply_in_call_order() -> None:
    gate = anyio.Event()
    order: list[str] = []

    async def slow(tag: str) -> str:
        await gate.wait()
        order.append(tag)
        return tag

    async def fast(tag: str) -> str:
        order.append(tag)
        gate.set()
        return tag

    llm = ScriptedLLM(
        [[ScriptedLLM.tool_call("slow", tag="a"), ScriptedLLM.tool_call("fast", tag="b")], "done"]
    )
    async with Runtime(llm=llm, tools=[slow, fast]) as rt:
        step = await rt.run(ReAct(), "go")
    assert step.ok and order == ["b", "a"]  # fast finished first: they ran concurrently
    tool_messages = [m for m in llm.requests[1].messages if m.role == "tool"]
    assert [m.content for m in tool_messages] == [
        '{"ok":true,"result":"a"}',
        '{"ok":true,"result":"b"}',
    ]


async def test_rate_limit_and_server_errors_are_retried() -> None:
    llm = ScriptedLLM([ScriptedLLM.rate_limited(0.01), ScriptedLLM.server_error(), "ok"])
    async with Runtime(llm=llm, retry=RetryPolicy(max_backoff_ms=5)) as rt:
        step = await rt.run(ReAct(llm_max_retries=2), "hi", record=True)
    assert step.ok and step.value == "ok"
    (response,) = [s for s in step.signals if s.type == LLM_RESPONSE]
    assert response.data.attempts == 3


async def test_auth_failure_is_not_retried_and_fails_the_run() -> None:
    llm = ScriptedLLM([ScriptedLLM.auth_error(), "never"])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(ReAct(llm_max_retries=3), "hi", record=True)
    assert not step.ok and step.error is not None and step.error.type == "auth"
    assert llm.remaining == 1
    assert step.signals[-1].type == REQUEST_FAILED


async def test_hanging_model_hits_the_llm_deadline_then_retries() -> None:
    llm = ScriptedLLM([ScriptedLLM.timeout(hang=True), "recovered"])
    async with Runtime(llm=llm, retry=RetryPolicy(attempt_timeout_ms=20)) as rt:
        step = await rt.run(ReAct(llm_max_retries=1), "hi")
    assert step.ok and step.value == "recovered"


async def test_cancelling_a_react_run_answers_pending_tool_calls() -> None:
    started = anyio.Event()

    async def hang() -> None:
        started.set()
        await anyio.sleep_forever()

    llm = ScriptedLLM([ScriptedLLM.tool_call("hang")])
    async with Runtime(llm=llm, tools=[hang]) as rt:
        handle = rt.start(ReAct(), "go", record=True)
        await started.wait()
        handle.cancel()
        step = await handle.wait()
    assert step.error is not None and step.error.type == "cancelled"
    (result,) = [s for s in step.signals if s.type == TOOL_RESULT]
    assert result.data.result.error.type == "cancelled"


async def test_many_concurrent_runs() -> None:
    def script(request: object) -> object:
        messages = request.messages  # type: ignore[attr-defined]
        return ScriptedLLM.tool_call("add", x=2, y=3) if len(messages) < 3 else "5"

    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    steps = []
    async with Runtime(llm=llm, tools=[add], limits=Limits(max_directives=50)) as rt:

        async def one() -> None:
            steps.append(await rt.run(ReAct(), "What is 2 + 3?"))

        async with anyio.create_task_group() as tg:
            for _ in range(200):
                tg.start_soon(one)
        stats = rt.statistics()
    assert len(steps) == 200 and all(s.ok and s.value == "5" for s in steps)
    assert stats.runs_started == 200 and stats.in_flight == 0 and stats.runs_active == 0


def test_run_sync_with_react() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    assert run_sync(ReAct(), "What is 2 + 3?", llm=llm, tools=[add]).unwrap() == "5"
