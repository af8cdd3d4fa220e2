"""Running a program next to a 10 ms ticker: how long the event loop was blocked, how long
the run took, and how much memory it used.

The measure is the sandbox's own: :func:`frozen_heap` moves the objects the test process
already holds out of the garbage collector's reach first (``gc.freeze``), because a full
collection scans the whole heap and its pause grows with what the *host* holds (150,000 to
500,000 objects in this test process: 50-150 ms on the development machine), not with what
the program does. docs/lisp.md tells hosts the same.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import msgspec

from ptcflow.lisp import LispResult, run

TICK_S = 0.01
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Ticked(msgspec.Struct, frozen=True):
    """What :func:`run_ticking` measured."""

    result: LispResult
    max_gap_s: float  # the longest the ticker waited for its 10 ms sleep, minus 10 ms
    seconds: float  # the whole run
    rss_growth: int  # the largest resident size seen during the run, minus the size before


def rss() -> int:
    """The resident set size of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return 0


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects the process already holds out of the measured collections."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def run_ticking(source: str, **kwargs: Any) -> Ticked:
    """Run ``source`` next to a ticker task sleeping 10 ms at a time."""
    gaps: list[float] = []
    peak = before = rss()
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal peak
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(TICK_S)
            now = time.perf_counter()
            gaps.append(now - last - TICK_S)
            last = now
            peak = max(peak, rss())

    with frozen_heap():
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            result = await run(source, **kwargs)
            done.set()
        seconds = time.perf_counter() - start
    peak = max(peak, rss())
    return Ticked(result, max(gaps, default=0.0), seconds, peak - before)
