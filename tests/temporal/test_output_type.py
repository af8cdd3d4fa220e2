"""``SubAgent(output_type=...)`` on Temporal: the workflow and its history carry plain data,
the worker checks the answer against the type it imports by name, and the client gets the
typed value back; a type the worker cannot import fails the run saying so."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ptcflow import SubAgent
from ptcflow.strategies import PTC
from ptcflow.temporal import TemporalOptions, TemporalRuntime
from temporal.agents import TOTAL, add

pytestmark = pytest.mark.anyio


class Total(msgspec.Struct):
    """The totaller's answer as a Python type (module level: the worker imports it)."""

    total: int


async def test_the_client_gets_the_typed_value_of_a_run_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    agent = SubAgent(
        prompt=TOTAL + " {{user}}",
        signature="(user :string)",
        output_type=Total,
        tools=[add],
        name="totaller",
    )
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(agent, context={"user": "alice"})
    assert step.ok, step.error
    assert step.value == Total(total=8)
    assert step.signature == "(user :string) -> {total :int}"


async def test_a_type_the_worker_cannot_import_fails_the_run_saying_so(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    ptc = PTC(
        prompt=TOTAL + " {{user}}",
        signature="(user :string) -> {total :int}",
        output_type="billing_not_installed:Total",
        name="totaller",
    )
    async with TemporalRuntime(client=client, options=options) as trt:
        step = await trt.run(ptc, {"user": "alice"}, tools=[add])
    assert not step.ok and step.error is not None
    assert "output_type 'billing_not_installed:Total' cannot be imported" in step.error.message
