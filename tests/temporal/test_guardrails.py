"""Guardrails on Temporal: each guard runs on a worker (an activity), the workflow
decides from its verdict; the same mission ends the same way locally and on Temporal,
with the same ``ai.guardrail`` signals (a real dev server)."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow import Guardrails
from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime, Step
from ptcflow.strategies import ReAct
from ptcflow.temporal import TemporalOptions, TemporalRuntime
from temporal.agents import add, analyst, model, planner, totaller
from temporal.guards import (
    analysts_do_not_add,
    boom,
    double_x,
    no_add,
    no_secrets,
    shout,
)

pytestmark = pytest.mark.anyio


async def _both(
    client: Any, options: TemporalOptions, guards: Guardrails, tag: str, question: str = "emea"
) -> tuple[Step, Step]:
    """The analyst (a tool call, then an answer) locally and on Temporal, journaled."""
    run_id = f"guard-{tag}-{options.task_queue}"
    async with Runtime(llm=model(), tools=[add], telemetry=None) as rt:
        local = await rt.run(analyst(), question, run_id=run_id, guardrails=guards, record=True)
    async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
        remote = await trt.run(analyst(), question, run_id=run_id, guardrails=guards, record=True)
    return local, remote


def _verdicts(step: Step) -> list[dict[str, Any]]:
    return [dict(s.data) for s in step.signals if s.type == "ai.guardrail"]


def _order(step: Step) -> list[str]:
    """The journal's signal types, guard checks and the end among them."""
    keep = {"ai.guardrail", "ai.tool.started", "ai.request.completed", "ai.request.failed"}
    return [s.type for s in step.signals if s.type in keep]


async def test_a_tool_guard_that_trips_ends_the_run_as_locally(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    local, remote = await _both(client, options, Guardrails(tool=[no_add]), "tool")
    for step in (local, remote):
        assert not step.ok and step.error is not None
        assert step.error.type == "guardrail_tripped", step.error
        assert step.error.details == {
            "guard": "no_add",
            "stage": "tool",
            "reason": "add is not allowed",
        }
    assert _verdicts(remote) == _verdicts(local) == [
        {"guard": "no_add", "stage": "tool", "verdict": "guardrail_tripped",
         "reason": "add is not allowed"}
    ]  # fmt: skip


async def test_an_output_guard_rewrites_the_value_before_the_end_signal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    plain, _ = await _both(client, options, Guardrails(), "plain")
    assert plain.ok, plain.error
    local, remote = await _both(client, options, Guardrails(output=[shout]), "output")
    assert local.ok and remote.ok, (local.error, remote.error)
    assert remote.value == local.value == str(plain.value).upper() != plain.value
    verdict = {"guard": "shout", "stage": "output", "verdict": "rewrite", "reason": ""}
    assert _verdicts(remote) == _verdicts(local) == [verdict]
    assert _order(remote)[-2:] == _order(local)[-2:] == ["ai.guardrail", "ai.request.completed"]


async def test_a_tool_guard_rewrites_the_arguments(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    plain, _ = await _both(client, options, Guardrails(), "plain2")
    local, remote = await _both(client, options, Guardrails(tool=[double_x]), "double")
    assert local.ok and remote.ok, (local.error, remote.error)
    assert remote.value == local.value != plain.value
    assert _verdicts(remote) == _verdicts(local)


async def test_an_input_guard_that_trips_ends_the_run_before_any_model_call(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    guards = Guardrails(input=[no_secrets])
    local, remote = await _both(client, options, guards, "input", "the secret of emea")
    for step in (local, remote):
        assert not step.ok and step.error is not None
        assert step.error.type == "guardrail_tripped", step.error
        assert step.error.details["stage"] == "input"
        assert step.usage.input_tokens == 0  # no model call
    assert _verdicts(remote) == _verdicts(local) == [
        {"guard": "no_secrets", "stage": "input", "verdict": "guardrail_tripped",
         "reason": "the input mentions a secret"}
    ]  # fmt: skip
    fine_local, fine_remote = await _both(client, options, guards, "input-ok")
    assert fine_local.ok and fine_remote.ok, (fine_local.error, fine_remote.error)
    assert _verdicts(fine_remote) == _verdicts(fine_local)


async def test_a_guard_that_raises_fails_the_run_as_locally(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    local, remote = await _both(client, options, Guardrails(output=[boom]), "boom")
    for step in (local, remote):
        assert not step.ok and step.error is not None
        assert step.error.type == "guardrail_failed", step.error
    assert remote.error is not None and local.error is not None
    assert remote.error.details == local.error.details


async def test_the_tool_guards_check_the_child_runs_tool_calls(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    guards = Guardrails(tool=[analysts_do_not_add])
    run_id = f"guard-children-{options.task_queue}"
    agents = {"analyst": analyst()}
    async with Runtime(llm=model(), tools=[add], agents=agents, telemetry=None) as rt:
        local = await rt.run(planner(), "Which regions grew?", run_id=run_id, guardrails=guards)
    async with TemporalRuntime(client=client, tools=[add], agents=agents, options=options) as trt:
        remote = await trt.run(planner(), "Which regions grew?", run_id=run_id, guardrails=guards)
    # each analyst's tool call trips its own run; the planner answers with their errors
    assert local.ok and remote.ok, (local.error, remote.error)
    assert remote.value == local.value
    assert str(local.value).count('"type":"guardrail_tripped"') == 2, local.value


async def test_a_programs_tool_calls_under_tool_guards_fail_the_run_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    guards = Guardrails(tool=[no_add])
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(
            totaller(), {"user": "ada"}, run_id=f"guard-program-{options.task_queue}",
            guardrails=guards,
        )  # fmt: skip
    assert not step.ok and step.error is not None
    assert step.error.type == "guardrail_failed", step.error
    assert "a program's tool calls on Temporal" in step.error.message


def test_what_temporal_cannot_guard_is_refused_at_plan_time() -> None:
    rt = TemporalRuntime(address="127.0.0.1:1")
    with pytest.raises(UsageError, match="defined inside a function"):

        def local_guard(value: Any, info: Any) -> None:
            return None

        rt.run(ReAct(), "x", guardrails=Guardrails(tool=[local_guard])).close()
    with pytest.raises(UsageError, match="concurrent_input=True"):
        guards = Guardrails(input=[no_secrets], concurrent_input=True)
        rt.run(ReAct(), "x", guardrails=guards).close()
