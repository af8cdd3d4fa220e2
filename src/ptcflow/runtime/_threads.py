"""Worker threads for synchronous tools: a bounded pool fed through a queue.

A plain ``def`` tool runs in a worker thread so it never blocks the event loop. The pool
keeps its threads (up to ``max_threads``, started as needed) and hands each call to an
idle one through a queue; the thread runs the function in a copy of the caller's context
(so OpenTelemetry spans the tool opens nest under ``execute_tool``) and posts the result
back with the event loop's own thread-safe call (``loop.call_soon_threadsafe`` on asyncio,
``TrioToken.run_sync_soon`` on trio; calls that return together wake the loop once).
That is the whole hop: no task, no cancel scope.

Python cannot stop a thread, so a call whose caller is cancelled (a timeout, the run
ending) is **abandoned**: the caller gets its cancellation at once, the thread runs the
function to its end, and its late result is dropped and counted. An abandoned thread keeps
its slot until the function returns, so at most ``max_threads`` threads ever run tools,
abandoned ones included; :attr:`WorkerThreads.abandoned` says how many are stuck.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

__all__ = ("WorkerThreads",)

T = TypeVar("T")


class _Call:
    """One function call handed to a worker thread."""

    __slots__ = ("abandoned", "args", "context", "done", "error", "finished", "fn", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.context = contextvars.copy_context()
        self.done = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.abandoned = False


class WorkerThreads:
    """A pool of at most ``max_threads`` worker threads for one event loop.

    Create it inside the event loop that will await it; :meth:`close` when done (idle
    threads exit; threads still running a call exit after it).

    Args:
        max_threads: the most threads running calls at once, abandoned ones included.

    Example:
        >>> async def main() -> int:
        ...     pool = WorkerThreads(4)
        ...     try:
        ...         return await pool.run_sync(sum, (1, 2, 3))
        ...     finally:
        ...         pool.close()
        >>> anyio.run(main)
        6
    """

    def __init__(self, max_threads: int) -> None:
        self.limiter = anyio.CapacityLimiter(max_threads)
        self.busy = 0
        """Calls handed to threads and not finished (abandoned ones included)."""
        self.abandoned = 0
        """Threads still running a call whose caller stopped waiting."""
        self.late = 0
        """Results of abandoned calls, dropped when their thread finished."""
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._notify: Callable[..., object] = _loop_notifier()
        self._returned: collections.deque[_Call] = collections.deque()
        """Calls whose function returned, for the event loop to take (in its thread)."""
        self._waking = False
        """True while a wake-up of the event loop is on its way (a burst of calls that
        return together wakes it once)."""

    def __repr__(self) -> str:
        return (
            f"<WorkerThreads threads={len(self._threads)} busy={self.busy} "
            f"abandoned={self.abandoned}>"
        )

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Call ``fn(*args)`` in a worker thread and return what it returns. Blocks.

        Raises what ``fn`` raises. When the caller is cancelled, the cancellation is
        raised at once and the call is abandoned (see the module docstring).
        """
        call = _Call(fn, args)
        await self.limiter.acquire_on_behalf_of(call)
        self.busy += 1
        if self.busy > len(self._threads):
            thread = threading.Thread(
                target=self._work, name=f"ptcflow-tool-{len(self._threads) + 1}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
        self._queue.put(call)
        try:
            await call.done.wait()
        except BaseException:
            if not call.finished:
                call.abandoned = True
                self.abandoned += 1
            raise
        if call.error is not None:
            error, call.error = call.error, None  # no reference cycle through the frame
            raise error
        value: T = call.value
        return value

    def close(self) -> None:
        """Let every thread exit once it is idle (does not block)."""
        for _ in self._threads:
            self._queue.put(None)
        self._threads.clear()

    def _work(self) -> None:
        """A worker thread's loop: run calls until told to stop."""
        get = self._queue.get
        while True:
            call = get()
            if call is None:
                return
            try:
                call.value = call.context.run(call.fn, *call.args)
            except BaseException as exc:  # handed to the caller, which raises it
                call.error = exc
            self._returned.append(call)
            if not self._waking:
                self._waking = True
                try:
                    self._notify(self._finished)
                except Exception:  # the event loop is gone: nobody waits for anything
                    return

    def _finished(self) -> None:
        """In the event loop's thread: take every call that returned."""
        self._waking = False  # before taking: a call returning from now on wakes us again
        returned = self._returned
        while returned:
            call = returned.popleft()
            call.finished = True
            self.busy -= 1
            self.limiter.release_on_behalf_of(call)
            if call.abandoned:
                self.abandoned -= 1
                self.late += 1
                call.value = call.error = None
            else:
                call.done.set()


def _loop_notifier() -> Callable[..., object]:
    """The running event loop's thread-safe "call soon" (``(fn, *args)``)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return loop.call_soon_threadsafe
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            notify: Callable[..., object] = trio.lowlevel.current_trio_token().run_sync_soon
        except RuntimeError:
            pass
        else:
            return notify
    raise RuntimeError("WorkerThreads must be created inside a running asyncio or trio loop")
