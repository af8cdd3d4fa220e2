"""Subscriptions: the bounded buffer behind each subscriber, and the handle users hold."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio
import anyio.lowlevel
import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals._pattern import compile_pattern, matches
from ptcflow.signals._signal import Signal

if TYPE_CHECKING:
    from ptcflow.signals._bus import SignalBus

__all__ = ("SignalOverflowError", "Subscription", "SubscriptionStatistics")


class SignalOverflowError(UsageError):
    """A subscription with ``overflow="error"`` fell behind and lost signals.

    Raised by :meth:`Subscription.receive` once the signals buffered before the gap have
    been consumed; the subscription is closed at that point.
    """


class SubscriptionStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of one subscription.

    ``delivered`` counts signals accepted into the buffer, ``dropped`` those lost to the
    overflow policy, ``buffered`` those waiting to be received.
    """

    pattern: str
    run_id: str | None
    buffer: int
    overflow: str
    buffered: int
    delivered: int
    dropped: int
    closed: bool


class _Inbox:
    """The bus-side half of a subscription: buffer, policy, counters, wake-up event."""

    __slots__ = (
        "buffer",
        "capacity",
        "closed",
        "delivered",
        "dropped",
        "overflow",
        "overflowed",
        "pattern",
        "run_id",
        "segments",
        "waiter",
    )

    def __init__(self, pattern: str, run_id: str | None, capacity: int, overflow: str) -> None:
        self.pattern = pattern
        self.segments = compile_pattern(pattern)
        self.run_id = run_id
        self.capacity = capacity
        self.overflow = overflow
        self.buffer: deque[Signal] = deque()
        self.delivered = 0
        self.dropped = 0
        self.overflowed = False
        self.closed = False
        self.waiter: anyio.Event | None = None

    def matches(self, type: str) -> bool:
        return matches(self.segments, tuple(type.split(".")))

    def offer(self, signal: Signal) -> bool:
        """Buffer one signal; return False when the inbox must leave the bus (overflowed)."""
        buffer = self.buffer
        if len(buffer) >= self.capacity:
            self.dropped += 1
            if self.overflow == "drop_oldest":
                buffer.popleft()
            elif self.overflow == "drop_newest":
                return True
            else:
                self.overflowed = True
                self.wake()
                return False
        buffer.append(signal)
        self.delivered += 1
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            waiter.set()
        return True

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            waiter.set()

    def statistics(self) -> SubscriptionStatistics:
        return SubscriptionStatistics(
            pattern=self.pattern,
            run_id=self.run_id,
            buffer=self.capacity,
            overflow=self.overflow,
            buffered=len(self.buffer),
            delivered=self.delivered,
            dropped=self.dropped,
            closed=self.closed,
        )


class Subscription:
    """An open subscription: an async iterator of signals and an async context manager.

    Created by :meth:`SignalBus.subscribe`; it receives signals from that moment on.
    Leaving ``async with`` (or calling :meth:`close`) unsubscribes; so does dropping the
    last reference, so a forgotten subscription never leaks. Iteration ends when the
    subscription or its bus is closed (after the buffered signals).

    Example:
        >>> import anyio
        >>> from ptcflow.signals import Signal, SignalBus
        >>> async def main() -> list[int]:
        ...     bus = SignalBus()
        ...     sub = bus.subscribe("ai.usage", buffer=2, overflow="drop_newest")
        ...     for n in range(3):
        ...         bus.publish(Signal.create("ai.usage", seq=n))
        ...     bus.close()
        ...     return [s.seq async for s in sub]
        >>> anyio.run(main)
        [0, 1]
    """

    __slots__ = ("__weakref__", "_bus", "_inbox")

    def __init__(self, bus: SignalBus, inbox: _Inbox) -> None:
        self._bus = bus
        self._inbox = inbox

    @property
    def pattern(self) -> str:
        """The pattern this subscription was opened with."""
        return self._inbox.pattern

    @property
    def run_id(self) -> str | None:
        """The run this subscription is restricted to, if any."""
        return self._inbox.run_id

    @property
    def closed(self) -> bool:
        """True once the subscription no longer receives new signals."""
        return self._inbox.closed

    def receive_nowait(self) -> Signal:
        """Return the next buffered signal without waiting.

        Raises:
            anyio.WouldBlock: nothing is buffered and the subscription is open.
            anyio.EndOfStream: nothing is buffered and the subscription is closed.
            SignalOverflowError: the buffer overflowed under ``overflow="error"``.
        """
        inbox = self._inbox
        if inbox.buffer:
            return inbox.buffer.popleft()
        if inbox.overflowed:
            inbox.overflowed = False  # raise once, then behave as closed
            raise SignalOverflowError(
                f"subscription {inbox.pattern!r} lost signals: its buffer of {inbox.capacity} "
                "was full (overflow='error'); consume faster, raise buffer=, or use "
                "overflow='drop_oldest'"
            )
        if inbox.closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> Signal:
        """Wait for the next signal. Always a checkpoint.

        Raises:
            anyio.EndOfStream: the subscription (or its bus) is closed and drained.
            SignalOverflowError: the buffer overflowed under ``overflow="error"``.
        """
        inbox = self._inbox
        await anyio.lowlevel.checkpoint()
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                waiter = inbox.waiter
                if waiter is None:
                    waiter = inbox.waiter = anyio.Event()
                await waiter.wait()

    def drain_nowait(self) -> Iterator[Signal]:
        """Yield the buffered signals without waiting, oldest first."""
        buffer = self._inbox.buffer
        while buffer:
            yield buffer.popleft()

    def close(self) -> None:
        """Unsubscribe: no new signals arrive; buffered ones can still be received."""
        if not self._inbox.closed:
            self._bus._remove(self._inbox)

    def statistics(self) -> SubscriptionStatistics:
        """Return a frozen snapshot of this subscription's counters."""
        return self._inbox.statistics()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Signal:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def __del__(self) -> None:
        inbox = getattr(self, "_inbox", None)
        if inbox is not None and not inbox.closed:
            self._bus._remove(inbox)

    def __repr__(self) -> str:
        i = self._inbox
        state = "closed" if i.closed else "open"
        return f"<Subscription {i.pattern!r} {state}, {len(i.buffer)}/{i.capacity} buffered>"
