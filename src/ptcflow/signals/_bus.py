"""The signal bus: synchronous, non-blocking publish; pattern subscriptions with bounded buffers.

Publishing never waits and never fails: each subscription owns a bounded buffer and an
overflow policy, so a slow subscriber loses signals (and counts them) instead of slowing
down the runtime. With nobody subscribed, :meth:`SignalBus.publish` checks one attribute
and returns.

Patterns are dot-separated signal types in which a ``*`` segment matches exactly one
segment and a ``**`` segment matches any number of segments (zero included)::

    "ai.tool.result"   exactly that type
    "ai.tool.*"        ai.tool.started, ai.tool.result
    "ai.**"            every ai.* type (and "ai" itself)
    "**"               everything

A pattern is compiled once when subscribing; the set of subscriptions matching a signal
type is computed once per type and cached until the subscriptions change.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals._signal import Signal
from ptcflow.signals._subscription import (
    Subscription,
    SubscriptionStatistics,
    _Inbox,
)

__all__ = ("BusStatistics", "Overflow", "SignalBus")

Overflow: TypeAlias = Literal["drop_oldest", "drop_newest", "error"]
"""What a full subscription does with a new signal (see :meth:`SignalBus.subscribe`)."""

_POLICIES: Final = ("drop_oldest", "drop_newest", "error")
_MAX_CACHED_TYPES: Final = 4096


class BusStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of a :class:`SignalBus`.

    ``published`` counts signals published while at least one subscription was open
    (publishing to an idle bus is free and not counted); ``delivered`` and ``dropped``
    sum the open subscriptions, which are listed one by one in ``per_subscriber``.
    """

    published: int
    delivered: int
    dropped: int
    subscribers: int
    per_subscriber: tuple[SubscriptionStatistics, ...] = ()


class _Route:
    """The inboxes one signal type reaches: those for every run, and those by run id."""

    __slots__ = ("by_run", "every")

    def __init__(self, every: tuple[_Inbox, ...], by_run: dict[str, tuple[_Inbox, ...]]) -> None:
        self.every = every
        self.by_run = by_run


class SignalBus:
    """Fan signals out to pattern subscriptions without ever blocking the publisher.

    :meth:`publish` is synchronous and must be called from the event loop thread (the
    runtime does); subscriptions are consumed with ``async for``. Each subscription has a
    bounded buffer; when it is full the subscription's overflow policy applies:

    - ``"drop_oldest"`` (default): the oldest buffered signal is discarded;
    - ``"drop_newest"``: the new signal is discarded;
    - ``"error"``: the subscription stops receiving, and :meth:`Subscription.receive`
      raises :class:`SignalOverflowError` after the signals buffered before the gap.

    Dropped signals are counted (:meth:`statistics`, :meth:`Subscription.statistics`).

    Example:
        >>> import anyio
        >>> from ptcflow.signals import Signal
        >>> async def main() -> list[str]:
        ...     bus = SignalBus()
        ...     async with bus.subscribe("ai.tool.*") as sub:
        ...         bus.publish(Signal.create("ai.tool.started"))
        ...         bus.publish(Signal.create("ai.usage"))
        ...         bus.publish(Signal.create("ai.tool.result"))
        ...         return [(await sub.receive()).type, sub.receive_nowait().type]
        >>> anyio.run(main)
        ['ai.tool.started', 'ai.tool.result']
    """

    __slots__ = ("_closed", "_idle", "_inboxes", "_published", "_routes")

    def __init__(self) -> None:
        self._idle = True
        self._closed = False
        self._inboxes: dict[_Inbox, None] = {}  # insertion-ordered set
        self._routes: dict[str, _Route] = {}
        self._published = 0

    def publish(self, signal: Signal) -> None:
        """Deliver ``signal`` to every matching subscription; never blocks, never raises.

        Costs one attribute check when nobody is subscribed.
        """
        if self._idle:
            return
        self._published += 1
        route = self._routes.get(signal.type)
        if route is None:
            route = self._route(signal.type)
        targets = route.every
        if route.by_run:
            targets += route.by_run.get(signal.run_id, ())
        for inbox in targets:
            buffer = inbox.buffer
            if len(buffer) < inbox.capacity:  # the common case, inlined
                buffer.append(signal)
                inbox.delivered += 1
                if inbox.waiter is not None:
                    inbox.wake()
            elif not inbox.offer(signal):
                self._remove(inbox)

    def subscribe(
        self,
        pattern: str = "**",
        *,
        run_id: str | None = None,
        buffer: int = 1024,
        overflow: Overflow = "drop_oldest",
    ) -> Subscription:
        """Open a subscription to the signals whose type matches ``pattern``.

        The subscription receives every matching signal published from now on, until it
        is closed (leaving ``async with``, :meth:`Subscription.close`, or dropping the
        last reference to it). Does not block.

        Args:
            pattern: ``"ai.tool.result"``, ``"ai.tool.*"``, ``"ai.**"``, ``"**"``.
            run_id: only receive signals of this run.
            buffer: how many signals may wait to be received (at least 1).
            overflow: ``"drop_oldest"``, ``"drop_newest"`` or ``"error"`` (see the class).

        Raises:
            UsageError: invalid pattern, buffer or overflow, or the bus is closed.

        Example:
            >>> bus = SignalBus()
            >>> sub = bus.subscribe("ai.**", buffer=10)
            >>> bus.statistics().subscribers
            1
            >>> sub.close(); bus.statistics().subscribers
            0
        """
        if self._closed:
            raise UsageError("cannot subscribe to a closed SignalBus; create a new bus")
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise UsageError(f"subscribe(buffer=...) must be an int >= 1, got {buffer!r}")
        if overflow not in _POLICIES:
            raise UsageError(
                f"subscribe(overflow=...) must be one of {', '.join(map(repr, _POLICIES))}, "
                f"got {overflow!r}"
            )
        inbox = _Inbox(pattern, run_id, buffer, overflow)
        self._inboxes[inbox] = None
        self._routes = {}
        self._idle = False
        return Subscription(self, inbox)

    def close(self) -> None:
        """Close the bus: open subscriptions end after their buffered signals.

        Later :meth:`publish` calls do nothing; :meth:`subscribe` raises. Idempotent.
        """
        self._closed = True
        for inbox in tuple(self._inboxes):
            self._remove(inbox)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def statistics(self) -> BusStatistics:
        """Return a frozen snapshot: counters and one entry per open subscription."""
        per = tuple(inbox.statistics() for inbox in tuple(self._inboxes))
        return BusStatistics(
            published=self._published,
            delivered=sum(s.delivered for s in per),
            dropped=sum(s.dropped for s in per),
            subscribers=len(per),
            per_subscriber=per,
        )

    def _route(self, type: str) -> _Route:
        every: list[_Inbox] = []
        by_run: dict[str, list[_Inbox]] = {}
        for inbox in tuple(self._inboxes):  # a collected Subscription may leave meanwhile
            if inbox.matches(type):
                if inbox.run_id is None:
                    every.append(inbox)
                else:
                    by_run.setdefault(inbox.run_id, []).append(inbox)
        route = _Route(tuple(every), {k: tuple(v) for k, v in by_run.items()})
        if len(self._routes) >= _MAX_CACHED_TYPES:
            self._routes = {}
        self._routes[type] = route
        return route

    def _remove(self, inbox: _Inbox) -> None:
        inbox.closed = True
        inbox.wake()
        if self._inboxes.pop(inbox, 0) is None:
            self._routes = {}
            self._idle = not self._inboxes

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._inboxes)} subscriptions"
        return f"<SignalBus {state}, {self._published} published>"
