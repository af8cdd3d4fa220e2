"""UsageLimits on Temporal: the workflow counts model calls, tool calls and tokens against
the run's budget, shared with its child workflows (handed down, counted back), and ends
the run as the local Runtime does (a real dev server)."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow import UsageLimits
from ptcflow.runtime import Runtime, Step
from ptcflow.temporal import TemporalOptions, TemporalRuntime
from temporal.agents import add, analyst, model, planner

pytestmark = pytest.mark.anyio

QUESTION = "Which regions grew?"


async def _both(
    client: Any, options: TemporalOptions, limits: UsageLimits, tag: str
) -> tuple[Step, Step]:
    """The planner's mission (two analysts as child runs, a tool) locally and on Temporal."""
    run_id = f"budget-{tag}-{options.task_queue}"
    agents = {"analyst": analyst()}
    async with Runtime(llm=model(), tools=[add], agents=agents, telemetry=None) as rt:
        local = await rt.run(planner(), QUESTION, run_id=run_id, usage_limits=limits)
    async with TemporalRuntime(client=client, tools=[add], agents=agents, options=options) as trt:
        remote = await trt.run(planner(), QUESTION, run_id=run_id, usage_limits=limits)
    return local, remote


def _over(step: Step) -> dict[str, Any]:
    assert not step.ok and step.error is not None, step
    assert step.error.type == "usage_limit_exceeded", step.error
    details: dict[str, Any] = step.error.details
    return details


async def test_a_request_budget_is_shared_with_the_child_workflows(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    # planner: 1 call, two analysts: 2 calls each, planner's answer: the 6th call
    roomy, tight = await _both(client, options, UsageLimits(max_requests=6), "roomy")
    assert roomy.ok and tight.ok, (roomy.error, tight.error)
    assert tight.value == roomy.value
    local, remote = await _both(client, options, UsageLimits(max_requests=5), "tight")
    expected = {"budget": "max_requests", "used": 6, "allowed": 5}
    assert _over(local) == expected
    assert _over(remote) == expected  # the children's calls counted back in the parent


async def test_a_tool_call_budget_counts_the_childrens_tool_calls(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    # the planner's add and each analyst's add: 3 tool calls
    local, remote = await _both(client, options, UsageLimits(max_tool_calls=3), "tools3")
    assert local.ok and remote.ok, (local.error, remote.error)
    local, remote = await _both(client, options, UsageLimits(max_tool_calls=2), "tools2")
    # Locally the third tool call (an analyst's) is refused: that child run fails and the
    # planner answers with its error as the tool's result.
    assert local.ok, local.error
    assert str(local.value).count("usage limit max_tool_calls=2 was exceeded") == 1
    # On Temporal the analysts run concurrently as child workflows, each counting from
    # what the tree had used when it started: their calls are counted back as they end,
    # and the tree past its budget ends the planner's run.
    assert _over(remote) == {"budget": "max_tool_calls", "used": 3, "allowed": 2}


async def test_a_token_budget_ends_the_run_after_the_response_that_passed_it(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
        whole = await trt.run(analyst(), "emea", run_id=f"tokens-{options.task_queue}")
        assert whole.ok, whole.error
        first = whole.usage.total_tokens
        limits = UsageLimits(max_total_tokens=1)
        step = await trt.run(
            analyst(), "emea", run_id=f"tokens1-{options.task_queue}", usage_limits=limits
        )
    details = _over(step)
    assert details["budget"] == "max_total_tokens" and details["allowed"] == 1
    assert 1 < details["used"] < first  # the first response passed it: no second call
