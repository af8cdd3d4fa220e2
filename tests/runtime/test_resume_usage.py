"""A usage budget across a pause: a resumed run counts on from what its whole tree had used
(its own calls, its child agents', ended or paused), so the budget ends the run exactly
where it would have ended without the pause."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

import ptcflow
from ptcflow import Approve, ModelPrice, ReAct, SubAgent, UsageLimits
from ptcflow.core import PausedRun
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.signals import REQUEST_PAUSED, USAGE, Signal, Usage
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import Tool

pytestmark = pytest.mark.anyio

CHILD_TURNS = 3
"""The model calls the child agent makes before it answers."""


class Tools:
    """The parent's tools: a child agent, a refund that may ask first, a counter.
    ``in_child``: the refund that asks is the child's (it pauses inside the child)."""

    def __init__(self, *, ask: bool, in_child: bool = False) -> None:
        self.refunds: list[int] = []
        self.counted: list[int] = []

        def refund(amount: int) -> str:
            """Refund an amount."""
            self.refunds.append(amount)
            return f"refunded {amount}"

        def count(i: int) -> int:
            """Count one more."""
            self.counted.append(i)
            return i

        counter = ptcflow.tool(count)
        refunder = ptcflow.tool(refund, requires_approval=ask)
        helper = SubAgent(
            prompt="Refund for {{n}}" if in_child else "Help with {{n}}",
            signature="(n :int) -> :int",
            name="helper",
            tools=[counter, refunder] if in_child else [counter],
        )
        if in_child:
            refunder = ptcflow.tool(refund)
        self.tools: list[Tool] = [helper.as_tool(), refunder, counter]


def task_of(request: LLMRequest) -> str:
    return next(m.content for m in request.messages if m.role == "user")


def answers(request: LLMRequest) -> Any:
    """The child works CHILD_TURNS turns (counting once a turn before the last); the parent
    calls the child, then a refund, then counts forever (until a budget ends it)."""
    task = task_of(request)
    turns = sum(1 for m in request.messages if m.role == "assistant")
    if task.startswith("Help"):
        return (
            f'(call "count" {{:i {100 + turns}}})' if turns < CHILD_TURNS - 1 else "(return ctx/n)"
        )
    if task.startswith("Refund for"):  # the child counts, then refunds (asking), then answers
        if turns == 0:
            return '(call "count" {:i 100})'
        return '(return (call "refund" {:amount 5}))' if turns == 1 else "(return ctx/n)"
    done = sum(1 for m in request.messages if m.role == "tool")
    if done == 0:
        return ScriptedLLM.tool_call("helper", n=7)
    if done == 1:
        return ScriptedLLM.tool_call("refund", amount=500)
    return ScriptedLLM.tool_call("count", i=done)


async def straight(
    limits: UsageLimits, *, in_child: bool = False, **runtime: Any
) -> tuple[Step, ScriptedLLM, Tools]:
    """The run without a pause (the refund does not ask)."""
    tools = Tools(ask=False, in_child=in_child)
    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm, **runtime) as rt:
        with anyio.fail_after(20):
            step = await rt.run(ReAct(), "go", tools=tools.tools, usage_limits=limits)
    return step, llm, tools


async def paused_then_resumed(
    limits: UsageLimits | None,
    resume_limits: UsageLimits,
    *,
    in_child: bool = False,
    **runtime: Any,
) -> tuple[Step, Step, ScriptedLLM, Tools]:
    """The run paused at the refund (with ``limits``, or none), resumed in another Runtime
    (from the Step as JSON) with ``resume_limits``."""
    tools = Tools(ask=True, in_child=in_child)
    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm, **runtime) as rt:
        with anyio.fail_after(20):
            paused = await rt.run(ReAct(), "go", tools=tools.tools, usage_limits=limits)
    assert paused.paused, paused
    back = msgspec.json.decode(msgspec.json.encode(paused), type=Step)
    (pending,) = back.pending
    async with Runtime(llm=llm, **runtime) as rt:
        with anyio.fail_after(20):
            done = await rt.resume(
                back,
                {pending.call_id: Approve()},
                agent=ReAct(),
                tools=tools.tools,
                usage_limits=resume_limits,
            )
    return paused, done, llm, tools


def over(step: Step) -> dict[str, Any]:
    assert not step.ok and not step.paused and step.error is not None, step
    assert step.error.type == "usage_limit_exceeded", step.error
    details: dict[str, Any] = step.error.details
    return details


@pytest.mark.parametrize(
    "limits",
    [
        UsageLimits(max_requests=9),
        UsageLimits(max_tool_calls=6),
        UsageLimits(max_total_tokens=4_960),
        UsageLimits(max_input_tokens=4_900),
        UsageLimits(max_output_tokens=75),
    ],
    ids=["requests", "tool_calls", "total_tokens", "input_tokens", "output_tokens"],
)
@pytest.mark.parametrize("budget_before", [True, False], ids=["budget-before", "resume-only"])
async def test_the_budget_ends_a_resumed_run_where_it_would_have_without_the_pause(
    limits: UsageLimits, budget_before: bool
) -> None:
    want, want_llm, want_tools = await straight(limits)
    paused, got, llm, tools = await paused_then_resumed(limits if budget_before else None, limits)
    assert paused.turns == 2  # the parent's own calls: the child's are not on its Step
    assert over(got) == over(want)
    assert llm.calls == want_llm.calls
    assert tools.counted == want_tools.counted and tools.refunds == want_tools.refunds == [500]


@pytest.mark.parametrize(
    "limits",
    [
        UsageLimits(max_requests=7),
        UsageLimits(max_tool_calls=6),
        UsageLimits(max_total_tokens=3_300),  # passed by the child's next response
        UsageLimits(max_total_tokens=4_960),  # by the parent's
    ],
    ids=["requests", "tool_calls", "tokens-in-child", "tokens-in-parent"],
)
async def test_a_child_that_paused_counts_on_in_place(limits: UsageLimits) -> None:
    """The refund that asks is the child's: the child pauses after a model call and a tool
    call of its own, and resumes in place."""
    want, want_llm, want_tools = await straight(limits, in_child=True)
    paused, got, llm, tools = await paused_then_resumed(limits, limits, in_child=True)
    assert paused.paused_run is not None and list(paused.paused_run.children) == ["call_1_0"]
    assert over(got) == over(want)
    assert llm.calls == want_llm.calls
    assert tools.counted == want_tools.counted and tools.refunds == want_tools.refunds
    assert tools.refunds[0] == 5  # the child's, approved


async def test_a_paused_run_journals_what_its_whole_tree_used() -> None:
    tools = Tools(ask=True)
    seen: list[Signal] = []

    class Bus:
        def publish(self, signal: Signal) -> None:
            seen.append(signal)

    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm, bus=Bus()) as rt:
        paused = await rt.run(ReAct(), "go", tools=tools.tools)
    (signal,) = [s for s in seen if s.type == REQUEST_PAUSED and s.run_id == paused.run_id]
    spent = signal.data.spent
    assert spent is not None
    assert spent.requests == 2 + CHILD_TURNS == llm.calls
    # the child's call, its counts, and the refund (started: it waits for its decision)
    assert spent.tool_calls == 1 + (CHILD_TURNS - 1) + 1
    assert spent.usage == sum((s.data.usage for s in seen if s.type == USAGE), Usage())
    assert spent.cost_usd == 0.0 and set(spent.unpriced) == {"scripted"}
    # rebuilt from the journal alone (a bus recording), it resumes with the same counts
    rebuilt = PausedRun.from_journal(seen, run_id=paused.run_id)
    async with Runtime(llm=llm) as rt:
        done = await rt.resume(
            rebuilt,
            {paused.pending[0].call_id: Approve()},
            agent=ReAct(),
            tools=tools.tools,
            usage_limits=UsageLimits(max_requests=2 + CHILD_TURNS + 1),
        )
    assert over(done) == {"budget": "max_requests", "used": 2 + CHILD_TURNS + 2, "allowed": 6}
    assert tools.refunds == [500] and tools.counted == [100, 101, 2]  # the child: 100, 101


async def test_a_cost_budget_counts_the_dollars_spent_before_the_pause() -> None:
    prices = {"scripted": ModelPrice(input_per_mtok=100.0, output_per_mtok=5_000.0)}
    limits = UsageLimits(max_cost_usd=0.9)
    want, want_llm, want_tools = await straight(limits, prices=prices)
    _, got, llm, tools = await paused_then_resumed(limits, limits, prices=prices)
    assert over(got) == over(want)
    assert over(want)["budget"] == "max_cost_usd"
    assert llm.calls == want_llm.calls and tools.counted == want_tools.counted
    # the Step's cost is the run's own calls (as its usage), those before the pause too
    assert got.usage == want.usage
    assert got.cost_usd == pytest.approx(want.cost_usd)


async def test_a_cost_budget_given_only_to_the_resume_prices_what_was_used_before() -> None:
    """The run was not priced when it paused: the resume prices the tokens each model used
    before the pause with its own table."""
    prices = {"scripted": ModelPrice(input_per_mtok=100.0, output_per_mtok=5_000.0)}
    limits = UsageLimits(max_cost_usd=0.9)
    want, want_llm, _ = await straight(limits, prices=prices)
    tools = Tools(ask=True)
    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm) as rt:  # no prices, no budget
        paused = await rt.run(ReAct(), "go", tools=tools.tools)
    assert paused.paused and paused.cost_usd is None
    async with Runtime(llm=llm, prices=prices) as rt:
        got = await rt.resume(
            paused,
            {paused.pending[0].call_id: Approve()},
            agent=ReAct(),
            tools=tools.tools,
            usage_limits=limits,
        )
    assert over(got) == over(want) and llm.calls == want_llm.calls


async def test_a_cost_budget_with_no_price_for_what_was_used_before_ends_the_resume() -> None:
    tools = Tools(ask=True)
    llm = ScriptedLLM(answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(ReAct(), "go", tools=tools.tools)
    calls = llm.calls
    other = {"another-model": ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0)}
    async with Runtime(llm=llm, prices=other) as rt:
        got = await rt.resume(
            paused,
            {paused.pending[0].call_id: Approve()},
            agent=ReAct(),
            tools=tools.tools,
            usage_limits=UsageLimits(max_cost_usd=10.0),
        )
    assert not got.ok and got.error is not None and got.error.type == "price_unknown"
    assert "scripted" in got.error.message
    assert llm.calls == calls and tools.refunds == []  # nothing more was done


async def test_a_resume_already_past_its_budget_ends_at_once() -> None:
    """A budget given to the resume that the tree had passed before the pause: the run
    ends with the error, the approved call not made."""
    _, got, llm, tools = await paused_then_resumed(None, UsageLimits(max_total_tokens=10))
    assert over(got)["budget"] == "max_total_tokens"
    assert llm.calls == 2 + CHILD_TURNS and tools.refunds == []


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (UsageLimits(max_requests=8), {"budget": "max_requests", "used": 9, "allowed": 8}),
        (UsageLimits(max_tool_calls=7), {"budget": "max_tool_calls", "used": 8, "allowed": 7}),
    ],
    ids=["requests", "tool_calls"],
)
async def test_a_subagent_parent_counts_its_sub_agents_on(
    limits: UsageLimits, expected: dict[str, Any]
) -> None:
    """A SubAgent whose program calls a sub-agent, then a refund that asks."""

    def sub_answers(request: LLMRequest) -> Any:
        task = task_of(request)
        if task.startswith("Help"):
            return answers(request)
        turns = sum(1 for m in request.messages if m.role == "assistant")
        if turns == 0:
            return '(call "helper" {:n 7})'
        if turns == 1:
            return '(call "refund" {:amount 500})'
        return f'(call "count" {{:i {turns}}})'

    async def run(ask: bool, limits: UsageLimits) -> tuple[Step, ScriptedLLM, Tools]:
        tools = Tools(ask=ask)
        llm = ScriptedLLM(sub_answers)
        agent = SubAgent(prompt="Work", signature=":int", tools=tools.tools, max_turns=50)
        async with Runtime(llm=llm) as rt:
            step = await rt.run(agent, usage_limits=limits)
            if step.paused:
                back = msgspec.json.decode(msgspec.json.encode(step), type=Step)
                step = await rt.resume(
                    back, {back.pending[0].call_id: Approve()}, agent=agent, usage_limits=limits
                )
        return step, llm, tools

    want, want_llm, want_tools = await run(False, limits)
    got, llm, tools = await run(True, limits)
    assert over(got) == over(want) == expected
    assert llm.calls == want_llm.calls
    assert tools.counted == want_tools.counted
