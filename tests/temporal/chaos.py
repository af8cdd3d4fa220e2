"""A chaos run on Temporal: missions while workers are SIGKILLed and the server restarts.

``missions.fanout()`` missions (a tool call, then a ``pmap`` over an agent whose program
makes two tool calls: every call of ``logged`` takes ``--delay`` seconds) run on a dev
server with two ``ptcflow worker`` processes; every 2.5-4 s one worker is SIGKILLed and
a new one started, and once the server is SIGKILLed and restarted on its SQLite file
after ``--outage`` seconds. It prints what outside testing measured: missions failed,
missions that needed an extra turn (their own or their agents'), completed calls that
ran again (and how long before their worker was killed they completed), and the time
taken. Exit status 1 if a mission failed, gave a wrong value or needed an extra turn.
From the repository's root::

    PYTHONPATH=src:tests python tests/temporal/chaos.py --missions 40
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from ptcflow.temporal import DevServer, TemporalOptions, TemporalRuntime, connect  # noqa: E402
from temporal import missions  # noqa: E402
from temporal.test_durability import WorkerProcess, _calls  # noqa: E402

EXTRA = ("--tools", "temporal.agents:TOOLS", "--handlers", "temporal.agents:HANDLERS")


def _turns(step: Any) -> int:
    """Turns beyond one, in the mission and every agent it called (1 turn each expected)."""
    extra = max(0, int(step.turns) - 1)
    if step.trace is not None:
        for turn in step.trace.turns:
            for call in turn.execution.tool_calls:
                if call.child is not None:
                    extra += _turns(call.child)
    return extra


async def chaos(args: argparse.Namespace) -> int:
    """Run the missions under chaos; print the figures; 0 when nothing failed or repeated."""
    folder = Path(tempfile.mkdtemp(prefix="ptcflow-chaos-"))
    log = folder / "calls.log"
    log.touch()
    os.environ["PTCFLOW_TEST_DELAY"] = str(args.delay)
    server = DevServer(db_filename=folder / "temporal.db")
    await server.start()
    workers = [WorkerProcess(server.address, "chaos", log, *EXTRA) for _ in range(2)]
    kills = 0
    killed: dict[str, float] = {}
    outage = [0.0, 0.0]
    rng = random.Random(args.seed)
    try:
        client = await connect(server.address)
        options = TemporalOptions(task_queue="chaos", heartbeat_timeout_ms=1_000)
        async with TemporalRuntime(client=client, options=options) as trt:
            handles = [
                await trt.start(missions.fanout(), context={"n": n}) for n in range(args.missions)
            ]
            start = time.monotonic()
            steps: list[Any] = []

            async def wait_all() -> None:
                steps.extend([await h.wait() for h in handles])

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_all)
                restarted = False
                while len(steps) < len(handles):
                    with anyio.move_on_after(rng.uniform(2.5, 4.0)):
                        while len(steps) < len(handles):  # noqa: ASYNC110 - another task fills it
                            await anyio.sleep(0.1)
                    if len(steps) == len(handles):
                        break
                    if time.monotonic() - start > args.timeout:
                        tg.cancel_scope.cancel()
                        break
                    if not restarted and time.monotonic() - start > 8:
                        restarted = True
                        print(f"[{time.monotonic() - start:5.1f}s] server killed", flush=True)
                        outage[0] = time.time()
                        await server.stop(kill=True)
                        await anyio.sleep(args.outage)
                        await server.start()
                        outage[1] = time.time()
                        print(f"[{time.monotonic() - start:5.1f}s] server back", flush=True)
                        continue
                    victim = workers.pop(rng.randrange(len(workers)))
                    victim.kill()
                    killed[victim.pid] = time.time()
                    kills += 1
                    workers.append(WorkerProcess(server.address, "chaos", log, *EXTRA))
            took = time.monotonic() - start
    finally:
        for w in workers:
            w.stop()
        await server.stop()
    failed = [s for s in steps if not s.ok]
    wrong = [s for s in steps if s.ok and s.value != {"total": 10 * int(_n(s)) + 50}]
    replanned = sum(1 for s in steps if _turns(s))
    starts, dones, _ = _calls(log)
    repeated = [c for c, n in dones.items() if n > 1]
    rerun = [c for c, n in starts.items() if n > 1]
    print(f"{len(steps)}/{len(handles)} missions ended in {took:.0f} s; {kills} workers killed")
    print(f"failed: {len(failed)}  wrong value: {len(wrong)}  needing an extra turn: {replanned}")
    print(
        f"tool calls: {len(dones)} completed, {len(repeated)} completed more than once, "
        f"{len(rerun)} started again (in flight when their worker died)"
    )
    first: dict[str, tuple[str, float]] = {}
    for line in log.read_text().splitlines():
        event, call, pid, stamp = line.split()
        if event == "done":
            first.setdefault(call, (pid, float(stamp)))
    before = [killed.get(first[c][0], 0.0) - first[c][1] for c in repeated]
    if repeated:
        survivors = sum(1 for b in before if b <= 0)
        print(
            f"  of them: {survivors} first completed on a worker never killed after; the others "
            f"completed {min(b for b in before if b > 0):.2f}-{max(before):.2f} s before their "
            "worker was killed"
            if survivors < len(before)
            else f"  of them: {survivors} first completed on a worker never killed after"
        )
    if os.environ.get("CHAOS_DEBUG"):
        for c, gap in sorted(zip(repeated, before, strict=True), key=lambda x: x[1]):
            done_at = first[c][1] - outage[0]
            print(f"   {gap:6.2f} s before its kill; done {done_at:+.2f} s from the outage start")
    for s in failed[:5]:
        print(f"  {s.run_id}: {s.error}")
    ok = len(steps) == len(handles) and not failed and not wrong and not replanned
    return 0 if ok else 1


def _n(step: Any) -> int:
    """The mission's ``n`` (its total is ``10 * n + 50``)."""
    return (int(step.value["total"]) - 50) // 10


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missions", type=int, default=40)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per tool call")
    parser.add_argument("--outage", type=float, default=3.0, help="seconds the server is down")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    sys.exit(anyio.run(chaos, parser.parse_args()))
