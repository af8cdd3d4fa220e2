"""The :class:`Executor`: what a Runtime performs directives with, and its statistics.

It holds the shared resources of every run of one Runtime: the retry policy, the
concurrency limiters (global, per provider, per tool), the worker threads of sync tools,
telemetry, the clock, the registered directive handlers and the counters behind
:meth:`Executor.statistics`. How a directive is performed with them is in ``_perform.py``.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ptcflow.directives import Directive
from ptcflow.runtime._config import Limits, RetryPolicy
from ptcflow.runtime._stats import Counters, ExecutorStatistics
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.runtime._threads import WorkerThreads

__all__ = ("Executor", "ExecutorStatistics")


class Executor:
    """Performs directives for the runs of one :class:`~ptcflow.runtime.Runtime`.

    The Runtime builds it; users reach it as ``rt.executor`` (for :meth:`statistics`) and
    extend it through ``Runtime(handlers={Kind: handler})`` (see docs/runtime.md for the
    handler signature). Create it inside the event loop that runs the Runtime.

    Args:
        task_group: the Runtime's long-lived task group; directives that overlap run in it.
        retry: the retry policy.
        limits: concurrency limits.
        telemetry: where spans and metrics go (``None``: nowhere).
        handlers: extra directive kinds, ``{DirectiveSubclass: async handler}``.
        rand: the random source of backoff jitter (inject one in tests).

    Example:
        >>> # async with Runtime() as rt: rt.executor.statistics().in_flight
    """

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        retry: RetryPolicy,
        limits: Limits,
        telemetry: Telemetry | None = None,
        handlers: Mapping[type[Directive], Callable[..., Any]] | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.task_group = task_group
        self.clock = backend_clock()
        """The running backend's clock (what ``anyio.current_time()`` reads), looked up once."""
        self.retry = retry
        self.limits = limits
        self.telemetry = telemetry if telemetry is not None and telemetry.active else None
        self.log_events = telemetry is not None and telemetry.log_events
        self.log: Any = telemetry.log if telemetry is not None else None
        self.rand = rand
        self.handlers: dict[type[Directive], Callable[..., Any]] = dict(handlers or {})
        self.global_limiter = (
            anyio.CapacityLimiter(limits.max_directives) if limits.max_directives else None
        )
        self.threads = WorkerThreads(limits.sync_tool_threads)
        self.provider_limited = bool(limits.per_provider or limits.provider_limits)
        """False when no provider has a concurrency limit (no limiter lookup per call)."""
        self.tool_limited = bool(limits.per_tool or limits.tool_limits)
        """False when no tool has a concurrency limit."""
        self._provider_limiters: dict[str, anyio.CapacityLimiter | None] = {}
        self._tool_limiters: dict[str, anyio.CapacityLimiter | None] = {}
        self.counters = Counters()

    def __repr__(self) -> str:
        c = self.counters
        return f"<Executor in_flight={c.in_flight} runs_active={c.runs_active}>"

    @property
    def thread_limiter(self) -> anyio.CapacityLimiter:
        """The limiter of sync tools' worker threads (``Limits.sync_tool_threads``)."""
        return self.threads.limiter

    def statistics(self) -> ExecutorStatistics:
        """Return a frozen snapshot of the counters (see :class:`ExecutorStatistics`)."""
        return self.counters.snapshot(
            abandoned_threads=self.threads.abandoned, late_threads=self.threads.late
        )

    def provider_limiter(self, name: str) -> anyio.CapacityLimiter | None:
        """Return the limiter of provider ``name`` (``None`` when unlimited)."""
        try:
            return self._provider_limiters[name]
        except KeyError:
            n = self.limits.limit_for_provider(name)
            lim = self._provider_limiters[name] = anyio.CapacityLimiter(n) if n else None
            return lim

    def tool_limiter(self, name: str) -> anyio.CapacityLimiter | None:
        """Return the limiter of tool ``name`` (``None`` when unlimited)."""
        try:
            return self._tool_limiters[name]
        except KeyError:
            n = self.limits.limit_for_tool(name)
            lim = self._tool_limiters[name] = anyio.CapacityLimiter(n) if n else None
            return lim

    def close(self) -> None:
        """Let the worker threads exit (the Runtime calls this when its block ends)."""
        self.threads.close()


def backend_clock() -> Callable[[], float]:
    """The running backend's clock, the one anyio's deadlines use: the asyncio loop's
    ``time`` method, or ``trio.current_time`` (``anyio.current_time`` looks the backend up
    on every call). A loop that keeps asyncio's own ``time`` gives ``time.monotonic``
    itself: what that method returns, without a Python call (a run reads the clock ~7 times).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if type(loop).time is asyncio.BaseEventLoop.time:
            return time.monotonic
        return loop.time
    trio = sys.modules.get("trio")
    if trio is not None:
        clock: Callable[[], float] = trio.current_time
        return clock
    return anyio.current_time  # pragma: no cover - a backend anyio adds later
