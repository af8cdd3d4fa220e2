"""The run core's record of one directive (or sub-call): :class:`Flight`."""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.directives import Directive
from ptcflow.signals import CANCELLED, Err, ErrorEnvelope, Ok

__all__ = ("Flight", "cancelled")


def cancelled(message: str) -> Err:
    """A non-retryable ``cancelled`` error."""
    return Err(error=ErrorEnvelope.make(CANCELLED, message, retryable=False))


class Flight(msgspec.Struct, eq=False):
    """One directive (or sub-call) of a run, from acceptance to its terminal signal.

    Built by the core with its ``make_flight(directive, state, parent)``; a driver may
    pass a subclass to keep its own per-directive state (fields with defaults), or use
    :attr:`work`.

    Attributes:
        directive: what to perform.
        state: the strategy's state when the directive was accepted (for snapshots).
        parent: the flight whose work made this sub-call (``None`` for a directive).
        cancel_reason: set once the work must stop; its terminal then carries this error
            unless the work reports a result of its own.
        done: True once its terminal signal is published.
        result: the result its terminal signal carried (once done).
        traceparent: the W3C trace context its signals carry (the driver sets it).
        work: the driver's handle on the running work (free for the driver).
        subcalls: its open sub-calls (flights of the same class).
    """

    directive: Directive
    state: Any
    parent: Flight | None = None
    cancel_reason: Err | None = None
    done: bool = False
    result: Ok[Any] | Err | None = None
    traceparent: str | None = None
    work: Any = None
    subcalls: dict[Any, None] | None = None

    def __repr__(self) -> str:
        d = self.directive
        status = "done" if self.done else "cancelling" if self.cancel_reason else "in flight"
        return f"<{type(self).__name__} {type(d).__name__} {d.id!r} {status}>"
