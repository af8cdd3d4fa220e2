"""UsageLimits(max_cost_usd=...) on Temporal: the worker prices each model call's usage
with its price table (``open_worker(prices=...)``), the workflow sums the costs (its
children's counted back) and ends the run as the local Runtime does (a real dev server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from ptcflow import UsageLimits
from ptcflow.providers import ModelPrice
from ptcflow.runtime import Runtime, Step
from ptcflow.temporal import TemporalOptions, TemporalRuntime, open_worker
from temporal.agents import add, analyst, model, planner

pytestmark = pytest.mark.anyio

PRICES = {"scripted": ModelPrice(input_per_mtok=1_000.0, output_per_mtok=2_000.0)}
"""Dear prices for the scripted model (a call costs cents)."""


@pytest.fixture
async def priced(client: Any, queue: str) -> AsyncIterator[TemporalOptions]:
    """A worker that knows the scripted model's price, on a queue of its own."""
    own = f"{queue}-priced"
    async with open_worker(client, task_queue=own, llm=model(), prices=PRICES):
        yield TemporalOptions(task_queue=own, heartbeat_timeout_ms=2_000)


async def _both(
    client: Any, options: TemporalOptions, limits: UsageLimits, tag: str, *, mission: bool = False
) -> tuple[Step, Step]:
    run_id = f"cost-{tag}-{options.task_queue}"
    agents = {"analyst": analyst()}
    agent = planner() if mission else analyst()
    question = "Which regions grew?" if mission else "emea"
    async with Runtime(
        llm=model(), tools=[add], agents=agents, telemetry=None, prices=PRICES
    ) as rt:
        local = await rt.run(agent, question, run_id=run_id, usage_limits=limits)
    async with TemporalRuntime(client=client, tools=[add], agents=agents, options=options) as trt:
        remote = await trt.run(agent, question, run_id=run_id, usage_limits=limits)
    return local, remote


async def test_a_cost_budget_ends_the_run_after_the_response_that_passed_it(
    client: Any, priced: TemporalOptions
) -> None:
    local, remote = await _both(client, priced, UsageLimits(max_cost_usd=100.0), "roomy")
    assert local.ok and remote.ok, (local.error, remote.error)
    assert local.cost_usd is not None and local.cost_usd > 0
    cost = local.cost_usd
    # a third: the first response passes it (no second call); three quarters: the last
    # response, the final answer, passes it (the run fails all the same)
    for share, tag in ((1 / 3, "first"), (3 / 4, "last")):
        limits = UsageLimits(max_cost_usd=cost * share)
        local, remote = await _both(client, priced, limits, tag)
        for step in (local, remote):
            assert not step.ok and step.error is not None, step
            assert step.error.type == "usage_limit_exceeded", step.error
        assert remote.error is not None and local.error is not None
        assert remote.error.details == local.error.details
        assert remote.error.details["budget"] == "max_cost_usd"
        assert remote.usage == local.usage  # the response past the budget counts


async def test_the_childrens_costs_count_in_the_parents_budget(
    client: Any, priced: TemporalOptions
) -> None:
    local, remote = await _both(
        client, priced, UsageLimits(max_cost_usd=100.0), "mission", mission=True
    )
    assert local.ok and remote.ok, (local.error, remote.error)
    first, _ = await _both(client, priced, UsageLimits(max_cost_usd=100.0), "one")
    assert first.cost_usd is not None
    # one analyst's run costs more than this: the mission (two analysts) passes it
    limits = UsageLimits(max_cost_usd=first.cost_usd * 1.5)
    local, remote = await _both(client, priced, limits, "mission-tight", mission=True)
    for step in (local, remote):
        assert not step.ok and step.error is not None, step
        assert step.error.type == "usage_limit_exceeded", step.error
        assert step.error.details["budget"] == "max_cost_usd"


async def test_a_model_without_a_price_ends_a_run_with_a_cost_budget(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    run_id = f"cost-unknown-{options.task_queue}"
    limits = UsageLimits(max_cost_usd=1.0)
    async with Runtime(llm=model(), tools=[add], telemetry=None) as rt:
        local = await rt.run(analyst(), "emea", run_id=run_id, usage_limits=limits)
    async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
        remote = await trt.run(analyst(), "emea", run_id=run_id, usage_limits=limits)
    for step in (local, remote):
        assert not step.ok and step.error is not None, step
        assert step.error.type == "price_unknown", step.error
    assert remote.error is not None and local.error is not None
    assert (
        remote.error.details
        == local.error.details
        == {
            "budget": "max_cost_usd",
            "model": "scripted",
        }
    )
