"""Running a program next to a 10 ms ticker: how long the event loop was blocked, how long
the run took, and how much memory it used.

The measure is the sandbox's own:

* the gap is counted in CPU time of the event loop's thread (``time.thread_time``): on a
  shared machine the operating system may stop the process for tens of milliseconds to run
  another one, which no code in it can prevent, and other threads of the test process
  (worker threads an earlier test abandoned, exporters) do not hold the loop (the
  wall-clock gap is measured too);
* :func:`frozen_heap` moves the objects the test process already holds out of the garbage
  collector's reach first (``gc.freeze``), because a full collection scans the whole heap
  and its pause grows with what the *host* holds (150,000 to 500,000 objects in this test
  process: 50-150 ms on the development machine), not with what the program does.
  docs/lisp.md tells hosts the same.
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
    max_gap_s: float  # the most CPU time the loop's thread spent between two ticks, minus 10 ms
    max_wall_gap_s: float  # the same in wall-clock time
    seconds: float  # the whole run
    rss_growth: int  # the largest resident size seen during the run, minus the size before


class Ticker:
    """A task sleeping 10 ms at a time, recording how late it woke (CPU and wall time)."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self.wall_gaps: list[float] = []
        self.peak_rss = rss()
        self.done = anyio.Event()

    async def run(self) -> None:
        """Tick until :attr:`done` is set."""
        last, last_cpu = time.perf_counter(), time.thread_time()
        while not self.done.is_set():
            await anyio.sleep(TICK_S)
            now, cpu = time.perf_counter(), time.thread_time()
            self.wall_gaps.append(now - last - TICK_S)
            self.gaps.append(min(cpu - last_cpu, now - last) - TICK_S)
            last, last_cpu = now, cpu
            self.peak_rss = max(self.peak_rss, rss())

    @property
    def max_gap(self) -> float:
        """The largest CPU-time gap (see the module docstring)."""
        return max(self.gaps, default=0.0)

    @property
    def max_wall_gap(self) -> float:
        """The largest wall-clock gap."""
        return max(self.wall_gaps, default=0.0)


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
    """Run ``source`` next to a :class:`Ticker`."""
    before = rss()
    ticker = Ticker()
    with frozen_heap():
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker.run)
            result = await run(source, **kwargs)
            ticker.done.set()
        seconds = time.perf_counter() - start
    peak = max(ticker.peak_rss, rss())
    return Ticked(result, ticker.max_gap, ticker.max_wall_gap, seconds, peak - before)
