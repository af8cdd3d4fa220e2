"""Durability on a real dev server: a worker process killed with SIGKILL in the middle of a
tool call, and the server itself killed and restarted on its SQLite file; every run still
completes, and no completed tool call runs again (counted in the tool's own side effect)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from ptcflow.temporal import DevServer, TemporalOptions, TemporalRuntime, connect, open_worker
from temporal import missions
from temporal.agents import LOG_PROGRAM, LogOnce, analyst, logged, model

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]


def _calls(log: Path) -> tuple[Counter[str], Counter[str], dict[str, set[str]]]:
    starts: Counter[str] = Counter()
    dones: Counter[str] = Counter()
    where: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        event, call, pid, *_ = line.split()
        (starts if event == "start" else dones)[call] += 1
        where.setdefault(call, set()).add(pid)
    return starts, dones, where


class WorkerProcess:
    """``ptcflow worker`` in a process of its own; what it prints goes to a file (a pipe
    nobody reads would stall it once full), shown when a test waits on it in vain."""

    def __init__(self, address: str, queue: str, log: Path, *extra: str) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
            "PTCFLOW_TEST_LOG": str(log),
            "PTCFLOW_TEST_DELAY": "1.0",
            "PYTHONFAULTHANDLER": "1",  # a crash prints its Python stack to the output
        }
        command = [sys.executable, "-m", "ptcflow.cli", "worker", "--address", address]
        command += [
            "--task-queue",
            queue,
            "--llm",
            "temporal.agents:model",
            "--sticky-timeout",
            "1",
        ]
        command += extra
        self.output = log.with_name(f"worker-{id(self)}.out")
        with self.output.open("w") as out:
            self.process = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        while "ptcflow worker on" not in self.output.read_text():  # printed once it polls
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the worker did not start:\n{self.report()}")
            time.sleep(0.02)

    @property
    def pid(self) -> str:
        return str(self.process.pid)

    def report(self) -> str:
        """Whether the process lives, and the end of what it printed."""
        state = "running" if self.process.poll() is None else f"exited {self.process.returncode}"
        return f"worker {self.pid} ({state}):\n{self.output.read_text()[-4000:]}"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def workers(dev_server: DevServer, queue: str, tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    log = tmp_path / "calls.log"
    log.touch()
    extra = ("--tools", "temporal.agents:TOOLS", "--handlers", "temporal.agents:HANDLERS")
    started = [WorkerProcess(dev_server.address, queue, log, *extra) for _ in range(2)]
    try:
        yield started
    finally:
        for w in started:
            w.stop()


async def _busy_worker(log: Path, workers: list[WorkerProcess], within: str = "") -> WorkerProcess:
    """The first worker seen in the middle of a tool call (one whose id contains ``within``)."""
    with anyio.fail_after(30):
        while True:
            starts, dones, where = _calls(log)
            busy = [c for c in starts if dones[c] == 0 and within in c]
            if busy:
                return next(w for w in workers if w.pid in where[busy[0]])
            await anyio.sleep(0.02)


async def _steps(client: Any, handles: list[Any], workers: list[WorkerProcess]) -> list[Any]:
    """Each run's Step. A run that has not ended in 90 s fails the test with what each run
    waits on and what the workers printed, rather than hanging it."""
    try:
        with anyio.fail_after(90):
            return [await h.wait() for h in handles]
    except TimeoutError:
        lines = []
        for h in handles:
            raw = (await client.get_workflow_handle(h.run_id).describe()).raw_description
            pending = [
                f"{a.activity_type.name} attempt {a.attempt} on {a.last_worker_identity!r}"
                for a in raw.pending_activities
            ]
            lines.append(f"{h.run_id}: pending {pending or 'nothing'}")
        lines += [w.report() for w in workers]
        raise AssertionError("runs did not end in 90 s:\n" + "\n".join(lines)) from None


async def _wait_for(condition: Any, seconds: float = 30.0) -> None:
    """Poll ``condition()`` (a file another process writes) until it holds."""
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - another process writes it: nothing to await
            await anyio.sleep(0.02)


async def test_a_worker_killed_in_the_middle_of_a_tool_call_loses_no_run_and_repeats_no_completed_call(
    dev_server: DevServer, workers: list[WorkerProcess], queue: str, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    client = await connect(dev_server.address)
    options = TemporalOptions(task_queue=queue, heartbeat_timeout_ms=1_000)
    async with TemporalRuntime(client=client, tools=[logged], options=options) as trt:
        handles = [await trt.start(analyst(), f"region {n}") for n in range(4)]

        victim = await _busy_worker(log, workers)
        (survivor,) = [w for w in workers if w is not victim]
        victim.kill()
        steps = await _steps(client, handles, workers)
    assert all(s.ok and s.value == "logged thrice" for s in steps), [s.error for s in steps]
    starts, dones, where = _calls(log)
    assert len(dones) == 12 and set(dones.values()) == {1}  # no completed call ran twice
    rerun = [c for c, n in starts.items() if n > 1]
    assert rerun and all(where[c] == {victim.pid, survivor.pid} for c in rerun)


async def test_runs_complete_after_the_server_is_killed_and_restarted_on_its_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    log.touch()
    monkeypatch.setenv("PTCFLOW_TEST_LOG", str(log))
    monkeypatch.setenv("PTCFLOW_TEST_DELAY", "0.3")
    server = DevServer(db_filename=tmp_path / "temporal.db")
    await server.start()
    try:
        client = await connect(server.address)
        options = TemporalOptions(task_queue="restart", heartbeat_timeout_ms=2_000)
        async with (
            open_worker(client, task_queue="restart", llm=model()),
            TemporalRuntime(client=client, tools=[logged], options=options) as trt,
        ):
            handles = [await trt.start(analyst(), f"region {n}") for n in range(3)]
            await _wait_for(lambda: log.read_text().count("done") >= 2)
            await server.stop(kill=True)
            await server.start()
            with anyio.fail_after(90):
                steps = [await h.wait() for h in handles]
    finally:
        await server.stop()
    assert all(s.ok and s.value == "logged thrice" for s in steps), [s.error for s in steps]
    _, dones, _ = _calls(log)
    assert len(dones) == 9


@pytest.mark.parametrize("program", [None, LOG_PROGRAM], ids=["handler", "run-program"])
async def test_sub_calls_completed_before_their_worker_was_killed_are_not_called_again(
    dev_server: DevServer,
    workers: list[WorkerProcess],
    queue: str,
    tmp_path: Path,
    program: str | None,
) -> None:
    """A handler's sub-calls (``ctx.call_tool``, numbered from 1), and the tool calls of a
    program of the runtime's own ``RunProgram`` kind (numbered from 0): each completed call
    is heartbeated, and the attempt that runs again on the other worker answers it from
    that record (the program runs again from its start)."""
    log = tmp_path / "calls.log"
    first = 1 if program is None else 0
    terminal = "ai.tool.result" if program is None else "ai.program.result"
    client = await connect(dev_server.address)
    options = TemporalOptions(task_queue=queue, heartbeat_timeout_ms=1_000)
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(LogOnce(program=program), "go", record=True)
        desc_handle = client.get_workflow_handle(handle.run_id)

        def recorded() -> int:
            return log.read_text().count("done")

        await _wait_for(lambda: recorded() >= 1)
        with anyio.fail_after(30):  # until the record of the completed call reached the server
            while True:
                raw = (await desc_handle.describe()).raw_description
                details = [
                    p.data for a in raw.pending_activities for p in a.heartbeat_details.payloads
                ]
                if any(b'"index":%d' % first in d for d in details):
                    break
                await anyio.sleep(0.05)
        victim = await _busy_worker(log, workers)
        victim.kill()
        (step,) = await _steps(client, [handle], workers)
    assert step.ok and step.value == [10, 20, 30], step.error
    starts, dones, _ = _calls(log)
    assert len(dones) == 3 and set(dones.values()) == {1}
    calls = [f"{handle.run_id}/all/tool/{n}" for n in range(first, first + 3)]
    assert starts[f"{handle.run_id}/{calls[0]}"] == 1  # answered from the record
    results = [s.call_id for s in step.signals if s.type in ("ai.tool.result", terminal)]
    assert results == [*calls, f"{handle.run_id}/all"]
    assert [s.type for s in step.signals if s.call_id == f"{handle.run_id}/all"][-1] == terminal


async def test_a_worker_killed_during_an_agents_child_workflow_repeats_no_completed_call(
    dev_server: DevServer, workers: list[WorkerProcess], queue: str, tmp_path: Path
) -> None:
    """The orchestrator's program calls ``logged``, then an agent (a child workflow) whose
    program calls ``logged`` twice; the worker running the child's first call is killed.
    The run completes; every completed call ran once (the parent's is in its program's
    record, the child's program runs again from its own)."""
    log = tmp_path / "calls.log"
    client = await connect(dev_server.address)
    options = TemporalOptions(task_queue=queue, heartbeat_timeout_ms=1_000)
    async with TemporalRuntime(client=client, options=options) as trt:
        handle = await trt.start(missions.durable(), context={"n": 1})
        victim = await _busy_worker(log, workers, within="/tool/1/")
        victim.kill()
        (step,) = await _steps(client, [handle], workers)
    assert step.ok and step.value == {"total": 120}, step.error
    starts, dones, _ = _calls(log)
    assert len(dones) == 3 and set(dones.values()) == {1}
    assert sorted(starts.values()) == [1, 1, 2]  # the call in flight when its worker died
    assert step.trace is not None
    (child,) = [c.child for c in step.trace.turns[0].execution.tool_calls if c.child]
    assert child.ok and child.value == {"sum": 110}
