"""Retries are Temporal's (the directive's policy, a provider's Retry-After honoured);
streamed calls publish their deltas; ``ptcflow worker`` refuses what it cannot load."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ptcflow.cli import main
from ptcflow.runtime import Runtime
from ptcflow.signals import LLM_DELTA, LLM_RESPONSE
from ptcflow.strategies import ReAct
from ptcflow.temporal import TemporalOptions, TemporalRuntime, open_worker
from ptcflow.testing import ScriptedLLM
from temporal.agents import add, model

pytestmark = pytest.mark.anyio


async def test_a_rate_limited_model_call_is_retried_by_temporal_after_its_retry_after(
    client: Any, options: TemporalOptions
) -> None:
    flaky = ScriptedLLM([ScriptedLLM.rate_limited(retry_after=0.3), "hello"])
    async with (
        open_worker(client, task_queue=options.task_queue, llm=flaky),
        TemporalRuntime(client=client, options=options) as trt,
    ):
        step = await trt.run(ReAct(), "hi", record=True)
    assert step.ok and step.value == "hello", step.error
    (response,) = [s for s in step.signals if s.type == LLM_RESPONSE]
    assert response.data.attempts == 2
    history = await client.get_workflow_handle(step.run_id).fetch_history()
    started = [e for e in history.events if e.HasField("activity_task_started_event_attributes")]
    assert started[0].activity_task_started_event_attributes.attempt == 2
    scheduled = next(
        e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
    )
    waited = started[0].event_time.ToDatetime() - scheduled.event_time.ToDatetime()
    assert waited.total_seconds() >= 0.3  # the provider's Retry-After


async def test_a_streamed_run_gives_the_same_step_and_deltas(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    strategy = ReAct(stream=True, system_prompt="You analyse one region.")
    async with Runtime(llm=model(), tools=[add], telemetry=None) as rt:
        local = await rt.run(strategy, "emea", record=True, run_id=f"stream-{options.task_queue}")
    async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
        remote = await trt.run(strategy, "emea", record=True, run_id=f"stream-{options.task_queue}")
    assert remote.ok, remote.error
    strip = {"duration_ms": 0.0, "signals": ()}
    assert msgspec.structs.replace(remote, **strip) == msgspec.structs.replace(local, **strip)
    deltas = [s.data for s in remote.signals if s.type == LLM_DELTA]
    assert deltas and deltas == [s.data for s in local.signals if s.type == LLM_DELTA]


def test_the_worker_command_refuses_what_it_cannot_import(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["worker", "--tools", "no_such_module:TOOLS"]) == 2
    err = capsys.readouterr().err
    assert "--tools no_such_module:TOOLS: cannot import it: ModuleNotFoundError" in err
