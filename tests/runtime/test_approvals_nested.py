"""Approvals inside child runs: an agent used as a tool (from ReAct's native calls, from a
program, two levels deep) and a ``RunChild``, whose pending call surfaces on the top-level
Step and whose run resumes in place."""

from __future__ import annotations

import datetime
from typing import Any

import msgspec
import pytest

import ptcflow
from ptcflow import ReAct, SubAgent
from ptcflow.core import AlreadyDecidedError, PausedRun, PauseMismatchError, UnknownCallError
from ptcflow.directives import RunChild, ToolExec
from ptcflow.runtime import LLMRequest, Runtime, Step, _resume
from ptcflow.signals import (
    APPROVAL_EXPIRED,
    APPROVAL_REQUESTED,
    APPROVAL_RESOLVED,
    REQUEST_RESUMED,
    TOOL_RESULT,
    TOOL_STARTED,
    Signal,
    SignalBus,
    read_journal,
    record_journal,
)
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import Tool

from .support import Probe, terminals

pytestmark = pytest.mark.anyio


class Bus:
    """Every signal published on the Runtimes it is given to."""

    def __init__(self) -> None:
        self.signals: list[Signal] = []

    def publish(self, signal: Signal) -> None:
        self.signals.append(signal)

    def of(self, type: str, run_id: str | None = None) -> list[Signal]:
        return [
            s for s in self.signals if s.type == type and (run_id is None or s.run_id == run_id)
        ]


class Refunds:
    """A refund tool that asks first, and the refunds it made."""

    def __init__(self) -> None:
        self.made: list[int] = []

        def refund(amount: int) -> str:
            """Refund an amount."""
            self.made.append(amount)
            return f"refunded {amount}"

        self.tool: Tool = ptcflow.tool(refund, requires_approval=True)


def task_of(request: LLMRequest) -> str:
    return next(m.content for m in request.messages if m.role == "user")


def refunder(refunds: Refunds, name: str = "refunder") -> SubAgent:
    return SubAgent(
        prompt="Refund {{amount}}",
        signature="(amount :int) -> {done :string}",
        name=name,
        tools={"refund": refunds.tool},
    )


def roundtrip(step: Step) -> Step:
    """The paused Step as another process reads it back."""
    return msgspec.json.decode(msgspec.json.encode(step), type=Step)


# -- an agent used as a tool, called natively by ReAct -------------------------------------


def react_answers(request: LLMRequest) -> Any:
    if task_of(request).startswith("Refund"):
        if len(request.messages) < 4:  # system, task: the first program
            return '(return {:done (call "refund" {:amount ctx/amount})})'
        return '(return {:done (str "not done: " (:message ctx/fail))})'
    if len(request.messages) < 3:
        return ScriptedLLM.tool_call("refunder", amount=5)
    return "answer: " + request.messages[-1].content


async def test_a_childs_pending_call_surfaces_on_the_top_level_step() -> None:
    refunds = Refunds()
    llm = ScriptedLLM(react_answers)
    tools = {"refunder": refunder(refunds).as_tool()}
    async with Runtime(llm=llm) as rt:
        step = await rt.run(ReAct(), "please refund", tools=tools)
    assert step.paused and not step.ok and step.reason == "paused"
    (pending,) = step.pending
    child_run = f"{step.run_id}/call_1_0"
    assert pending.call_id == f"call_1_0/{child_run}/program/1/tool/0"
    assert pending.tool == "refund" and pending.arguments == {"amount": 5}
    assert pending.agent == ("react", "refunder")
    assert pending.run_id == child_run
    assert step.paused_run is not None
    assert list(step.paused_run.children) == ["call_1_0"]
    assert step.paused_run.children["call_1_0"].run_id == child_run
    assert refunds.made == []


async def test_approving_a_childs_call_resumes_the_child_in_place() -> None:
    refunds = Refunds()
    llm = ScriptedLLM(react_answers)
    bus = Bus()
    tools = {"refunder": refunder(refunds).as_tool()}
    async with Runtime(llm=llm, bus=bus) as rt:
        paused = await rt.run(ReAct(), "please refund", tools=tools)
    asked = len(llm.requests)
    (pending,) = paused.pending
    async with Runtime(llm=llm, bus=bus) as rt:  # a new process, from the Step as data
        step = await rt.resume(
            roundtrip(paused), {pending.call_id: ptcflow.Approve()}, agent=ReAct(), tools=tools
        )
    assert step.ok and not step.paused, step.error
    assert step.run_id == paused.run_id
    assert step.value == 'answer: {"ok":true,"result":{"done":"refunded 5"}}'
    assert refunds.made == [5]
    # in place: the child's model was not asked again, only the parent's, once
    assert len(llm.requests) == asked + 1
    assert task_of(llm.requests[-1]) == "please refund"
    child_run = f"{paused.run_id}/call_1_0"
    (resolved,) = bus.of(APPROVAL_RESOLVED)
    assert resolved.run_id == child_run and resolved.data.decision == "approve"
    assert resolved.call_id == f"{child_run}/program/1/tool/0"
    resumed = {s.run_id: s.data.decided for s in bus.of(REQUEST_RESUMED)}
    assert resumed == {
        paused.run_id: (pending.call_id,),
        child_run: (f"{child_run}/program/1/tool/0",),
    }
    # the parent's call started once, and ended once
    assert len(bus.of(TOOL_STARTED, paused.run_id)) == 1
    assert len(terminals(bus.of(TOOL_RESULT, paused.run_id), "call_1_0")) == 1
    assert len(bus.of(APPROVAL_REQUESTED)) == 1


async def test_denying_a_childs_call_is_a_tool_error_the_childs_model_reads() -> None:
    refunds = Refunds()
    llm = ScriptedLLM(react_answers)
    tools = {"refunder": refunder(refunds).as_tool()}
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(ReAct(), "please refund", tools=tools)
        (pending,) = paused.pending
        step = await rt.resume(
            paused, {pending.call_id: ptcflow.Deny("over the limit")}, agent=ReAct(), tools=tools
        )
    assert step.ok, step.error
    assert refunds.made == []
    child_turn = llm.requests[-2]  # the child's second turn, then the parent's answer
    assert task_of(child_turn) == "Refund 5"
    said = child_turn.messages[-1].content
    assert "approval_denied" in said and "over the limit" in said
    assert "not done: " in step.value and "over the limit" in step.value


async def test_a_resumed_pause_is_checked_against_the_calls_of_its_children() -> None:
    refunds = Refunds()
    tools = {"refunder": refunder(refunds).as_tool()}
    async with Runtime(llm=ScriptedLLM(react_answers)) as rt:
        paused = await rt.run(ReAct(), "please refund", tools=tools)
        (pending,) = paused.pending
        bare = pending.call_id.removeprefix("call_1_0/")  # the child's own id: not the caller's
        with pytest.raises(UnknownCallError, match="the calls that wait are"):
            await rt.resume(paused, {bare: ptcflow.Approve()}, agent=ReAct(), tools=tools)
        assert refunds.made == []


async def test_a_childs_call_past_its_approval_timeout_expires_in_the_child(
    monkeypatch: Any,
) -> None:
    @ptcflow.tool(requires_approval=True, approval_timeout=60)
    def refund(amount: int) -> str:
        """Refund an amount."""
        raise AssertionError("never approved")

    child = SubAgent(
        prompt="Refund {{amount}}",
        signature="(amount :int) -> {done :string}",
        name="refunder",
        tools={"refund": refund},
    )
    tools = {"refunder": child.as_tool()}
    llm = ScriptedLLM(react_answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(ReAct(), "please refund", tools=tools)
        (pending,) = paused.pending
        assert pending.expires_at is not None
        later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=2)
        monkeypatch.setattr(_resume, "utcnow", lambda: later)
        step = await rt.resume(paused, {}, agent=ReAct(), tools=tools)
    assert step.ok, step.error
    said = llm.requests[-2].messages[-1].content  # the child's second turn
    assert task_of(llm.requests[-2]) == "Refund 5" and APPROVAL_EXPIRED in said


async def test_a_nested_pause_rebuilt_from_the_journal_alone_resumes(tmp_path: Any) -> None:
    refunds = Refunds()
    llm = ScriptedLLM(react_answers)
    tools = {"refunder": refunder(refunds).as_tool()}
    path = tmp_path / "run.jsonl"
    bus = SignalBus()
    async with record_journal(bus, path), Runtime(llm=llm, bus=bus) as rt:
        step = await rt.run(ReAct(), "please refund", tools=tools)
    paused = PausedRun.from_journal(read_journal(path))
    assert step.paused_run is not None
    assert list(paused.children) == ["call_1_0"]
    assert paused.children["call_1_0"].run_id == step.paused_run.children["call_1_0"].run_id
    async with Runtime(llm=llm) as rt:
        done = await rt.resume(
            paused, {step.pending[0].call_id: ptcflow.Approve()}, agent=ReAct(), tools=tools
        )
    assert done.ok and refunds.made == [5]


# -- from a program, two levels deep -------------------------------------------------------


def tree(refunds: Refunds) -> SubAgent:
    """root's program calls mid twice (pmap); mid calls leaf; leaf's refund asks first."""
    leaf = refunder(refunds, name="leaf")
    mid = SubAgent(
        prompt="Handle {{amount}}",
        signature="(amount :int) -> {done :string}",
        name="mid",
        tools={"leaf": leaf.as_tool()},
    )
    return SubAgent(
        prompt="Refund both", signature="{done :string}", name="root", tools={"mid": mid.as_tool()}
    )


def tree_answers(request: LLMRequest) -> Any:
    task = task_of(request)
    if task.startswith("Refund both"):
        return (
            '(return {:done (str/join "," (pmap (fn [a] (:done (call "mid" {:amount a})))'
            " [10 20]))})"
        )
    if task.startswith("Handle"):
        return '(return (call "leaf" {:amount ctx/amount}))'
    if len(request.messages) < 4:
        return '(return {:done (call "refund" {:amount ctx/amount})})'
    return '(return {:done (str "refused: " (:message ctx/fail))})'


async def test_calls_two_levels_down_a_program_pause_and_resume_one_by_one() -> None:
    refunds = Refunds()
    llm = ScriptedLLM(tree_answers)
    root = tree(refunds)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(root)
    assert paused.paused
    first, second = sorted(paused.pending, key=lambda p: p.arguments["amount"])
    assert first.arguments == {"amount": 10} and second.arguments == {"amount": 20}
    assert first.agent == second.agent == ("root", "mid", "leaf")
    run_id = paused.run_id
    assert first.call_id.startswith(f"{run_id}/program/1/tool/0/")
    assert second.call_id.startswith(f"{run_id}/program/1/tool/1/")
    assert paused.paused_run is not None
    mid_0, mid_1 = sorted(paused.paused_run.children)  # as the program kind keeps them
    assert (mid_0, mid_1) == (f"{run_id}/program/1/tool/0", f"{run_id}/program/1/tool/1")
    assert len(paused.paused_run.children[mid_0].children) == 1  # mid's paused leaf
    asked = len(llm.requests)

    async with Runtime(llm=llm) as rt:
        half = await rt.resume(roundtrip(paused), {first.call_id: ptcflow.Approve()}, agent=root)
        assert half.paused and [p.call_id for p in half.pending] == [second.call_id]
        assert refunds.made == [10]
        assert len(llm.requests) == asked  # every program re-ran from its record
        with pytest.raises(AlreadyDecidedError, match="decided already"):
            await rt.resume(half, {first.call_id: ptcflow.Approve()}, agent=root)
        step = await rt.resume(
            half, {second.call_id: ptcflow.Deny("twice is too much")}, agent=root
        )
    assert step.ok, step.error
    done = step.value["done"]
    assert done.startswith("refunded 10,refused: ") and "twice is too much" in done
    assert refunds.made == [10]  # the approved refund was not repeated
    leaf_turn = llm.requests[-1]
    assert (
        task_of(leaf_turn) == "Refund 20" and "twice is too much" in leaf_turn.messages[-1].content
    )


async def test_approving_both_at_once_finishes_the_whole_tree() -> None:
    refunds = Refunds()
    llm = ScriptedLLM(tree_answers)
    root = tree(refunds)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(root)
        decisions = {p.call_id: ptcflow.Approve() for p in paused.pending}
        step = await rt.resume(paused, decisions, agent=root)
    assert step.ok and step.value == {"done": "refunded 10,refunded 20"}
    assert sorted(refunds.made) == [10, 20]
    assert step.trace is not None  # the children's Steps are on the caller's trace
    calls = step.trace.turns[0].execution.tool_calls
    assert [c.child is not None and c.child.ok for c in calls] == [True, True]


async def test_a_paused_child_kept_under_another_call_is_refused() -> None:
    refunds = Refunds()
    root = tree(refunds)
    async with Runtime(llm=ScriptedLLM(tree_answers)) as rt:
        paused = await rt.run(root)
    assert paused.paused_run is not None
    children = paused.paused_run.children
    a, b = sorted(children)
    swapped = msgspec.structs.replace(
        paused.paused_run, children={a: children[b], b: children[a]}
    ).signed(None)
    async with Runtime(llm=ScriptedLLM(tree_answers)) as rt:
        with pytest.raises(PauseMismatchError, match="which that call did not run"):
            await rt.resume(swapped, {}, agent=root)
    assert refunds.made == []


async def test_a_child_agent_changed_since_the_pause_fails_its_call_and_runs_nothing() -> None:
    refunds = Refunds()
    llm = ScriptedLLM(tree_answers)
    async with Runtime(llm=llm) as rt:
        paused = await rt.run(tree(refunds))
    changed = SubAgent(  # the leaf got another tool: its paused run is not this agent's
        prompt="Refund {{amount}}",
        signature="(amount :int) -> {done :string}",
        name="leaf",
        tools={"refund": refunds.tool, "note": ptcflow.tool(lambda text: text, name="note")},
    )
    mid = SubAgent(
        prompt="Handle {{amount}}",
        signature="(amount :int) -> {done :string}",
        name="mid",
        tools={"leaf": changed.as_tool()},
    )
    root = SubAgent(
        prompt="Refund both", signature="{done :string}", name="root", tools={"mid": mid.as_tool()}
    )
    asked = len(llm.requests)
    async with Runtime(llm=llm) as rt:
        step = await rt.resume(
            paused, {p.call_id: ptcflow.Approve() for p in paused.pending}, agent=root
        )
    assert refunds.made == []  # approved, but of another agent's run: not performed
    told = [r for r in llm.requests[asked:] if task_of(r).startswith("Handle")]
    assert len(told) == 2
    for request in told:  # each mid's model reads why its call failed
        said = request.messages[-1].content
        assert "could not resume its paused agent run" in said
        assert "belongs to another agent" in said
    assert step.paused  # the leaves mid called again ask again, under new ids
    assert not {p.call_id for p in step.pending} & {p.call_id for p in paused.pending}


# -- RunChild --------------------------------------------------------------------------------


async def test_a_run_child_directive_pauses_and_resumes_its_child_in_place() -> None:
    refunds = Refunds()
    helper = Probe([ToolExec(id="t", tool_name="refund", arguments={"amount": 3})], name="helper")
    parent = Probe([RunChild(id="c1", agent="helper", input={"task": "refund"})])
    tools = {"refund": refunds.tool}
    bus = Bus()
    async with Runtime(agents={"helper": helper}, tools=tools, bus=bus) as rt:
        paused = await rt.run(parent, "x")
        assert paused.paused
        (pending,) = paused.pending
        assert pending.call_id == "c1/t" and pending.agent == ("probe", "helper")
        step = await rt.resume(paused, {"c1/t": ptcflow.Approve()}, agent=parent)
    assert step.ok, step.error
    assert refunds.made == [3]
    assert len(helper.infos) == 2  # started once, rebuilt once (not started again)
    assert len(bus.of(TOOL_STARTED, paused.run_id)) == 1
    (result,) = terminals(bus.of(TOOL_RESULT, paused.run_id), "c1")
    assert result.data.result.payload == ["refunded 3"]  # the child's value, as ever
