"""Sessions: what appending a turn and loading a session cost, by session length.

Budgets (issue 26): appending a turn to a 1,000-message session costs at most 2x appending
to a 10-message one (SQLite and PostgreSQL), each measured in the same run, alternating;
loading a 1,000-message session takes at most 20 ms on SQLite.

    python bench/session_store.py                 # SQLite, and PostgreSQL when it can start one
    python bench/session_store.py --quick         # fewer repeats (a smoke run)
    python bench/session_store.py --dsn postgresql://...   # an existing server instead
    python bench/session_store.py --json out.json

PostgreSQL is Debian's ``postgresql`` package started in a temporary directory, as the
tests do (``tests/sessions/pg.py``); without it the PostgreSQL rows say why they are missing.
A turn is two messages (a user question and an answer of ~200 characters).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from ptcflow.sessions import PostgresStore, Session, SessionStore, SQLiteStore, Turn
from ptcflow.signals import Message

_ANSWER = "The order ships on Tuesday from the Lyon warehouse; tracking follows by email. " * 3


def _turn(index: int) -> Turn:
    return Turn(
        index=index,
        run_id=f"run_{index}",
        messages=(
            Message(role="user", content=f"question {index}: where is my order?"),
            Message(role="assistant", content=_ANSWER),
        ),
    )


async def _prefill(store: SessionStore, session_id: str, messages: int) -> int:
    turns = [_turn(i) for i in range(messages // 2)]
    await store.write(session_id, turns)
    return len(turns)


async def _measure(store: SessionStore, label: str, appends: int, loads: int) -> dict[str, Any]:
    small, large = f"{label}-10", f"{label}-1000"
    await store.delete(small)
    await store.delete(large)
    next_index = {
        small: await _prefill(store, small, 10),
        large: await _prefill(store, large, 1000),
    }
    times: dict[str, list[float]] = {small: [], large: []}
    for _ in range(appends):  # alternate, so a noisy neighbour slows both alike
        for session_id in (small, large):
            turn = _turn(next_index[session_id])
            start = time.perf_counter()
            await store.append(session_id, turn)
            times[session_id].append(time.perf_counter() - start)
            next_index[session_id] += 1
    load_times: dict[str, list[float]] = {small: [], large: []}
    for _ in range(loads):
        for session_id in (small, large):
            start = time.perf_counter()
            messages = await Session(session_id, store).messages()
            load_times[session_id].append(time.perf_counter() - start)
            assert len(messages) >= (10 if session_id == small else 1000)
    ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
    load_ms = {k: statistics.median(v) * 1000 for k, v in load_times.items()}
    await store.delete(small)
    await store.delete(large)
    return {
        "append_ms_10": ms[small],
        "append_ms_1000": ms[large],
        "append_ratio": ms[large] / ms[small],
        "load_ms_10": load_ms[small],
        "load_ms_1000": load_ms[large],
    }


def _postgres(dsn: str | None) -> tuple[Any, str | None, str]:
    """(server to destroy, dsn, why not)."""
    if dsn:
        return None, dsn, ""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sessions"))
    try:
        import pg  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    bin_dir, why = pg.find_bin()
    if bin_dir is None:
        return None, None, why
    server = pg.PgServer(bin_dir)
    server.start()
    return server, server.dsn, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--dsn", help="an existing PostgreSQL server (default: start one)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    appends, loads = (30, 10) if args.quick else (300, 50)
    results: dict[str, Any] = {}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "bench.db")
        results["sqlite"] = anyio.run(_measure, sqlite, "sqlite", appends, loads)
        sqlite.close()
    server = None
    if not args.no_postgres:
        server, dsn, why = _postgres(args.dsn)
        if dsn is None:
            print(f"PostgreSQL: skipped ({why})")
        else:
            try:
                store = PostgresStore(dsn)
                results["postgres"] = anyio.run(_measure, store, "postgres", appends, loads)
                store.close()
            finally:
                if server is not None:
                    server.destroy()
    print(f"{appends} appends per session length (alternating), {loads} loads; medians in ms")
    print(f"{'store':<10} {'append@10':>10} {'append@1000':>12} {'ratio':>6} {'budget':>7}"
          f" {'load@10':>8} {'load@1000':>10}")  # fmt: skip
    for name, r in results.items():
        ok = r["append_ratio"] <= 2.0
        if not ok:
            failures.append(f"{name}: append ratio {r['append_ratio']:.2f} > 2")
        print(
            f"{name:<10} {r['append_ms_10']:>10.3f} {r['append_ms_1000']:>12.3f} "
            f"{r['append_ratio']:>6.2f} {'<= 2x':>7} {r['load_ms_10']:>8.3f} "
            f"{r['load_ms_1000']:>10.3f}"
        )
    load = results["sqlite"]["load_ms_1000"]
    if load > 20.0:
        failures.append(f"sqlite: loading 1,000 messages took {load:.1f} ms > 20 ms")
    print(f"SQLite load of a 1,000-message session: {load:.2f} ms (budget 20 ms)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    for failure in failures:
        print("OVER BUDGET:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
