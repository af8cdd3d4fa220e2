"""Contracts every strategy keeps as a plain function (no runtime): determinism, busy
rejection, stale ids ignored, JSON-safe snapshots."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from contract_kit import CASES, Case

from ptcflow.directives import Directive, EmitRequestError, LLMGenerate
from ptcflow.runtime import LLMRequest
from ptcflow.signals import LLMResponse, Message, Signal, ToolSpec
from ptcflow.strategies import RunInfo, Strategy
from ptcflow.testing import ScriptedLLM, SignalFactory

TOOLS = (ToolSpec(name="add"), ToolSpec(name="mul"))


async def respond(item: Any) -> LLMResponse:
    """Turn a case's script entry into the response a provider would return."""
    return await ScriptedLLM([item]).generate(
        LLMRequest(model="m", messages=(Message(role="user", content="go"),))
    )


async def at_tools(case: Case) -> tuple[Any, Any, list[Directive], SignalFactory]:
    """Bring a fresh run to the point where it waits for two tool calls."""
    strategy = case.make()
    sig = SignalFactory("r1", request_id="q")
    info = RunInfo(run_id="r1", input=case.input, request_id="q", tools=TOOLS)
    state, first = strategy.init(info)
    (llm,) = first
    assert isinstance(llm, LLMGenerate)
    response = await respond(case.calls([("add", {"x": 1}), ("mul", {"x": 2})]))
    state, out = strategy.handle(state, sig.llm_response(llm, response))
    work: list[Directive] = [d for d in out if isinstance(d, case.work)]
    assert work and len(work) == len(out)
    return strategy, state, work, sig


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_is_a_strategy(case: Case) -> None:
    strategy = case.make()
    assert isinstance(strategy, Strategy)
    assert isinstance(strategy.name, str) and strategy.name


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_busy_request_is_rejected(case: Case) -> None:
    strategy, state, _, sig = await at_tools(case)
    after, out = strategy.handle(state, sig.request_started("another"))
    assert [type(d) for d in out] == [EmitRequestError]
    assert isinstance(out[0], EmitRequestError) and out[0].error.type == "busy"
    assert strategy.outcome(after) is None, "a rejected request does not end the run"


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_stale_and_unknown_ids_are_ignored(case: Case) -> None:
    strategy, state, execs, sig = await at_tools(case)
    stale: list[Signal] = [
        sig.tool_result("not-a-call", 1),
        *sig.llm_reply("r1/llm/1", "late answer from an old call"),
        sig.tool_result("r1/llm/1", 1),
    ]
    for s in stale:
        new, out = strategy.handle(state, s)
        assert new == state and list(out) == [], s.type
    # the real results still work afterwards
    for d in execs:
        state, out = strategy.handle(state, case.work_done(sig, d))
    assert any(isinstance(d, LLMGenerate) for d in out)


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_same_signals_same_state_and_snapshot_is_json(case: Case) -> None:
    one = await at_tools(case)
    two = await at_tools(case)
    assert one[1] == two[1] and one[2] == two[2]
    snap = one[0].snapshot(one[1])
    assert msgspec.json.decode(msgspec.json.encode(snap)) == snap
