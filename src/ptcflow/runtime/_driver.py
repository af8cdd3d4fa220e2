"""The run's driver: the task that awaits a run performs its sequential work.

A sequential run (model, tool, model, ...) spawns no task at all: the task that awaits
the run performs one directive at a time itself, inside one cancel scope (see _cancel.py)
that carries the mission deadline when that is tighter than the awaiting task's own
deadline (which its enclosing scopes enforce; a run they cancel past its deadline ends
with ``timeout``). Directives submitted while the driver is busy (parallel tool calls) run
in tasks of the Runtime's task group instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ptcflow.runtime._scope_ends import cancelled, force_end, stall
from ptcflow.runtime._step import Step
from ptcflow.runtime._telemetry import attach
from ptcflow.signals import Err

if TYPE_CHECKING:
    from ptcflow.runtime._scope import RunScope

__all__ = ("drive", "wait_done", "wait_finished", "wait_idle")

CANCEL_GRACE_S = 5.0
"""How long a cancelled run waits for its directives to exit before giving up on them."""


async def drive(
    run: RunScope, registry: dict[RunScope, None] | None = None, *, start: bool = False
) -> Step:
    """Perform ``run``'s sequential work and wait for its end; return its Step.

    Cancelling the awaiting task cancels the run (every in-flight directive still gets its
    terminal signal) and re-raises the cancellation. ``start``: start the run here first
    (``Runtime.run`` returns this coroutine itself: nothing happens until it is awaited).
    ``registry``: where the run is listed while it is driven (the Runtime's runs).
    """
    if registry is not None:
        registry[run] = None
    try:
        if start:
            run.start()
        ex = run.executor
        lean = ex._lean
        tel = ex.telemetry
        clock = ex.clock
        try:
            with ex.prim.driver_scope(run.own_deadline) as scope:
                run.driver_scope = scope
                while not run.finished:
                    ctx = run.ready
                    if ctx is not None:
                        run.ready = None
                        kind = ctx.kind
                        if not (
                            lean
                            and ctx.deadline >= run.deadline
                            and ctx.attempt_ms is None
                            and ctx.cancel_reason is None
                        ):
                            await ex.perform(ctx, driver=True)
                            continue
                        # The fast lane, inline (no coroutine per directive): the driver's own
                        # scope (mission deadline, cancellation) covers the directive -- it
                        # has no deadline of its own, no attempt timeout, no global limiter.
                        # The first attempt goes through the kind's call/settle/fail split
                        # when it has one; a failure goes on to the executor's retry loop, so
                        # the results are those of Executor.perform.
                        result: Any = None
                        try:
                            ctx._scope = scope
                            ctx.started_at = clock()
                            if tel is not None:
                                kind.open_span(ctx, tel)
                                ctx.otel_token = attach(ctx.otel_context)
                            if kind.prepare is not None:
                                result = kind.prepare(ctx)
                            if result is None:
                                ctx.attempt = 1
                                call = kind.call
                                if call is None:
                                    result = await kind.perform(ctx)
                                else:
                                    work = call(ctx)
                                    if type(work) is Err:
                                        result = work
                                    else:
                                        try:
                                            value = await work
                                        except Exception as exc:
                                            if kind.fail is None:
                                                raise
                                            result = kind.fail(ctx, exc)
                                        else:
                                            settle = kind.settle
                                            result = value if settle is None else settle(ctx, value)
                                if isinstance(result, Err):
                                    result = await ex._attempts(ctx, kind, result)
                        except Exception as exc:
                            result = Err(error=ex._crash(ctx, kind, exc))
                        finally:
                            if (
                                result is None
                                or ctx.cancel_reason is not None
                                or ctx.otel_token is not None
                            ):
                                ex.performed(ctx, kind, result, True)
                            else:  # performed(), its common case inline
                                ctx._scope = None
                                if not run.cancelling:
                                    run.driver_idle = True
                                ex.finish(ctx, kind, result)
                        continue
                    if not run.inflight and not run.closing:
                        stall(run)  # nothing can ever wake this run
                        break
                    run.driver_idle = True
                    wake = run.wake = ex.prim.event()
                    await wake.wait()
            run.driver_scope = None
            run.driver_idle = False
            if not run.finished:
                # the scope ended the loop: the mission deadline, cancel(), or closing
                if run.cancelling is None and not run.closing:
                    run.expire()
                await wait_finished(run)
            elif run.inflight:
                await wait_idle(run)
        except anyio.get_cancelled_exc_class():
            run.driver_scope = None
            run.driver_idle = False
            if run.cancelling is None and ex.clock() >= run.deadline:
                run.expire()  # an enclosing scope enforced the run's deadline
            else:
                run.cancel(cancelled(f"run {run.run_id} ({run.name}) was cancelled"))
            await wait_finished(run)
            raise
        assert run.step is not None
        return run.step
    finally:
        if registry is not None:
            registry.pop(run, None)


async def wait_finished(run: RunScope) -> None:
    """Wait (shielded, bounded) until ``run`` is over and no directive is in flight."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(CANCEL_GRACE_S):
            await wait_done(run)
        if run.inflight or not run.finished:
            force_end(run)


async def wait_done(run: RunScope) -> Step:
    """Wait until ``run`` has ended and its directives have exited; return its Step."""
    if not run.finished:
        if run.done_event is None:
            run.done_event = run.executor.prim.event()
        await run.done_event.wait()
    if run.inflight:
        await wait_idle(run)
    assert run.step is not None
    return run.step


async def wait_idle(run: RunScope) -> None:
    """Wait until no directive of ``run`` is in flight."""
    while run.inflight:
        run.idle_event = run.executor.prim.event()
        await run.idle_event.wait()
