"""Collect the signals a bus carries, for assertions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ptcflow.errors import UsageError
from ptcflow.signals import Signal, SignalBus, Subscription

__all__ = ("SignalLog", "collect_signals")


class SignalLog:
    """The signals collected by :func:`collect_signals`, oldest first.

    Reading :attr:`signals` (or :meth:`types`) takes in whatever the subscription buffered
    since the last read, so the log is up to date whenever it is looked at; no task runs
    in the background.
    """

    __slots__ = ("_items", "_sub")

    def __init__(self, sub: Subscription) -> None:
        self._sub = sub
        self._items: list[Signal] = []

    @property
    def signals(self) -> list[Signal]:
        """Every signal collected so far.

        Raises:
            UsageError: when the buffer overflowed and signals were lost.
        """
        self._items.extend(self._sub.drain_nowait())
        dropped = self._sub.statistics().dropped
        if dropped:
            raise UsageError(
                f"collect_signals({self._sub.pattern!r}) lost {dropped} signal(s): its buffer "
                "was full; pass a larger buffer= or read .signals more often"
            )
        return self._items

    def types(self, *, run_id: str | None = None) -> list[str]:
        """The ``type`` of each collected signal (of one run when ``run_id`` is given)."""
        return [s.type for s in self.signals if run_id is None or s.run_id == run_id]

    def of_type(self, type: str) -> list[Signal]:
        """The collected signals of one ``type``."""
        return [s for s in self.signals if s.type == type]


@contextmanager
def collect_signals(
    bus: SignalBus, pattern: str = "**", *, run_id: str | None = None, buffer: int = 100_000
) -> Iterator[SignalLog]:
    """Subscribe to ``bus`` for the duration of a ``with`` block and collect the signals.

    Does not block and starts no task: signals wait in the subscription's buffer until
    the log is read, and the subscription closes when the block ends (the log stays
    readable afterwards).

    Args:
        bus: the bus to listen to (for example the one given to the ``Runtime``).
        pattern: which signal types (``"ai.tool.*"``, ``"ai.**"``, ...).
        run_id: only signals of this run.
        buffer: how many signals may wait between reads; losing any raises on read.

    Example:
        >>> bus = SignalBus()
        >>> with collect_signals(bus, "ai.tool.*") as log:
        ...     bus.publish(Signal.create("ai.tool.started"))
        ...     bus.publish(Signal.create("ai.usage"))
        >>> log.types()
        ['ai.tool.started']
    """
    sub = bus.subscribe(pattern, run_id=run_id, buffer=buffer, overflow="drop_newest")
    log = SignalLog(sub)
    try:
        yield log
    finally:
        log._items.extend(sub.drain_nowait())
        sub.close()
