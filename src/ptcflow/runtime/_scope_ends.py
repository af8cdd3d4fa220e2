"""How a run ends when it cannot end normally: a crashing strategy, a stall, a forced end;
and the small helpers of :meth:`RunScope.emit` (split out of _scope.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ptcflow.signals import CANCELLED, INTERNAL, Err, ErrorEnvelope, Signal

if TYPE_CHECKING:
    from ptcflow.runtime._scope import RunScope

__all__ = (
    "FROZEN_TYPES",
    "cancelled",
    "crashed",
    "force_end",
    "is_frozen",
    "not_a_directive",
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
