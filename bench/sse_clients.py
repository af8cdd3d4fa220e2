"""1,000 concurrent streamed runs to 1,000 SSE clients on one server process.

The server (a child process): uvicorn serving :func:`ptcflow.serve.agui_endpoint` of
a ``ReAct(stream=True)`` agent at ``POST /agui`` on one Runtime, on the scripted model
paced like a real one: the first turn (a call of ``add``) after ``--latency`` seconds, then
a 40-word answer (``--words``) streamed one word every ``--gap`` seconds. Each run is 53 signals and
~45 AG-UI events (the endpoint's defaults: the SubAgents' memory as state (``--mission``
adds the mission tree, as every figure before 2026-11-28 05:00 UTC had it; ``--no-state``
none), a 1,024-signal buffer per client,
``on_disconnect="continue"`` so that a dropped client's run goes on to its end).
Deployed as docs/streaming.md says: uvicorn's ``httptools`` HTTP (``--http``; ``h11``
where it is not installed), ``gc.freeze()`` once started (``--no-gc-freeze``) and the
collector's thresholds at ``2000,10,1000`` (``--gc-threshold``; Python's are
``700,10,10``). The server times each collection by generation (``gc.callbacks``).

The clients (this process): ``--clients`` raw HTTP/1.1 connections on asyncio protocols
(no HTTP library: a client's timestamps are taken in ``data_received``, as the bytes
arrive). Each connection is opened and used once (a ``GET`` answered 405) before the
measurement, so connecting is not measured; then all clients ``POST`` their
``RunAgentInput`` at once and read their stream.

**Lag.** Every client's run has the same script, so its stream reaches the same
milestones: ``RUN_STARTED``, the tool's result, each of the 40 words of the answer, and
``RUN_FINISHED``. For milestone ``m`` and client ``c``, ``t(c, m)`` is when the bytes
completing it arrived. The lag of ``c`` at ``m`` is ``t(c, m) - min over clients of
t(c', m)``: how long ``c`` waited for ``m`` behind the fastest client. A client's lag is
its largest over the milestones; p50/p99/max are over the clients. The relative lag is the
same with each ``t(c, m)`` taken from the moment ``c`` sent its request (it leaves out
that the requests are written one after the other). Budget of issue 28: no client waits
more than 100 ms behind another (the max of the client lags).

**A slow client.** One more client posts a run whose answer is long (``--slow-words``
words, one every ms) with a small receive buffer, and reads nothing. The server buffers a
bounded amount for it (the socket's buffers, uvicorn's write buffer, then at most 1,024
signals), drops it with ``RUN_ERROR`` (code ``client_too_slow``) and lets its run go on.
Once the other clients are done it starts reading: the bench checks that its stream
ends with that event, and that its run ended at the pace of its script.

    .venv/bin/python bench/sse_clients.py                 # 1,000 clients
    .venv/bin/python bench/sse_clients.py --clients 100   # a smoke run
    .venv/bin/python bench/sse_clients.py --http h11 --no-gc-freeze --gc-threshold 700,10,10
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

BUDGET_MS = 100.0


def answer(words: int) -> str:
    return " ".join(f"tok{n:05d}" for n in range(words))


# -- the server ----------------------------------------------------------------------


def serve(args: argparse.Namespace) -> None:
    import anyio
    import uvicorn
    from ag_ui.core import RunAgentInput

    from ptcflow.runtime import LLMRequest, RunHandle, Runtime
    from ptcflow.serve import agui_endpoint, last_user_text
    from ptcflow.signals import LLMChunk, SignalBus
    from ptcflow.strategies import ReAct
    from ptcflow.testing import ScriptedLLM, ScriptItem

    short, slow = answer(args.words), answer(args.slow_words)

    async def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    def script(request: LLMRequest) -> ScriptItem:
        if any(m.role == "tool" for m in request.messages):
            return slow if "slow" in str(request.messages[0].content) else short
        return ScriptedLLM.tool_call("add", x=2, y=3)

    class PacedLLM(ScriptedLLM):
        """The scripted model streaming one word per tick of a clock shared by all runs
        (the monotonic clock's multiples of the gap), each word stamped with the moment
        the model produced it: ``tok00007@12345.678901``."""

        async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
            loop = asyncio.get_running_loop()
            asked = str(request.messages[0].content)
            gap = args.slow_gap if "slow" in asked else 0.0 if "warm" in asked else args.gap
            async for chunk in super().stream(request):
                if chunk.text.strip():
                    tick = gap - loop.time() % gap if gap and not args.free else gap
                    await asyncio.sleep(tick)
                    chunk = LLMChunk(text=f"{chunk.text.strip()}@{time.monotonic():.6f} ")
                yield chunk

    durations: dict[str, float] = {}
    made: dict[str, int] = {}
    # collections, timed with gc.callbacks: by generation, count / CPU / longest (wall)
    pauses: dict[int, list[float]] = {0: [0, 0.0, 0.0], 1: [0, 0.0, 0.0], 2: [0, 0.0, 0.0]}
    began_gc = [0.0, 0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began_gc[:] = time.perf_counter(), time.thread_time()
            return
        entry = pauses[info["generation"]]
        entry[0] += 1
        entry[1] += time.thread_time() - began_gc[1]
        entry[2] = max(entry[2], time.perf_counter() - began_gc[0])

    gc.callbacks.append(on_gc)

    async def main() -> None:
        bus = SignalBus()
        llm = PacedLLM(script, latency=args.latency, record=False)
        async with Runtime(llm=llm, tools=[add], bus=bus) as rt, anyio.create_task_group() as tg:

            async def watch(handle: RunHandle, run_id: str, began: float) -> None:
                step = await handle.wait()
                durations[run_id] = time.perf_counter() - began
                if run_id.startswith("slow:") and step.ok:
                    made["slow"] = str(step.value).count("tok")

            def start(rt: Runtime, run_input: RunAgentInput, run_id: str) -> RunHandle:
                text = last_user_text(run_input)
                handle = rt.start(ReAct(stream=True), text, run_id=run_id)
                tg.start_soon(watch, handle, ("slow:" if "slow" in text else "") + run_id, time.perf_counter())  # fmt: skip
                return handle

            endpoint = agui_endpoint(rt, start=start, on_disconnect="continue", state=not args.no_state, mission=args.mission)  # fmt: skip

            async def app(scope: Any, receive: Any, send: Any) -> None:
                if scope["type"] == "lifespan":
                    return
                if scope["path"] == "/quit":
                    server.should_exit = True
                if scope["path"] == "/dropped":  # polled: cheap
                    body = json.dumps({"dropped": endpoint.statistics.dropped}).encode()
                    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]  # fmt: skip
                    await send({"type": "http.response.start", "status": 200, "headers": headers})
                    await send({"type": "http.response.body", "body": body})
                    return
                if scope["path"] in ("/stats", "/quit"):
                    stats = endpoint.statistics
                    body = json.dumps(
                        {
                            "open": stats.open,
                            "started": stats.started,
                            "dropped": stats.dropped,
                            "disconnected": stats.disconnected,
                            "cpu_s": time.process_time(),
                            "durations": durations,
                            "subscribers": bus.statistics().subscribers,
                            "slow_words_made": made.get("slow", 0),
                            "gc": {n: list(entry) for n, entry in pauses.items()},
                            "http": http,
                        }
                    ).encode()
                    for entry in pauses.values():  # the longest pause since the last /stats
                        entry[2] = 0.0
                    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]  # fmt: skip
                    await send({"type": "http.response.start", "status": 200, "headers": headers})
                    await send({"type": "http.response.body", "body": body})
                    return
                await endpoint(scope, receive, send)

            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if args.sndbuf:  # inherited by each accepted connection
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
            sock.bind(("127.0.0.1", 0))
            sock.listen(4096)
            http = args.http
            if http == "auto":  # what uvicorn picks: httptools when it is installed
                try:
                    import httptools  # noqa: F401
                except ImportError:
                    http = "h11"
                else:
                    http = "httptools"
            config = uvicorn.Config(
                app,
                lifespan="off",
                log_level="warning",
                backlog=4096,
                http=http,
                timeout_keep_alive=600,  # the clients connect first, then all post at once
            )
            server = uvicorn.Server(config)
            print(sock.getsockname()[1], flush=True)
            if args.gc_freeze:  # what is alive now (modules, the app) is never scanned again
                gc.collect()
                gc.freeze()
            gc.set_threshold(*(int(n) for n in args.gc_threshold.split(",")))
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()

    if args.profile:
        import cProfile

        profile = cProfile.Profile(time.process_time)
        profile.runcall(asyncio.run, main())
        profile.dump_stats(args.profile)
    else:
        asyncio.run(main())


# -- the clients ---------------------------------------------------------------------


def run_input(text: str, n: int) -> bytes:
    return json.dumps(
        {
            "threadId": f"thread_{n}",
            "runId": f"agui_{n}",
            "messages": [{"id": "m1", "role": "user", "content": text}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    ).encode()


def post(body: bytes) -> bytes:
    head = (
        "POST /agui HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        f"accept: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Client(asyncio.Protocol):
    """One connection: a warm-up ``GET`` (405), then one streamed run, timestamped."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.data = bytearray()
        self.ends: list[int] = []  # end offset of each read
        self.times: list[float] = []  # when each read arrived
        self.sent = 0.0
        self.warm = asyncio.get_running_loop().create_future()
        self.done = asyncio.get_running_loop().create_future()
        self.warming = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.warming:
            self.data += data
            head, sep, rest = bytes(self.data).partition(b"\r\n\r\n")
            if sep and not self.warm.done():
                if b"content-length:" in head.lower():
                    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                    complete = len(rest) >= length
                else:  # chunked
                    complete = rest.endswith(b"0\r\n\r\n")
                if complete:
                    self.warm.set_result(None)
            return
        self.data += data
        self.ends.append(len(self.data))
        self.times.append(now)
        if self.data.endswith(b"\r\n0\r\n\r\n") and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.warm, self.done):
            if not future.done():
                future.set_result(None)

    def request(self, raw: bytes) -> None:
        assert self.transport is not None
        self.warming = False
        self.data.clear()
        self.sent = time.perf_counter()
        self.transport.write(raw)

    def at(self, marker: bytes, start: int = 0) -> tuple[float, int] | None:
        """When the bytes completing ``marker`` (first found from ``start``) arrived."""
        found = self.data.find(marker, start)
        if found < 0:
            return None
        end = found + len(marker)
        return self.times[bisect.bisect_left(self.ends, end)], end


WORD = re.compile(rb"tok(\d{5})@(\d+\.\d{6})")


async def get_json(port: int, path: str) -> Any:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n".encode())
    raw = await reader.read()
    writer.close()
    return json.loads(raw.partition(b"\r\n\r\n")[2])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(args: argparse.Namespace, port: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    gate = asyncio.Semaphore(64)

    async def connect(rcvbuf: int | None = None) -> Client:
        async with gate:
            sock = socket.socket()
            if rcvbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", port))
            _, client = await loop.create_connection(Client, sock=sock)
            assert client.transport is not None
            client.transport.write(b"GET /agui HTTP/1.1\r\nhost: bench\r\n\r\n")
            await client.warm
            return client

    for n in range(3):  # warm the server up: first requests build what later ones reuse
        warm = await connect()
        warm.request(post(run_input("warm up: what is 2 + 3?", -2 - n)))
        await asyncio.wait_for(warm.done, args.timeout)
        assert warm.transport is not None
        warm.transport.close()
    clients = await asyncio.gather(*(connect() for _ in range(args.clients)))
    slow = await connect(rcvbuf=4096) if args.slow_words else None
    before = await get_json(port, "/stats")
    began = time.perf_counter()
    if slow is not None:
        slow.request(post(run_input("slow: a long answer please", -1)))
        assert slow.transport is not None
        slow.transport.pause_reading()  # reads nothing while the others stream
    for n, client in enumerate(clients):
        raw = post(run_input("What is 2 + 3?", n))
        if args.ramp:  # the requests spread evenly over --ramp seconds
            loop.call_at(loop.time() + n * args.ramp / len(clients), client.request, raw)
        else:
            client.request(raw)
    watcher = asyncio.ensure_future(watch_slow(args, port, slow)) if slow is not None else None
    await asyncio.wait_for(asyncio.gather(*(c.done for c in clients)), args.timeout)
    wall = time.perf_counter() - began
    after = await get_json(port, "/stats")
    # each word: (client, the tick it was produced on, when produced, when it arrived)
    words: list[tuple[int, int, float, float]] = []
    firsts: list[float] = []
    finished: list[float] = []
    for n, client in enumerate(clients):
        started, _ = client.at(b'"RUN_STARTED"') or (0.0, 0)
        done = client.at(b'"RUN_FINISHED"')
        if not started or done is None:
            raise SystemExit(f"a client's stream is incomplete: {bytes(client.data[-300:])!r}")
        firsts.append(started - client.sent)
        finished.append(done[0] - client.sent)
        seen: set[bytes] = set()
        for match in WORD.finditer(client.data):
            if match[1] not in seen:  # the first time (the state repeats the text later)
                seen.add(match[1])
                made = float(match[2])
                arrived = client.times[bisect.bisect_left(client.ends, match.end())]
                words.append((n, round(made / args.gap), made, arrived))
        if len(seen) != args.words:
            raise SystemExit(f"a client got {len(seen)} of the {args.words} words")
    earliest: dict[int, float] = {}
    for _, tick, _, arrived in words:
        earliest[tick] = min(arrived, earliest.get(tick, arrived))
    fastest = min(arrived - made for _, _, made, arrived in words)
    behind = [0.0] * len(clients)
    delivery = [0.0] * len(clients)
    for n, tick, made, arrived in words:
        # a word made on the same tick as others: behind the first of them to arrive; a
        # word made at its own moment (--free): behind the fastest delivery of all
        lag = arrived - earliest[tick] if not args.free else (arrived - made) - fastest
        behind[n] = max(behind[n], lag * 1e3)
        delivery[n] = max(delivery[n], (arrived - made) * 1e3)

    result: dict[str, Any] = {
        "clients": args.clients,
        "wall_s": wall,
        "server_cpu_s": after["cpu_s"] - before["cpu_s"],
        "lag_ms": behind,
        "delivery_ms": delivery,
        "first_event_ms": [t * 1e3 for t in firsts],
        "run_ms": [t * 1e3 for t in finished],
        "gap_s": args.gap,
        "script_s": 2 * args.latency + args.words * args.gap,
        "words": args.words,
        "free": args.free,
        "server_run_ms": [
            v * 1e3 for k, v in after["durations"].items() if not k.startswith("slow:")
        ],
        "ramp_s": args.ramp,
        "send_spread_ms": (max(c.sent for c in clients) - min(c.sent for c in clients)) * 1e3,
        "http": after["http"],
        "gc_freeze": args.gc_freeze,
        "gc_threshold": args.gc_threshold,
        # by generation: collections, their CPU and their longest pause (ms) while measuring
        "gc": {
            n: [a[0] - b[0], (a[1] - b[1]) * 1e3, a[2] * 1e3]
            for (n, a), b in zip(after["gc"].items(), before["gc"].values(), strict=True)
        },
        "load_average": os.getloadavg(),
    }
    if slow is not None and watcher is not None:
        result["slow"] = await slow_client(args, port, slow, await watcher)
    return result


async def watch_slow(args: argparse.Namespace, port: int, slow: Client) -> float:
    """Once the server has dropped the slow client, let it read what it was sent (its
    last event waits for the connection at most ``send_timeout``, 10 s)."""
    began = time.perf_counter()
    while (await get_json(port, "/dropped"))["dropped"] < 1:
        if time.perf_counter() - began > args.timeout:
            raise SystemExit("the slow client was never dropped")
        await asyncio.sleep(0.1)
    assert slow.transport is not None
    slow.transport.resume_reading()
    return time.perf_counter() - began


async def slow_client(args: argparse.Namespace, port: int, slow: Client, dropped_after: float) -> dict[str, Any]:  # fmt: skip
    """What the slow client was sent, and how its run went."""
    await asyncio.wait_for(slow.done, args.timeout)
    stats = await get_json(port, "/stats")
    while not any(k.startswith("slow:") for k in stats["durations"]):
        await asyncio.sleep(0.1)
        stats = await get_json(port, "/stats")
    duration = next(v for k, v in stats["durations"].items() if k.startswith("slow:"))
    text = bytes(slow.data)
    events = [line[6:] for line in text.split(b"\n") if line.startswith(b"data: ")]
    last = json.loads(events[-1]) if events else {}
    words = len({m[1] for m in WORD.finditer(text)})
    return {
        "dropped": stats["dropped"],
        "dropped_after_s": dropped_after,
        "last_event": last,
        "events_received": len(events),
        "words_received": words,
        "bytes_received": len(text),
        "run_s": duration,
        "words_made": stats["slow_words_made"],
        "words_wanted": args.slow_words,
        "script_s": 2 * args.latency + args.slow_words * args.slow_gap,
    }


def fanout(clients: int, signals: int = 20_000) -> dict[str, float]:
    """CPU µs per signal to hand ``signals`` signals of ``clients`` runs to their clients
    through the bus, drained as the endpoint drains: each client subscribed to everything
    and keeping its run's signals (before), or subscribed to its run's tree (now)."""
    from ptcflow.signals import Signal, SignalBus

    runs = [f"run_{n}" for n in range(clients)]
    batch = [Signal(type="ai.llm.delta", source="b", id=str(n), time="t", seq=n, run_id=runs[n % clients]) for n in range(signals)]  # fmt: skip
    out: dict[str, float] = {}
    for scoped in (False, True):
        bus = SignalBus()
        if scoped:
            subs = [(run, bus.subscribe(run_tree=run, buffer=1 << 20)) for run in runs]
        else:
            subs = [(run, bus.subscribe("**", buffer=1 << 20)) for run in runs]
        began = time.process_time()
        kept = 0
        for at in range(0, signals, clients):  # one signal per client, then every client reads
            for signal in batch[at : at + clients]:
                bus.publish(signal)
            for run, sub in subs:
                prefix = run + "/"
                kept += sum(1 for x in sub.drain_nowait() if x.run_id == run or x.run_id.startswith(prefix))  # fmt: skip
        out["run_tree" if scoped else "everything"] = (time.process_time() - began) / signals * 1e6
        assert kept == signals
        for _, sub in subs:
            sub.close()
    return out


def report(r: dict[str, Any]) -> bool:
    def row(name: str, values: list[float]) -> str:
        return (
            f"{name:<34}{statistics.median(values):>9.1f}{pct(values, 0.99):>9.1f}"
            f"{max(values):>9.1f}"
        )

    f = r["fanout"]
    print(
        f"bus fan-out to {r['clients']} clients, CPU per signal: subscribed to everything and "
        f"filtering {f['everything']:.1f} µs; subscribed to the run's tree {f['run_tree']:.2f} µs"
    )
    print(f"sse_clients: {r['clients']} clients, one streamed AG-UI run each, one server process")
    print(f"{'ms':<34}{'p50':>9}{'p99':>9}{'max':>9}")
    print(row("client lag behind the fastest", r["lag_ms"]))
    print(row("word made -> word read (client max)", r["delivery_ms"]))
    print(row("request to RUN_STARTED", r["first_event_ms"]))
    print(row("request to RUN_FINISHED", r["run_ms"]))
    print(row("the run, timed by the server", r["server_run_ms"]))
    print(
        f"a word every {r['gap_s']} s ({'each run at its own pace' if r['free'] else 'all runs on the same ticks'}); requests written over {r['send_spread_ms']:.1f} ms; "
        f"wall {r['wall_s']:.2f} s; server CPU {r['server_cpu_s']:.2f} s "
        f"({r['server_cpu_s'] / r['wall_s']:.0%} of a core; {r['server_cpu_s'] / r['clients'] * 1e3:.1f} ms a run)"
    )
    collections = "; ".join(
        f"gen {n}: {count} ({total:.0f} ms CPU, longest {longest:.1f} ms)"
        for n, (count, total, longest) in r["gc"].items()
    )
    print(
        f"server: uvicorn {r['http']}, gc.freeze() {'yes' if r['gc_freeze'] else 'no'}, "
        f"gc thresholds {r['gc_threshold']}; "
        f"collections {collections}; load average {r['load_average'][0]:.2f}"
    )
    worst = max(r["lag_ms"])
    ok: bool = worst <= BUDGET_MS
    print(f"budget: no client > {BUDGET_MS:.0f} ms behind another: max {worst:.1f} ms {'PASS' if ok else 'MISS'}")  # fmt: skip
    slow = r.get("slow")
    if slow is not None:
        last = slow["last_event"]
        dropped = slow["dropped"] >= 1 and last.get("type") == "RUN_ERROR" and last.get("code") == "client_too_slow"  # fmt: skip
        # not blocked: its run produced all its words, most of them after its client had
        # stopped reading (it got a bounded prefix, then the error event)
        paced = slow["words_made"] == slow["words_wanted"] and slow["words_received"] < slow["words_wanted"]  # fmt: skip
        print(
            f"slow client (reads nothing): dropped after {slow['dropped_after_s']:.1f} s; "
            f"dropped={slow['dropped']}, it got "
            f"{slow['events_received']} events ({slow['bytes_received']} bytes, "
            f"{slow['words_received']} of the words) ending {last.get('type')} "
            f"code={last.get('code')!r}: {last.get('message')!r}"
        )
        print(
            f"  its run went on to its end: all {slow['words_made']} words made in "
            f"{slow['run_s']:.2f} s (script {slow['script_s']:.2f} s; the other runs took "
            f"{statistics.median(r['server_run_ms']) / 1e3:.2f} s for a script of "
            f"{r['script_s']:.2f} s) {'PASS' if dropped and paced else 'MISS'}"
        )
        ok = bool(ok and dropped and paced)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--gap", type=float, default=0.25, help="seconds between words")
    parser.add_argument("--words", type=int, default=40, help="words of each answer")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model turn")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds over which requests start")  # fmt: skip
    parser.add_argument(
        "--free",
        action="store_true",
        help="each run streams at its own pace (not on the shared clock's ticks)",
    )
    parser.add_argument("--slow-words", type=int, default=3000, help="0: no slow client")
    parser.add_argument("--slow-gap", type=float, default=0.002)
    parser.add_argument(
        "--sndbuf",
        type=int,
        default=16384,
        help="the server sockets' send buffer (0: the kernel's autotuning, up to 4 MB)",
    )
    parser.add_argument("--no-state", action="store_true", help="AG-UI without state")
    parser.add_argument("--mission", action="store_true", help="the mission tree in the state")
    parser.add_argument(
        "--http",
        choices=("auto", "h11", "httptools"),
        default="auto",
        help="uvicorn's HTTP implementation (auto: httptools when installed, as uvicorn picks)",
    )
    parser.add_argument(
        "--gc-threshold",
        default="2000,10,1000",
        help="the server's gc.set_threshold() (Python's default: 700,10,10)",
    )
    parser.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="do not gc.freeze() the server once started",
    )
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--profile", help="cProfile the server into this file")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return 0
    argv = [sys.executable, __file__, "--serve", *sys.argv[1:]]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, env=os.environ.copy())
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        result = asyncio.run(measure(args, port))
        result["fanout"] = fanout(args.clients)
        asyncio.run(get_json(port, "/quit"))
        server.wait(30)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(30)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if report(result) else 1


if __name__ == "__main__":
    sys.exit(main())
