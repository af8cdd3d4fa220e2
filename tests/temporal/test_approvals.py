"""Tool calls that wait for a person on Temporal: the workflow waits (no worker held) for
the ``ptcflow.decide`` update, the ``ptcflow.pending`` query lists what waits, bad
decisions are refused, the wait may expire, and workers lost while it waits lose nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.client import WorkflowUpdateFailedError

import ptcflow
from ptcflow.core import AlreadyDecidedError, NotPausedError, UnknownCallError, WrongDecisionError
from ptcflow.errors import UsageError
from ptcflow.signals import PendingCall
from ptcflow.temporal import (
    DevServer,
    TemporalOptions,
    TemporalRunHandle,
    TemporalRuntime,
    check_determinism,
    connect,
    open_worker,
)
from ptcflow.temporal._approvals import Approvals, ChildWaits, Refusal, route
from ptcflow.temporal._refs import tool_ref
from temporal import approvals
from temporal.approvals import large, lookup, refund, refunder, wire

pytestmark = pytest.mark.anyio


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The side-effect log of the tools (one line per refund or wire)."""
    path = tmp_path / "effects.log"
    path.touch()
    monkeypatch.setenv("PTCFLOW_TEST_LOG", str(path))
    return path


@pytest.fixture
async def approval_worker(client: Any, queue: str) -> AsyncIterator[object]:
    """An in-process worker with the approval tests' model."""
    async with open_worker(client, task_queue=queue, llm=approvals.model()) as w:
        yield w


def _effects(log: Path) -> list[str]:
    return log.read_text().splitlines()


async def _waiting(handle: TemporalRunHandle, n: int = 1) -> tuple[PendingCall, ...]:
    """Until ``n`` calls wait in the run (the query answers while it waits)."""
    with anyio.fail_after(30):
        while True:
            pending = await handle.pending()
            if len(pending) >= n:
                return pending
            await anyio.sleep(0.05)


async def test_react_parallel_calls_one_waits_then_approved(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
        handle = await trt.start(refunder(), "refund both", record=True)
        (call,) = await _waiting(handle)
        assert (call.tool, call.arguments, call.kind) == ("refund", {"amount": 500}, "approval")
        assert call.reason == "requires approval" and call.agent == ("refunder",)
        queried = await client.get_workflow_handle(handle.run_id).query(
            "ptcflow.pending", result_type=tuple[PendingCall, ...]
        )
        assert queried == (call,)  # the workflow's query lists the same call
        assert _effects(log) == ["refund call_small 50"]  # the small one ran; nothing else
        step = await trt.resume(handle, {call.call_id: ptcflow.Approve()})
    assert step.ok, step.error
    assert step.value == (
        'report: {"ok":true,"result":"refunded 50"} | {"ok":true,"result":"refunded 500"}'
    )
    assert sorted(_effects(log)) == ["refund call_large 500", "refund call_small 50"]
    types = [s.type for s in step.signals if s.call_id == call.call_id]
    assert types == [
        "ai.tool.started",
        "ai.approval.requested",
        "ai.approval.resolved",
        "ai.tool.result",
    ]
    assert await handle.pending() == ()


async def test_react_denied_call_is_a_tool_error_the_model_reads(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
        handle = await trt.start(refunder(), "refund both", record=True)
        (call,) = await _waiting(handle)
        assert await handle.decide({call.call_id: ptcflow.Deny("too large")}) == (call.call_id,)
        step = await handle.wait()
    assert step.ok, step.error
    assert "approval_denied" in str(step.value) and "too large" in str(step.value)
    assert _effects(log) == ["refund call_small 50"]  # the large refund never ran
    (resolved,) = [s for s in step.signals if s.type == "ai.approval.resolved"]
    assert resolved.call_id == call.call_id and resolved.data.decision == "deny"


async def test_bad_decisions_are_refused_with_typed_errors(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
        handle = await trt.start(refunder(), "refund both")
        (call,) = await _waiting(handle)
        with pytest.raises(UnknownCallError, match="no call 'nope' waits"):
            await handle.decide({"nope": ptcflow.Approve()})
        with pytest.raises(WrongDecisionError, match="no decisions given"):
            await handle.decide({})
        assert await handle.pending() == (call,)  # refusals change nothing
        await handle.decide({call.call_id: ptcflow.Supply("refunded by hand")})
        with pytest.raises(AlreadyDecidedError, match="decided already"):
            await handle.decide({call.call_id: ptcflow.Approve()})
        step = await handle.wait()
        assert step.ok and "refunded by hand" in str(step.value), step.error
        with pytest.raises(NotPausedError, match="waits for no decision"):
            await handle.decide({call.call_id: ptcflow.Approve()})
    assert _effects(log) == ["refund call_small 50"]  # supplied: not run


async def test_a_deferred_call_takes_a_supplied_result_not_an_approval(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[lookup]) as trt:
        handle = await trt.start(refunder(), "look it up")
        (call,) = await _waiting(handle)
        assert (call.kind, call.reason) == ("deferred", "deferred tool")
        with pytest.raises(WrongDecisionError, match="deferred tool 'lookup'"):
            await handle.decide({call.call_id: ptcflow.Approve()})
        step = await trt.resume(handle, {call.call_id: ptcflow.Supply({"status": "shipped"})})
    assert step.ok and "shipped" in str(step.value), step.error


async def test_an_approval_timeout_ends_the_wait_with_approval_expired(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[wire]) as trt:
        handle = await trt.start(refunder(), "wire it", record=True)
        (call,) = await _waiting(handle)
        assert call.expires_at is not None
        step = await handle.wait()
        with pytest.raises(NotPausedError):  # too late: the run went on, and ended
            await handle.decide({call.call_id: ptcflow.Approve()})
    assert step.ok, step.error
    assert "approval_expired" in str(step.value)
    assert _effects(log) == []
    (resolved,) = [s for s in step.signals if s.type == "ai.approval.resolved"]
    assert resolved.data.decision == "expired"
    history = await client.get_workflow_handle(step.run_id).fetch_history()
    assert await check_determinism([history]) == 1  # the expiry's timer replays


async def test_time_waiting_does_not_count_against_the_runs_timeout(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    """The run may take 4 s; its call waits longer than that for its decision (the test
    waits until 5 s have passed since the run started), and the run still ends well."""
    async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
        began = anyio.current_time()
        handle = await trt.start(refunder(), "refund both", timeout=4.0)
        (call,) = await _waiting(handle)
        await anyio.sleep(max(0.0, began + 5.0 - anyio.current_time()))
        assert await handle.pending() == (call,)
        step = await trt.resume(handle, {call.call_id: ptcflow.Approve()})
    assert step.ok, step.error
    assert sorted(_effects(log)) == ["refund call_large 500", "refund call_small 50"]


async def test_a_programs_pmap_waits_for_one_call_and_runs_no_call_twice(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(approvals.program_refunder(), {"who": "alice"}, record=True)
        (call,) = await _waiting(handle)
        assert call.call_id.endswith("/tool/1") and call.arguments == {"amount": 500}
        assert sorted(_effects(log)) == [
            f"refund {call.call_id[: -len('1')]}0 50",
            f"refund {call.call_id[: -len('1')]}2 70",
        ]
        step = await trt.resume(handle.run_id, {call.call_id: ptcflow.Approve()})
    assert step.ok, step.error
    assert step.value == ["refunded 50", "refunded 500", "refunded 70"]
    assert len(_effects(log)) == 3  # each refund once
    assert [s.type for s in step.signals].count("ai.tool.result") == 3
    history = await client.get_workflow_handle(step.run_id).fetch_history()
    assert await check_determinism([history]) == 1  # the update and the rounds replay


async def test_a_programs_denied_call_is_an_error_the_program_sees(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(approvals.program_refunder(), {"who": "bob"}, record=True)
        (call,) = await _waiting(handle)
        step = await trt.resume(handle, {call.call_id: ptcflow.Deny("ask finance")})
    assert step.ok and (step.value, step.turns) == ("done", 2), step.error  # a second turn
    assert len(_effects(log)) == 2  # the two small refunds, once each; never the large one
    results = [s for s in step.signals if s.type == "ai.tool.result" and s.call_id == call.call_id]
    (denied,) = results
    assert denied.data.result.error.type == "approval_denied"
    assert "ask finance" in denied.data.result.error.message


async def test_a_call_waiting_in_an_agent_used_as_a_tool_is_decided_on_the_top_level_handle(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    """An orchestrator's tool call runs the refund agent (a child workflow) whose program's
    refunds of 500 and 700 wait: the top-level handle lists them (prefixed ids, agent
    path) and decides them; the wait, longer than the orchestrator's 4 s, does not count
    against it."""
    tools = [approvals.refund_agent().as_tool()]
    async with TemporalRuntime(client=client, options=options, tools=tools) as trt:
        began = anyio.current_time()
        handle = await trt.start(approvals.orchestrator(), "refund carol", record=True, timeout=4.0)
        large, larger = await _waiting(handle, 2)
        child = f"{handle.run_id}/call_agent"
        for call in (large, larger):
            assert call.call_id.startswith("call_agent/") and call.tool == "refund"
            assert call.agent == ("orchestrator", "refund_agent") and call.run_id == child
        assert large.call_id.endswith("/tool/1") and larger.call_id.endswith("/tool/2")
        assert (large.arguments, larger.arguments) == ({"amount": 500}, {"amount": 700})
        queried = await client.get_workflow_handle(handle.run_id).query(
            "ptcflow.pending", result_type=tuple[PendingCall, ...]
        )
        assert queried == (large, larger)
        assert _effects(log)[0].endswith(" 50") and len(_effects(log)) == 1
        with pytest.raises(UnknownCallError, match="no call 'call_agent/nope' waits"):
            await handle.decide({"call_agent/nope": ptcflow.Approve()})
        with pytest.raises(WorkflowUpdateFailedError) as direct:  # the parent's own update
            await client.get_workflow_handle(handle.run_id).execute_update(
                "ptcflow.decide", {large.call_id: ptcflow.Approve()}
            )
        assert f"waits in child run {child}" in str(direct.value.cause)
        await anyio.sleep(max(0.0, began + 5.0 - anyio.current_time()))
        assert await handle.pending() == (large, larger)  # refusals and time changed nothing
        assert await handle.decide({large.call_id: ptcflow.Approve()}) == (large.call_id,)
        with pytest.raises(AlreadyDecidedError, match="decided already \\(approve\\)"):
            await handle.decide({large.call_id: ptcflow.Deny()})  # its batch still waits
        step = await trt.resume(handle, {larger.call_id: ptcflow.Supply("refunded by hand")})
        assert await handle.pending() == ()
    assert step.ok, step.error
    assert step.value == (
        'orchestrated: {"ok":true,"result":["refunded 50","refunded 500","refunded by hand"]}'
    )
    assert sorted(line.split()[-1] for line in _effects(log)) == ["50", "500"]  # once each
    for run_id in (handle.run_id, child):
        history = await client.get_workflow_handle(run_id).fetch_history()
        assert await check_determinism([history]) == 1


async def test_a_call_waiting_in_an_agent_a_program_calls_is_decided_on_the_top_level_handle(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    """The top-level run is a program calling the refund agent (a round of the program);
    the wait, longer than the run's 4 s, does not count against it."""
    async with TemporalRuntime(client=client, options=options) as trt:
        began = anyio.current_time()
        handle = await trt.start(approvals.delegator(), {"who": "dan"}, timeout=4.0)
        calls = await _waiting(handle, 2)
        for call in calls:
            assert call.agent == ("delegator", "refund_agent")
            assert call.run_id.startswith(handle.run_id + "/")
            assert call.run_id.endswith("/tool/0")
            assert call.call_id.startswith(call.run_id[len(handle.run_id) + 1 :] + "/")
        await anyio.sleep(max(0.0, began + 5.0 - anyio.current_time()))
        decisions = {c.call_id: ptcflow.Deny("ask finance") for c in calls}
        step = await trt.resume(handle, decisions)
    assert step.ok, step.error
    assert step.value == "done"  # the agent read the denials, and answered on its next turn
    assert len(_effects(log)) == 1  # the small one, once; never the large ones


async def test_a_call_waiting_in_a_strategys_child_run_is_decided_on_the_top_level_handle(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    """A ``RunChild`` (a strategy's child run, a child workflow) whose refund waits."""
    from temporal.agents import Delegate

    top = Delegate(
        inner=approvals.orchestrator(), agents={"refund_agent": "refunds a customer's orders"}
    )
    agents = {"refund_agent": refunder()}
    async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
        handle = await trt.start(top, "refund carol", agents=agents)
        (call,) = await _waiting(handle)
        assert call.call_id == "call_agent/call_large"
        assert call.agent == ("orchestrator", "refund_agent")
        assert call.run_id == f"{handle.run_id}/call_agent"
        step = await trt.resume(handle, {call.call_id: ptcflow.Approve()})
    assert step.ok, step.error
    assert "refunded 500" in str(step.value)
    assert sorted(_effects(log)) == ["refund call_large 500", "refund call_small 50"]


async def test_a_wait_does_not_reset_the_missions_turn_budget(
    client: Any, queue: str, options: TemporalOptions, log: Path
) -> None:
    """The workflow keeps its mission's turns while a call waits (locally, ``rt.resume``
    reads them back from the paused run's journal)."""
    llm = approvals.model()
    async with (
        open_worker(client, task_queue=queue, llm=llm),
        TemporalRuntime(client=client, options=options) as trt,
    ):
        handle = await trt.start(approvals.looping_refunder(), mission_limits={"turn_budget": 4})
        (call,) = await _waiting(handle)
        assert len(llm.requests) == 2
        step = await trt.resume(handle, {call.call_id: ptcflow.Approve()})
    assert _effects(log) == [f"refund {call.call_id} 500"]
    assert len(llm.requests) == 4  # 4 - 2 more, not 4
    assert step.fail is not None and step.fail.reason == "turn_budget_exceeded"


async def test_a_wait_does_not_reset_the_usage_budget(
    client: Any, queue: str, options: TemporalOptions, log: Path
) -> None:
    """The workflow keeps its usage meter while a call waits: the model calls and the tool
    call before the wait count on (locally, ``rt.resume`` reads them back from the paused
    run's journal: tests/runtime/test_resume_usage.py)."""
    llm = approvals.model()
    async with (
        open_worker(client, task_queue=queue, llm=llm),
        TemporalRuntime(client=client, options=options) as trt,
    ):
        handle = await trt.start(
            approvals.looping_refunder(), usage_limits=ptcflow.UsageLimits(max_requests=4)
        )
        (call,) = await _waiting(handle)
        assert len(llm.requests) == 2
        step = await trt.resume(handle, {call.call_id: ptcflow.Approve()})
    assert _effects(log) == [f"refund {call.call_id} 500"]
    assert len(llm.requests) == 4  # 4 - 2 more, not 4
    assert not step.ok and step.error is not None
    assert step.error.details == {"budget": "max_requests", "used": 5, "allowed": 4}


async def test_cancelling_an_orchestrator_whose_agent_waits_cancels_both(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    tools = [approvals.refund_agent().as_tool()]
    async with TemporalRuntime(client=client, options=options, tools=tools) as trt:
        handle = await trt.start(approvals.orchestrator(), "refund carol")
        call, _ = await _waiting(handle, 2)
        await handle.cancel()
        step = await handle.wait()
        assert await handle.pending() == ()
        child = trt.handle(call.run_id)
        with anyio.fail_after(20):
            child_step = await child.wait()
        with pytest.raises(NotPausedError):
            await handle.decide({call.call_id: ptcflow.Approve()})
    assert not step.ok and step.reason == "cancelled", step
    assert not child_step.ok and child_step.reason == "cancelled", child_step
    assert len(_effects(log)) == 1  # the large refunds never ran


async def test_cancelling_a_run_that_waits_ends_it_cancelled_and_clears_the_list(
    client: Any, approval_worker: Any, options: TemporalOptions, log: Path
) -> None:
    async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
        handle = await trt.start(refunder(), "refund both")
        await _waiting(handle)
        await handle.cancel()
        step = await handle.wait()
        assert await handle.pending() == ()
    assert not step.ok and step.reason == "cancelled", step
    assert _effects(log) == ["refund call_small 50"]


@pytest.mark.slow
async def test_a_worker_killed_while_a_call_waits_loses_nothing(
    dev_server: DevServer, queue: str, tmp_path: Path
) -> None:
    """The run waits for a decision with no worker at all (its only worker is killed with
    SIGKILL while the call waits); a new worker takes the decision and finishes the run:
    each refund ran once, and the decision was applied once."""
    from temporal.test_durability import WorkerProcess

    log = tmp_path / "effects.log"
    log.touch()
    client = await connect(dev_server.address)
    options = TemporalOptions(task_queue=queue, heartbeat_timeout_ms=1_000)
    extra = ("--llm", "temporal.approvals:model")
    first = WorkerProcess(dev_server.address, queue, log, *extra)
    second = None
    try:
        async with TemporalRuntime(client=client, options=options, tools=[refund]) as trt:
            handle = await trt.start(refunder(), "refund both", record=True)
            (call,) = await _waiting(handle)
            first.kill()
            assert await handle.pending() == (call,)  # the server answers, no worker needed
            second = WorkerProcess(dev_server.address, queue, log, *extra)
            with anyio.fail_after(60):
                step = await trt.resume(handle, {call.call_id: ptcflow.Approve()})
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert step.ok, step.error
    assert sorted(_effects(log)) == ["refund call_large 500", "refund call_small 50"]
    types = [s.type for s in step.signals]
    assert types.count("ai.approval.requested") == types.count("ai.approval.resolved") == 1
    assert types.count("ai.tool.result") == 2


@pytest.mark.slow
async def test_a_worker_killed_while_an_agents_call_waits_loses_nothing(
    dev_server: DevServer, queue: str, tmp_path: Path
) -> None:
    """The orchestrator and its refund agent wait with no worker at all (killed with
    SIGKILL); a new worker takes the decision sent through the top-level handle."""
    from temporal.test_durability import WorkerProcess

    log = tmp_path / "effects.log"
    log.touch()
    client = await connect(dev_server.address)
    options = TemporalOptions(task_queue=queue, heartbeat_timeout_ms=1_000)
    extra = ("--llm", "temporal.approvals:model")
    tools = [approvals.refund_agent().as_tool()]
    first = WorkerProcess(dev_server.address, queue, log, *extra)
    second = None
    try:
        async with TemporalRuntime(client=client, options=options, tools=tools) as trt:
            handle = await trt.start(approvals.orchestrator(), "refund carol")
            calls = await _waiting(handle, 2)
            first.kill()
            assert await handle.pending() == calls  # the server answers, no worker needed
            second = WorkerProcess(dev_server.address, queue, log, *extra)
            with anyio.fail_after(60):
                step = await trt.resume(handle, {c.call_id: ptcflow.Approve() for c in calls})
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert step.ok, step.error
    assert sorted(line.split()[-1] for line in _effects(log)) == ["50", "500", "700"]


def test_an_approval_tool_travels_with_its_predicate_by_path() -> None:
    ref = tool_ref(refund)
    assert ref.requires_approval == "temporal.approvals:large"
    built = ref.build()
    assert built.requires_approval is large
    assert built.approval_reason({"amount": 500}) == "requires approval"
    assert built.approval_reason({"amount": 5}) is None
    timed = tool_ref(wire).build()
    assert (timed.requires_approval, timed.approval_timeout) == (True, 1.0)
    assert tool_ref(lookup).build().deferred
    local = ptcflow.tool(approvals._refund, name="r", requires_approval=lambda a: True)
    with pytest.raises(UsageError, match="requires_approval predicate of tool 'r'"):
        tool_ref(local)


def test_the_workflows_record_of_decisions_refuses_what_does_not_fit() -> None:
    book = Approvals()
    book.waiting["a"] = PendingCall(call_id="a", tool="refund")
    book.waiting["d"] = PendingCall(call_id="d", tool="lookup", kind="deferred")
    with pytest.raises(Refusal, match="no call 'x'") as unknown:
        book.check({"x": ptcflow.Approve()})
    assert unknown.value.kind == "UnknownCallError"
    with pytest.raises(Refusal, match="deferred tool 'lookup'"):
        book.check({"d": ptcflow.Approve()})
    with pytest.raises(Refusal, match="is a str"):
        book.check({"a": "yes"})
    book.check({"a": ptcflow.Approve(), "d": ptcflow.Supply(1)})
    book.give({"a": ptcflow.Approve()})
    assert [p.call_id for p in book.pending()] == ["d"]
    with pytest.raises(Refusal, match="decided already \\(approve\\)") as twice:
        book.check({"a": ptcflow.Deny()})
    assert twice.value.kind == "AlreadyDecidedError"
    assert book.take("a") == ptcflow.Approve() and book.take("a") is None
    book.expire("d", object())
    with pytest.raises(Refusal, match="decided already \\(expired\\)"):
        book.check({"d": ptcflow.Supply(2)})


def test_a_childs_waiting_calls_are_listed_prefixed_and_routed_to_the_child() -> None:
    book = Approvals()
    book.run_id, book.agent = "R", "boss"
    book.waiting["own"] = PendingCall(call_id="own", tool="refund", run_id="R")
    deep = PendingCall(call_id="c2/x", tool="refund", agent=("mid", "low"), run_id="R/c1/c2")
    mid = PendingCall(call_id="p/tool/1", tool="refund", agent=("mid",), run_id="R/c1")
    book.children["c1"] = ChildWaits(run_id="R/c1", pending=(mid, deep), decided={"y": "deny"})
    listed = book.pending()
    assert [(p.call_id, p.agent) for p in listed] == [
        ("own", ()),
        ("c1/p/tool/1", ("boss", "mid")),
        ("c1/c2/x", ("boss", "mid", "low")),
    ]
    assert [route("R", p) for p in listed] == [
        ("R", "own"),
        ("R/c1", "p/tool/1"),  # each call goes to the run that waits for it, unprefixed
        ("R/c1/c2", "x"),
    ]
    with pytest.raises(Refusal, match="waits in child run R/c1/c2") as below:
        book.check({"c1/c2/x": ptcflow.Approve()})  # the parent's update does not take it
    assert below.value.kind == "UnknownCallError"
    with pytest.raises(Refusal, match="decided already \\(deny\\)"):
        book.check({"c1/y": ptcflow.Approve()})
    with pytest.raises(Refusal, match="waiting: 'own', 'c1/p/tool/1', 'c1/c2/x'"):
        book.check({"c1/z": ptcflow.Approve()})
    book.check({"own": ptcflow.Approve()})
