"""The run driver's cancel scope, made cheap for the common case.

Every run's driver performs its directives inside one cancel scope, so that cancelling the
run (``RunHandle.cancel``, a parent run, the run ending while a directive is in flight, the
Runtime closing) interrupts the directive the driver is awaiting. An anyio ``CancelScope``
costs several microseconds to enter and exit on asyncio (and more on trio), a large share
of a whole run, although almost no run is ever cancelled this way.

On asyncio, a run without a deadline of its own gets a :class:`NativeScope` instead:
entering it records the task, its ``Task.cancelling()`` count and its innermost anyio
scope; leaving an uncancelled one costs nothing more. Cancelling it does what anyio's
scope does for its host task: ``Task.cancel()`` with a marker, re-delivered on each loop
iteration until the task leaves the scope (code that swallows one cancellation is
cancelled again), never while the task sits in a shielded anyio scope opened inside this
one (it looks again every 5 ms); on exit it takes back its own cancellation requests
(``Task.uncancel()``) and swallows the ``CancelledError`` only when no other cancellation
is pending, so an enclosing anyio scope or a native ``Task.cancel()`` still propagates. With a deadline, or on trio, the
backend's own scope is used (on trio, ``trio.CancelScope`` directly: anyio's wrapper adds
nothing there).
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ("NativeScope", "anyio_state_of", "driver_scope_factory", "task_getter")

_ref = weakref.ref

_MESSAGE = "ptcflow: run cancelled"
_SHIELD_POLL_S = 0.005
"""How often a cancelled scope looks whether its task left a shielded scope."""


try:  # anyio's per-task state on asyncio, read-only (see NativeScope._shielded)
    from anyio._backends._asyncio import _task_states

    # WeakKeyDictionary.get(task) is data.get(ref(task)): called directly, no Python frame
    _states: Callable[[Any], Any] = _task_states.data.get  # type: ignore[attr-defined]
except Exception:  # pragma: no cover - another anyio layout

    def _states(key: Any) -> Any:
        return None


def anyio_state_of(task: Any) -> Any:
    """anyio's ``TaskState`` of an asyncio ``task`` (``None`` when it has none)."""
    return _states(_ref(task))


class NativeScope:
    """A cancel scope for one asyncio task, without a deadline (see the module docstring).

    Only :meth:`cancel` and :attr:`cancelled_caught` are offered: what the run driver uses.
    """

    __slots__ = (
        "_active",
        "_at_enter",
        "_cancel_called",
        "_current",
        "_handle",
        "_outer",
        "_pending",
        "_task",
        "cancelled_caught",
    )

    def __init__(self, current_task: Callable[[], Any] = asyncio.current_task) -> None:
        self._current = current_task
        self._task: asyncio.Task[Any] | None = None
        self._active = False
        self._cancel_called = False
        self._pending = 0
        self._at_enter = 0
        self._outer: Any = None
        self._handle: asyncio.Handle | None = None
        self.cancelled_caught = False

    def __enter__(self) -> NativeScope:
        task = self._current()
        if task is None:  # pragma: no cover - the driver always runs in a task
            raise RuntimeError("NativeScope needs a running asyncio task")
        self._task = task
        self._at_enter = task.cancelling()
        state = _states(_ref(task))  # anyio_state_of(task), inline
        self._outer = None if state is None else state.cancel_scope
        self._active = True
        if self._cancel_called:
            self._deliver()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._active = False
        if not self._cancel_called:
            return False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        task = self._task
        assert task is not None
        while self._pending:
            task.uncancel()
            self._pending -= 1
        if isinstance(exc, asyncio.CancelledError) and task.cancelling() <= self._at_enter:
            self.cancelled_caught = True
            return True
        return False

    def cancel(self) -> None:
        """Cancel the task's work inside this scope (now, or when it next awaits)."""
        if self._cancel_called:
            return
        self._cancel_called = True
        if self._active:
            self._deliver()

    def _deliver(self) -> None:
        self._handle = None
        task = self._task
        if not self._active or task is None or task.done():
            return
        loop = task.get_loop()
        if self._shielded(task):
            # Not now; look again soon (anyio would restart delivery when the shielded
            # scope exits, a hook this scope does not have).
            self._handle = loop.call_later(_SHIELD_POLL_S, self._deliver)
            return
        if task is not asyncio.current_task() and not task._must_cancel:  # type: ignore[attr-defined]
            waiter = task._fut_waiter  # type: ignore[attr-defined]
            if not isinstance(waiter, asyncio.Future) or not waiter.done():
                task.cancel(_MESSAGE)
                self._pending += 1
        # Level-triggered, like anyio: again on the next iteration until the task leaves.
        self._handle = loop.call_soon(self._deliver)

    def _shielded(self, task: asyncio.Task[Any]) -> bool:
        """True when the task waits in a shielded anyio scope entered inside this one."""
        state = anyio_state_of(task)
        scope = None if state is None else state.cancel_scope
        outer = self._outer
        while scope is not None and scope is not outer:
            if scope.shield:
                return True
            scope = scope._parent_scope
        return False


def task_getter() -> Callable[[], Any]:
    """``asyncio.current_task`` for the running loop, without its loop lookup per call."""
    current_tasks = getattr(asyncio.tasks, "_current_tasks", None)
    if not isinstance(current_tasks, dict):  # pragma: no cover - another asyncio
        return asyncio.current_task
    return functools.partial(current_tasks.get, asyncio.get_running_loop())


def driver_scope_factory(cancel_scope: Callable[..., Any]) -> Callable[[float], Any]:
    """Return ``make(deadline) -> scope`` for run drivers on the running backend.

    ``cancel_scope`` is the backend's anyio scope factory (used with a finite deadline).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        current = task_getter()

        def asyncio_scope(deadline: float) -> Any:
            if deadline == math.inf:
                return NativeScope(current)
            return cancel_scope(deadline=deadline)

        return asyncio_scope
    trio = sys.modules.get("trio")
    if trio is not None:
        native: Callable[..., Any] = trio.CancelScope

        def trio_scope(deadline: float) -> Any:
            return native(deadline=deadline)

        return trio_scope
    return lambda deadline: cancel_scope(deadline=deadline)  # pragma: no cover
