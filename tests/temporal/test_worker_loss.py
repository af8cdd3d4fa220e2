"""Worker loss costs time, never the mission; a server outage is no worker loss (a real
dev server, worker processes killed with SIGKILL, the server killed and restarted on its
SQLite file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from ptcflow.temporal import DevServer, TemporalOptions, TemporalRuntime, connect, open_worker
from temporal import missions
from temporal.agents import LOG_PROGRAM, LogOnce, analyst, logged, model
from temporal.test_durability import WorkerProcess, _calls, _steps, _wait_for, workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

__all__ = ("workers",)  # the fixture, shared with test_durability


def _child_calls(log: Path) -> tuple[list[str], list[str]]:
    """The calls the mission's child made (its ids nest two programs), started and done."""
    starts, dones, _ = _calls(log)
    child = [c for c in starts if c.count("/program/") >= 3]
    return child, [c for c in child if dones[c]]


async def _recorded(client: Any, run_id: str, index: int) -> None:
    """Until the server holds a heartbeat of ``run_id``'s program recording call ``index``."""
    handle = client.get_workflow_handle(run_id)
    with anyio.fail_after(30):
        while True:
            raw = (await handle.describe()).raw_description
            details = [p.data for a in raw.pending_activities for p in a.heartbeat_details.payloads]
            if any(b'"index":%d' % index in d for d in details):
                return
            await anyio.sleep(0.05)


async def test_a_worker_lost_in_a_childs_program_neither_fails_nor_replans_the_mission(
    dev_server: DevServer, workers: list[WorkerProcess], queue: str, tmp_path: Path
) -> None:
    """The mission's second turn calls an agent whose program calls ``logged`` twice; the
    worker running the child's program is killed once its first call completed. With
    ``lost_worker_retries=0`` (a spent budget) the attempt still runs again -- it made
    progress -- and answers its completed call from its record: no extra turn anywhere,
    no completed call run again, every call under its first id."""
    log = tmp_path / "calls.log"
    client = await connect(dev_server.address)
    options = TemporalOptions(
        task_queue=queue, heartbeat_timeout_ms=1_000, lost_worker_retries=0, worker_grace_ms=3_000
    )
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(missions.second(), context={"n": 1})
        await _wait_for(lambda: len(_child_calls(log)[1]) >= 1)
        (first,) = _child_calls(log)[1]
        head = first.removesuffix("/program/1/tool/0")  # "{child run}/{child run}"
        child_run = head[: len(head) // 2]
        await _recorded(client, child_run, 0)
        await _wait_for(lambda: len(_child_calls(log)[0]) >= 2)
        _, _, where = _calls(log)
        busy = next(c for c in _child_calls(log)[0] if c != first)
        victim = next(w for w in workers if w.pid in where[busy])
        victim.kill()
        (step,) = await _steps(client, [handle], workers)
    assert step.ok and step.value == {"total": 20}, step.error
    assert step.turns == 2  # no turn re-planned the call
    starts, dones, _ = _calls(log)
    assert len(dones) == 2 and set(dones.values()) == {1}
    assert starts[first] == 1 and starts[busy] == 2  # only the call in flight ran again
    assert all(c.endswith(("/program/1/tool/0", "/program/1/tool/1")) for c in starts)
    assert step.trace is not None
    (child,) = [c.child for c in step.trace.turns[1].execution.tool_calls if c.child]
    assert child.ok and child.turns == 1 and child.value == {"sum": 20}


async def test_a_child_replanned_after_its_workers_were_lost_runs_no_completed_call_again(
    dev_server: DevServer, workers: list[WorkerProcess], queue: str, tmp_path: Path
) -> None:
    """With ``lost_worker_retries=0``, the child's program loses a worker after its first
    call completed (progress: run again), then the next worker before it completes
    anything (no progress: the budget is spent): the child fails, and the mission takes
    another turn that calls the agent again with the same arguments (a new child run,
    ``.../program/3/...``). That run starts with the failed one's record: the completed
    call is answered from it, not run again."""
    log = tmp_path / "calls.log"
    client = await connect(dev_server.address)
    options = TemporalOptions(
        task_queue=queue, heartbeat_timeout_ms=1_000, lost_worker_retries=0, worker_grace_ms=2_000
    )
    extra = ("--tools", "temporal.agents:TOOLS", "--handlers", "temporal.agents:HANDLERS")
    spare: WorkerProcess | None = None
    try:
        async with TemporalRuntime(client=client, options=options) as trt:
            handle = await trt.start(missions.second(), context={"n": 1})
            await _wait_for(lambda: len(_child_calls(log)[1]) >= 1)
            (first,) = _child_calls(log)[1]
            head = first.removesuffix("/program/1/tool/0")
            await _recorded(client, head[: len(head) // 2], 0)
            second = first.removesuffix("0") + "1"
            await _wait_for(lambda: _calls(log)[0][second] == 1)
            for victim in workers:  # the one running the second call, then the other
                if victim.pid in _calls(log)[2][second]:
                    victim.kill()
            await _wait_for(lambda: _calls(log)[0][second] == 2)
            for victim in workers:
                victim.kill()
            spare = WorkerProcess(dev_server.address, queue, log, *extra)
            (step,) = await _steps(client, [handle], [*workers, spare])
    finally:
        if spare is not None:
            spare.stop()
    assert step.ok and step.value == {"total": 20}, step.error
    assert step.turns == 3  # the agent's call failed once
    starts, dones, _ = _calls(log)
    assert starts[first] == dones[first] == 1 and dones[second] == 0
    again = [c.replace("/program/2/tool/0", "/program/3/tool/0") for c in (first, second)]
    assert starts[again[0]] == 0  # answered from the failed run's record
    assert starts[again[1]] == dones[again[1]] == 1, log.read_text()
    assert step.trace is not None
    (failed,) = [c for c in step.trace.turns[1].execution.tool_calls if c.child]
    assert failed.child is not None and not failed.child.ok
    error = failed.child.error
    assert error is not None and "lost 1 time(s) without making progress" in error.message
    (child,) = [c.child for c in step.trace.turns[2].execution.tool_calls if c.child]
    assert child.ok and child.turns == 1 and child.value == {"sum": 20}


async def test_a_server_outage_longer_than_the_heartbeat_timeout_is_no_lost_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server is killed in the middle of a program's second call and a ReAct run's
    tool call, and restarted on its SQLite file after more than the heartbeat timeout:
    their attempts time out on the server while their worker lives. With
    ``lost_worker_retries=0`` both runs complete; the workflow asked the worker on its own
    queue, which answered with the attempts' work (adopted, finished): no call ran twice."""
    log = tmp_path / "calls.log"
    log.touch()
    monkeypatch.setenv("PTCFLOW_TEST_LOG", str(log))
    monkeypatch.setenv("PTCFLOW_TEST_DELAY", "1.5")
    server = DevServer(db_filename=tmp_path / "temporal.db")
    await server.start()
    try:
        client = await connect(server.address)
        options = TemporalOptions(
            task_queue="outage",
            heartbeat_timeout_ms=1_000,
            lost_worker_retries=0,
            worker_grace_ms=20_000,
        )
        async with (
            open_worker(client, task_queue="outage", llm=model(), tools=[logged]),
            TemporalRuntime(client=client, tools=[logged], options=options) as trt,
        ):
            program = await trt.start(LogOnce(program=LOG_PROGRAM), "go", record=True)
            react = await trt.start(analyst(), "region", record=True)

            def in_flight() -> set[str]:
                starts, dones, _ = _calls(log)
                return {c.split("/")[0] for c in starts if not dones[c]}

            # a program's call done, and both runs in the middle of a call
            await _wait_for(lambda: "done" in log.read_text() and len(in_flight()) == 2)
            await server.stop(kill=True)
            # the outage itself: longer than the heartbeat timeout (1 s)
            await anyio.sleep(2.5)
            await server.start()
            with anyio.fail_after(90):
                steps = [await program.wait(), await react.wait()]
            histories = [
                await client.get_workflow_handle(h.run_id).fetch_history() for h in (program, react)
            ]
    finally:
        await server.stop()
    assert [s.error for s in steps] == [None, None]
    assert steps[0].value == [10, 20, 30] and steps[1].value == "logged thrice"
    starts, dones, _ = _calls(log)
    assert len(dones) == 6 and set(starts.values()) == set(dones.values()) == {1}
    asked = [
        e.activity_task_scheduled_event_attributes.task_queue.name
        for h in histories
        for e in h.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and "~" in e.activity_task_scheduled_event_attributes.activity_id
    ]
    assert asked and all("@" in q for q in asked), asked  # each asked its own worker
