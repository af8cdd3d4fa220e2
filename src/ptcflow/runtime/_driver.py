"""The local driver: the anyio loop that drives one run's core to its Step.

The task that awaits a run performs its sequential work itself: one directive at a time,
inside one cancel scope that carries the run's deadline when that is tighter than the
awaiting task's own (whose enclosing scopes enforce theirs; a run they cut short past its
deadline ends with ``timeout``). A sequential run (model, tool, model, ...) therefore
spawns no task. Directives that arrive while the driver is busy (parallel tool calls) run
in tasks of the Runtime's task group (the run decides which, as it carries out the work
the core hands out).

Cancelling the awaiting task cancels the run: every directive still gets its terminal
signal, the run ends ``cancelled`` (or ``timeout`` past its deadline), and the
cancellation is re-raised.
"""

from __future__ import annotations

import math

import anyio

from ptcflow.core import Step, cancelled
from ptcflow.runtime._run import LocalRun

__all__ = ("CANCEL_GRACE_S", "drive", "new_scope", "wait_done")

CANCEL_GRACE_S = 5.0
"""How long a cancelled run waits for its directives to stop before giving up on them."""


def new_scope(deadline: float = math.inf) -> anyio.CancelScope:
    """A new cancel scope with ``deadline`` (``math.inf``: none), initialised once.

    ``anyio.CancelScope()`` builds the backend's scope in ``__new__`` and Python then
    runs ``__init__`` on it a second time (two sets made and dropped, ~60 bytecodes,
    per run); ``anyio.move_on_after(None)`` returns the same scope, built once. A finite
    deadline keeps ``CancelScope(deadline=...)``: ``move_on_after`` takes a delay.
    """
    if deadline == math.inf:
        return anyio.move_on_after(None)
    return anyio.CancelScope(deadline=deadline)


async def drive(
    run: LocalRun,
    registry: dict[LocalRun, None] | None = None,
    *,
    start: bool = False,
    otel_parent: object = None,
) -> Step:
    """Perform ``run``'s sequential work and wait for its end; return its Step.

    ``start``: start the run here first (``Runtime.run`` returns this coroutine itself:
    nothing happens until it is awaited). ``registry``: where the run is listed while it
    is driven (the Runtime's runs).
    """
    if registry is not None:
        registry[run] = None
    try:
        if start:
            run.begin(otel_parent)
        performer = run.performer
        try:
            with new_scope(run.own_deadline) as scope:
                run.scope = scope
                while run.step is None:
                    ctx = run.ready
                    if ctx is None:
                        run.driver_idle = True
                        wake = run.wake = anyio.Event()
                        await wake.wait()
                        continue
                    run.ready = None
                    ctx.scope = scope
                    result = None
                    try:
                        if ctx.cancel_reason is None:
                            result = await performer.perform(ctx)
                    finally:
                        run.driver_idle = True  # the next directive is the driver's again
                        run.report(ctx, result)
        except anyio.get_cancelled_exc_class():
            _leave(run)
            core = run.core
            if run.step is None and (core.held or (core.cancelling is None and not core.closing)):
                now = run.executor.clock()
                if now >= run.deadline:
                    run.expire(now)  # an enclosing scope enforced the run's deadline
                else:
                    run.cancel(cancelled(f"run {run.run_id} ({run.name}) was cancelled"), now)
            await wait_finished(run)
            raise
        _leave(run)
        if run.step is None:
            # the driver's scope ended the loop: the run's deadline passed
            if run.core.cancelling is None and not run.core.closing:
                run.expire(run.executor.clock())
            await wait_finished(run)
        assert run.step is not None
        return run.step
    finally:
        if registry is not None:
            registry.pop(run, None)


def _leave(run: LocalRun) -> None:
    """The driver stops performing: directives from now on run in tasks."""
    run.scope = None
    run.driver_idle = False
    ctx = run.ready
    if ctx is not None:  # handed to the driver, never started
        run.ready = None
        run.report(ctx, None)


async def wait_finished(run: LocalRun) -> None:
    """Wait (shielded, bounded by :data:`CANCEL_GRACE_S`) until ``run`` has ended; past
    that, give up on the directives that ignore their cancellation."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(CANCEL_GRACE_S):
            await wait_done(run)
        if run.step is None:
            log = run.executor.log
            if log is not None:
                log.warning(
                    "run.cancel_grace_exceeded", run_id=run.run_id, in_flight=len(run.core.flights)
                )
            run.abandon(run.executor.clock())


async def wait_done(run: LocalRun) -> Step:
    """Wait until ``run`` has ended; return its Step."""
    if run.step is None:
        if run.done is None:
            run.done = anyio.Event()
        await run.done.wait()
    assert run.step is not None
    return run.step
