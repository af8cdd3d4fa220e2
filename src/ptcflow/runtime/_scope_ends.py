"""How a run ends: normally (the end signal and the Step), or when it cannot end normally
(a crashing strategy, a stall, a forced end); and the small helpers of
:meth:`RunScope.emit` (split out of _scope.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ptcflow.runtime._step import Step, step_details
from ptcflow.signals import (
    CANCELLED,
    INTERNAL,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    Err,
    ErrorEnvelope,
    Ok,
    RequestEndData,
    Signal,
)

if TYPE_CHECKING:
    from ptcflow.runtime._scope import RunScope

__all__ = (
    "FROZEN_TYPES",
    "cancelled",
    "crashed",
    "force_end",
    "is_frozen",
    "not_a_directive",
    "publish_end",
    "sink",
    "stall",
)


def crashed(run: RunScope, exc: Exception, where: str) -> None:
    """End ``run`` as failed (``internal``): its strategy raised ``exc`` while ``where``."""
    log = run.executor.log
    if log is not None:
        log.error("run.strategy_crashed", run_id=run.run_id, strategy=run.name, exc_info=exc)
    err = ErrorEnvelope.make(
        INTERNAL,
        f"strategy {run.name!r} raised {type(exc).__name__} while {where}: {exc}",
        {"strategy": run.name, "exception": type(exc).__name__, "where": where},
        retryable=False,
    )
    run._finish(Err(error=err), run.usage, "strategy_error", route=False)


def stall(run: RunScope) -> None:
    """End a run that has nothing in flight and no outcome (it could never progress)."""
    if run.cancelling is not None:
        run._end_cancelled()
        return
    err = ErrorEnvelope.make(
        INTERNAL,
        f"strategy {run.name!r} stopped asking for work before reaching an outcome "
        f"(state {type(run.state).__name__}, nothing in flight): the run cannot "
        "progress. A strategy must emit a directive or return an outcome from "
        "outcome() after every init/handle.",
        {"strategy": run.name, "state": type(run.state).__name__},
        retryable=False,
    )
    run._finish(Err(error=err), run.usage, "stalled")


def not_a_directive(run: RunScope, value: object) -> None:
    """End ``run`` as failed: its strategy returned ``value`` among its directives."""
    crashed(
        run,
        TypeError(
            f"it returned {type(value).__name__} {value!r:.80} among its directives; "
            "init/handle must return (state, [Directive, ...])"
        ),
        "returning directives",
    )


def force_end(run: RunScope) -> None:
    """Last resort when directives ignore cancellation: answer them and end the run."""
    log = run.executor.log
    if log is not None:
        log.warning("run.cancel_grace_exceeded", run_id=run.run_id, in_flight=len(run.inflight))
    reason = run.cancelling or cancelled(f"run {run.run_id} was cancelled")
    for ctx in list(run.inflight):
        run.executor.finish(ctx, ctx.kind, reason)
    if not run.closing:
        run._finish(reason, run.usage, reason.error.type)
    run._emit_end()


_FROZEN: dict[type[Any], bool] = {}
FROZEN_TYPES: set[type[Any]] = set()
"""The types :func:`is_frozen` found immutable (a set lookup on the hot path)."""


def is_frozen(state: Any) -> bool:
    """True when ``state`` cannot change in place (a frozen msgspec struct or dataclass,
    a tuple, a scalar), so the same object means the same outcome."""
    cls = type(state)
    known = _FROZEN.get(cls)
    if known is None:
        config = getattr(cls, "__struct_config__", None)
        params = getattr(cls, "__dataclass_params__", None)
        known = (
            (config is not None and bool(config.frozen))
            or (params is not None and bool(params.frozen))
            or cls in (tuple, str, int, float, bool, bytes, frozenset, type(None))
        )
        if len(_FROZEN) < 256:
            _FROZEN[cls] = known
            if known:
                FROZEN_TYPES.add(cls)
    return known


def sink(publish: Any, recorded: list[Signal] | None) -> Any:
    """One callable taking each signal to the bus and/or the record (``None``: nowhere)."""
    if recorded is None:
        return publish
    if publish is None:
        return recorded.append
    keep = recorded.append

    def both(signal: Signal) -> None:
        publish(signal)
        keep(signal)

    return both


def cancelled(message: str) -> Err:
    """A non-retryable ``cancelled`` error."""
    return Err(error=ErrorEnvelope.make(CANCELLED, message, retryable=False))


def publish_end(run: RunScope) -> None:
    """End ``run`` normally (``RunScope._emit_end``): publish the end signal, fold it in,
    build the Step, wake the waiters."""
    if run.finished or run._ending is None:
        return
    run.finished = True
    result, usage, reason, route = run._ending
    ok = isinstance(result, Ok)
    end_type = REQUEST_COMPLETED if ok else REQUEST_FAILED
    reason = reason or ("completed" if ok else "failed")
    sig = run.emit(end_type, RequestEndData(result=result, usage=usage, reason=reason))
    if route:
        try:
            run.state, _ = run.strategy.handle(run.state, sig)
        except Exception as exc:  # the run is over: report it, keep the Step as is
            log = run.executor.log
            if log is not None:
                log.error(
                    "run.strategy_crashed",
                    run_id=run.run_id,
                    strategy=run.name,
                    where=f"handling the end signal {sig.type}",
                    exc_info=exc,
                )
    now = run.clock()
    run.step = step = Step(
        run_id=run.run_id,
        ok=ok,
        value=result.payload if ok else None,
        error=None if ok else result.error,
        usage=usage,
        reason=reason,
        turns=run.turns,
        tool_calls=run.tool_calls,
        duration_ms=round((now - run.started) * 1000.0, 3),
        signals=tuple(run.recorded) if run.recorded is not None else (),
        **step_details(run.strategy, run.state),
    )
    tel = run.telemetry
    if tel is not None and run.span is not None:
        tel.end_span(
            run.span,
            result,
            {
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
            },
        )
    ex = run.executor
    ex.n_runs_active -= 1
    if ex.log_events:
        ex.log.debug(
            "run.finished",
            run_id=run.run_id,
            agent=run.name,
            ok=step.ok,
            reason=reason,
            error_type=None if step.error is None else step.error.type,
            duration_ms=step.duration_ms,
            turns=run.turns,
            tool_calls=run.tool_calls,
        )
    if run.done_event is not None:
        run.done_event.set()
    if run.wake is not None:
        run.wake.set()
    if run.idle_event is not None:
        run.idle_event.set()
