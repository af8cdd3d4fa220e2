"""The running backend's clock, cancel scopes, events and deadline lookup, resolved once.

The executor and the run drivers use these on every run; looking the backend up through
anyio's public functions on each call (sniffio, a weak dictionary) would cost more than
the work itself. The objects made are the ones anyio's public API returns.
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from ptcflow.runtime._cancel import anyio_state_of, driver_scope_factory, task_getter

__all__ = ("Primitives", "backend_clock")


def backend_clock() -> Callable[[], float]:
    """Return the running backend's clock (what ``anyio.current_time`` reads), resolved once."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if type(loop).time is asyncio.BaseEventLoop.time:
            return time.monotonic  # what BaseEventLoop.time returns, without the call
        return loop.time
    trio = sys.modules.get("trio")
    if trio is not None:
        clock: Callable[[], float] = trio.current_time
        return clock
    return anyio.current_time  # pragma: no cover - another backend


class Primitives:
    """The running backend's cancel scope, event and deadline lookup, resolved once.

    ``anyio.CancelScope()``, ``anyio.Event()`` and ``anyio.current_effective_deadline()``
    look the backend up on every call (sniffio, a weak dictionary); the runtime makes a
    few of each per run, so it asks anyio's backend class directly. The objects are the
    same ones the public API returns.
    """

    __slots__ = ("cancel_scope", "driver_scope", "effective_deadline", "event")

    def __init__(self) -> None:
        self.cancel_scope: Callable[..., anyio.CancelScope] = anyio.CancelScope
        self.event: Callable[[], anyio.Event] = anyio.Event
        self.effective_deadline: Callable[[], float] = anyio.current_effective_deadline
        try:
            from anyio._core._eventloop import get_async_backend

            backend = get_async_backend()
            self.cancel_scope = backend.create_cancel_scope
            self.event = backend.create_event
            self.effective_deadline = backend.current_effective_deadline
        except Exception:  # pragma: no cover - another anyio layout: the public API
            pass
        self.driver_scope: Callable[[float], Any] = driver_scope_factory(self.cancel_scope)
        """A run driver's scope for a deadline (see _cancel.py)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.effective_deadline = _asyncio_effective_deadline(self.effective_deadline)


def _asyncio_effective_deadline(full: Callable[[], float]) -> Callable[[], float]:
    """``anyio.current_effective_deadline`` on asyncio, in one lookup of the task's anyio
    state (anyio looks the task up twice, and raises and catches a KeyError for a task
    that never entered an anyio scope)."""
    get_state = anyio_state_of
    current = task_getter()

    def effective_deadline() -> float:
        task = current()
        state = None if task is None else get_state(task)
        scope = None if state is None else state.cancel_scope
        deadline = math.inf
        try:
            while scope is not None:  # anyio's own walk, without its second lookup
                if scope._cancel_called:
                    return -math.inf
                if scope._deadline < deadline:
                    deadline = scope._deadline
                if scope._shield:
                    break
                scope = scope._parent_scope
        except AttributeError:  # pragma: no cover - another anyio layout
            return full()
        return deadline

    return effective_deadline
