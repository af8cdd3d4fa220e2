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

A :meth:`SignalBus.listen` listener is the synchronous form: a function called with each
matching signal inside :meth:`~SignalBus.publish`, in the publishing task (no buffer, no
task to wake): for a consumer whose work per signal is short and never waits (queueing it
for a writer of its own, as the SSE endpoints do).

A subscription may also be restricted to one run (``run_id=``) or to one run tree
(``run_tree=``: the run and its child runs, whose ids are ``"{parent}/{call id}"``), so a
server streaming a thousand runs to a thousand clients hands each signal to its own
client's subscription only, instead of to every client to filter.

A pattern is compiled once when subscribing; the subscriptions matching a signal type are
computed once per type and cached; opening or closing a subscription updates the cached
routes in place (it does not recompute them against every other subscription).

The bus and its subscriptions are one object pair (as anyio keeps a memory stream's state
and both of its halves in one module): the bus fills each subscription's :class:`_Inbox`,
the :class:`Subscription` users hold reads it and asks its bus to remove it when closed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Final, Literal, Self, TypeAlias

import anyio
import anyio.lowlevel
import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals._pattern import compile_pattern, matches
from ptcflow.signals._signal import Signal

__all__ = (
    "BusStatistics",
    "Listener",
    "Overflow",
    "SignalBus",
    "SignalOverflowError",
    "Subscription",
    "SubscriptionStatistics",
)

Overflow: TypeAlias = Literal["drop_oldest", "drop_newest", "error"]
"""What a full subscription does with a new signal (see :meth:`SignalBus.subscribe`)."""

_POLICIES: Final = ("drop_oldest", "drop_newest", "error")
_MAX_CACHED_TYPES: Final = 4096


class SignalOverflowError(UsageError):
    """A subscription with ``overflow="error"`` fell behind and lost signals.

    Raised by :meth:`Subscription.receive` once the signals buffered before the gap have
    been consumed; the subscription is closed at that point.
    """


class SubscriptionStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of one subscription.

    ``delivered`` counts signals accepted into the buffer (handed to the sink, for a
    :class:`Listener`), ``dropped`` those lost to the overflow policy, ``buffered`` those
    waiting to be received. A listener shows ``listener=True``, ``buffer=0`` and
    ``overflow="none"``.
    """

    pattern: str
    run_id: str | None
    run_tree: str | None = None
    buffer: int
    overflow: str
    buffered: int
    delivered: int
    dropped: int
    closed: bool
    listener: bool = False


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


class _Inbox:
    """The bus-side half of a subscription: buffer, policy, counters, wake-up event; or of
    a listener: its sink (``buffer`` then stays empty)."""

    __slots__ = (
        "buffer",
        "capacity",
        "closed",
        "delivered",
        "dropped",
        "error",
        "on_close",
        "overflow",
        "overflowed",
        "pattern",
        "run_id",
        "run_tree",
        "segments",
        "sink",
        "waiter",
    )

    def __init__(
        self,
        pattern: str,
        run_id: str | None,
        run_tree: str | None,
        capacity: int,
        overflow: str,
    ) -> None:
        self.pattern = pattern
        self.segments = compile_pattern(pattern)
        self.run_id = run_id
        self.run_tree = run_tree
        self.capacity = capacity
        self.overflow = overflow
        self.buffer: deque[Signal] = deque()
        self.delivered = 0
        self.dropped = 0
        self.overflowed = False
        self.closed = False
        self.waiter: anyio.Event | None = None
        self.sink: Callable[[Signal], object] | None = None
        self.on_close: Callable[[], object] | None = None
        self.error: Exception | None = None

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
            run_tree=self.run_tree,
            buffer=self.capacity,
            overflow=self.overflow,
            buffered=len(self.buffer),
            delivered=self.delivered,
            dropped=self.dropped,
            closed=self.closed,
            listener=self.sink is not None,
        )


class _Route:
    """The inboxes one signal type reaches: those for every run, those of one run (by its
    id), and those of one run tree (by the id of its top run)."""

    __slots__ = ("by_run", "by_tree", "every")

    def __init__(self) -> None:
        self.every: tuple[_Inbox, ...] = ()
        self.by_run: dict[str, tuple[_Inbox, ...]] = {}
        self.by_tree: dict[str, tuple[_Inbox, ...]] = {}

    def add(self, inbox: _Inbox) -> None:
        if inbox.run_id is not None:
            self.by_run[inbox.run_id] = (*self.by_run.get(inbox.run_id, ()), inbox)
        elif inbox.run_tree is not None:
            self.by_tree[inbox.run_tree] = (*self.by_tree.get(inbox.run_tree, ()), inbox)
        else:
            self.every = (*self.every, inbox)

    def discard(self, inbox: _Inbox) -> None:
        if inbox.run_id is not None:
            _discard(self.by_run, inbox.run_id, inbox)
        elif inbox.run_tree is not None:
            _discard(self.by_tree, inbox.run_tree, inbox)
        elif inbox in self.every:
            self.every = tuple(i for i in self.every if i is not inbox)


def _discard(table: dict[str, tuple[_Inbox, ...]], key: str, inbox: _Inbox) -> None:
    inboxes = table.get(key)
    if inboxes is not None and inbox in inboxes:
        rest = tuple(i for i in inboxes if i is not inbox)
        if rest:
            table[key] = rest
        else:
            del table[key]


def _chain(table: dict[str, tuple[_Inbox, ...]]) -> list[_Inbox]:
    return [inbox for inboxes in table.values() for inbox in inboxes]


def _tree_targets(by_tree: dict[str, tuple[_Inbox, ...]], run: str) -> tuple[_Inbox, ...]:
    """The run-tree inboxes a signal of run ``run`` reaches: those of ``run`` itself and of
    each run it is nested in (``"a/b/c"``: ``"a/b/c"``, ``"a"``, ``"a/b"``)."""
    targets = by_tree.get(run, ())
    at = run.find("/")
    while at > 0:
        found = by_tree.get(run[:at])
        if found is not None:
            targets += found
        at = run.find("/", at + 1)
    return targets


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
        if route.by_tree and signal.run_id:
            targets += _tree_targets(route.by_tree, signal.run_id)
        for inbox in targets:
            sink = inbox.sink
            if sink is not None:  # a listener: called here, in the publishing task
                inbox.delivered += 1
                try:
                    sink(signal)
                except Exception as exc:  # it leaves the bus; publish never raises
                    inbox.error = exc
                    self._remove(inbox)
                continue
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
        run_tree: str | None = None,
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
            run_tree: only receive signals of this run and of its child runs, at any
                depth (the runs whose id is ``run_tree`` or starts with
                ``run_tree + "/"``). Costs a publish a few dictionary lookups, however
                many run-tree subscriptions are open.
            buffer: how many signals may wait to be received (at least 1).
            overflow: ``"drop_oldest"``, ``"drop_newest"`` or ``"error"`` (see the class).

        Raises:
            UsageError: invalid pattern, buffer, overflow or run, both ``run_id`` and
                ``run_tree`` given, or the bus is closed.

        Example:
            >>> bus = SignalBus()
            >>> sub = bus.subscribe("ai.**", buffer=10)
            >>> bus.statistics().subscribers
            1
            >>> sub.close(); bus.statistics().subscribers
            0
        """
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise UsageError(f"subscribe(buffer=...) must be an int >= 1, got {buffer!r}")
        if overflow not in _POLICIES:
            raise UsageError(
                f"subscribe(overflow=...) must be one of {', '.join(map(repr, _POLICIES))}, "
                f"got {overflow!r}"
            )
        inbox = self._open("subscribe", _Inbox(pattern, run_id, run_tree, buffer, overflow))
        return Subscription(self, inbox)

    def listen(
        self,
        sink: Callable[[Signal], object],
        pattern: str = "**",
        *,
        run_id: str | None = None,
        run_tree: str | None = None,
        on_close: Callable[[], object] | None = None,
    ) -> Listener:
        """Call ``sink`` with each signal whose type matches ``pattern``, as it is published.

        The synchronous form of :meth:`subscribe`: ``sink(signal)`` runs inside
        :meth:`publish`, in the publishing task, in publish order; there is no buffer and
        no task to wake. So the sink must be quick and must not wait (append the signal to
        a queue of its own and wake its consumer, say); bounding what it keeps is its own
        business. A sink that raises leaves the bus (the exception is kept in
        :attr:`Listener.error`); :meth:`publish` still never raises.

        Args:
            sink: called with each matching signal; its return value is ignored.
            pattern: as for :meth:`subscribe`.
            run_id: only signals of this run.
            run_tree: only signals of this run and of its child runs (see :meth:`subscribe`).
            on_close: called once when the listener stops receiving: closed, its bus
                closed, or its sink raised (what it raises is kept in
                :attr:`Listener.error` too).

        Raises:
            UsageError: invalid pattern or run, both ``run_id`` and ``run_tree`` given, or
                the bus is closed.

        Example:
            >>> from ptcflow.signals import Signal
            >>> bus, seen = SignalBus(), []
            >>> with bus.listen(seen.append, "ai.tool.*"):
            ...     bus.publish(Signal.create("ai.tool.started"))
            ...     bus.publish(Signal.create("ai.usage"))
            >>> [s.type for s in seen]
            ['ai.tool.started']
        """
        if not callable(sink):
            raise UsageError(f"listen(sink) must be callable, got {sink!r}")
        inbox = _Inbox(pattern, run_id, run_tree, 0, "none")
        inbox.sink = sink
        inbox.on_close = on_close
        return Listener(self, self._open("listen", inbox))

    def _open(self, method: str, inbox: _Inbox) -> _Inbox:
        if self._closed:
            raise UsageError(f"cannot {method} to a closed SignalBus; create a new bus")
        for name, run in (("run_id", inbox.run_id), ("run_tree", inbox.run_tree)):
            if run is not None and (not isinstance(run, str) or not run):
                raise UsageError(f"{method}({name}=...) must be a non-empty string, got {run!r}")
        if inbox.run_id is not None and inbox.run_tree is not None:
            raise UsageError(
                f"{method}() takes run_id= (one run) or run_tree= (a run and its child runs), "
                "not both"
            )
        self._inboxes[inbox] = None
        for type, route in self._routes.items():  # update the cached routes in place
            if inbox.matches(type):
                route.add(inbox)
        self._idle = False
        return inbox

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
        route = _Route()
        for inbox in tuple(self._inboxes):  # a collected Subscription may leave meanwhile
            if inbox.matches(type) and not inbox.closed:
                route.add(inbox)
        for inbox in (*route.every, *_chain(route.by_run), *_chain(route.by_tree)):
            if inbox.closed:  # collected while the route was being built
                route.discard(inbox)
        if len(self._routes) >= _MAX_CACHED_TYPES:
            self._routes = {}
        self._routes[type] = route
        return route

    def _remove(self, inbox: _Inbox) -> None:
        closing = not inbox.closed
        inbox.closed = True
        inbox.wake()
        if self._inboxes.pop(inbox, 0) is None:
            for route in self._routes.values():
                route.discard(inbox)
            self._idle = not self._inboxes
        on_close = inbox.on_close
        if closing and on_close is not None:
            inbox.on_close = None
            try:
                on_close()
            except Exception as exc:  # kept like a sink's: closing never raises
                if inbox.error is None:
                    inbox.error = exc

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._inboxes)} subscriptions"
        return f"<SignalBus {state}, {self._published} published>"


class _Attached:
    """What a :class:`Subscription` and a :class:`Listener` share: the bus and the inbox
    they read, their pattern, state and counters, and leaving the bus when closed or
    dropped (so a forgotten one never leaks)."""

    __slots__ = ("__weakref__", "_bus", "_inbox")

    def __init__(self, bus: SignalBus, inbox: _Inbox) -> None:
        self._bus = bus
        self._inbox = inbox

    @property
    def pattern(self) -> str:
        """The pattern it was opened with."""
        return self._inbox.pattern

    @property
    def closed(self) -> bool:
        """True once no new signal reaches it."""
        return self._inbox.closed

    def close(self) -> None:
        """Leave the bus: no new signal reaches it (idempotent)."""
        if not self._inbox.closed:
            self._bus._remove(self._inbox)

    def statistics(self) -> SubscriptionStatistics:
        """Return a frozen snapshot of its counters."""
        return self._inbox.statistics()

    def __del__(self) -> None:
        inbox = getattr(self, "_inbox", None)
        if inbox is not None and not inbox.closed:
            self._bus._remove(inbox)


class Subscription(_Attached):
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

    __slots__ = ()

    @property
    def run_id(self) -> str | None:
        """The run this subscription is restricted to, if any."""
        return self._inbox.run_id

    @property
    def run_tree(self) -> str | None:
        """The run whose tree (itself and its child runs) this subscription is restricted
        to, if any."""
        return self._inbox.run_tree

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
        super().close()

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

    def __repr__(self) -> str:
        i = self._inbox
        state = "closed" if i.closed else "open"
        return f"<Subscription {i.pattern!r} {state}, {len(i.buffer)}/{i.capacity} buffered>"


class Listener(_Attached):
    """A sink called by its bus with each matching signal (see :meth:`SignalBus.listen`);
    a context manager that closes it on exit.

    Closing (:meth:`close`, leaving ``with``, or dropping the last reference to it) stops
    the calls; so does the bus closing, or the sink raising (:attr:`error`).

    Example:
        >>> from ptcflow.signals import Signal, SignalBus
        >>> bus, seen = SignalBus(), []
        >>> listener = bus.listen(seen.append, run_tree="run_1")
        >>> bus.publish(Signal.create("ai.usage", run_id="run_1/call_1"))
        >>> bus.publish(Signal.create("ai.usage", run_id="run_2"))
        >>> listener.close(); bus.publish(Signal.create("ai.usage", run_id="run_1"))
        >>> [s.run_id for s in seen], listener.closed
        (['run_1/call_1'], True)
    """

    __slots__ = ()

    @property
    def error(self) -> Exception | None:
        """What the sink raised, when that closed the listener."""
        return self._inbox.error

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._inbox.closed else "open"
        return f"<Listener {self._inbox.pattern!r} {state}, {self._inbox.delivered} delivered>"
