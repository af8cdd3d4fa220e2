"""SignalBus listeners (``listen``): a sink called inside publish, in the publishing task."""

from __future__ import annotations

import gc

import anyio
import pytest

from ptcflow.errors import UsageError
from ptcflow.signals import Listener, Signal, SignalBus, SubscriptionStatistics


def sig(type: str = "ai.usage", *, seq: int = 0, run_id: str = "run_1") -> Signal:
    return Signal(type=type, source="test", id=f"id-{seq}", time="t", seq=seq, run_id=run_id)


def test_the_sink_gets_each_matching_signal_in_order_as_it_is_published() -> None:
    bus = SignalBus()
    seen: list[int] = []
    sub = bus.subscribe("ai.tool.*")
    with bus.listen(lambda s: seen.append(s.seq), "ai.tool.*") as listener:
        for n, t in enumerate(["ai.tool.started", "ai.usage", "ai.tool.result"]):
            bus.publish(sig(t, seq=n))
            assert seen == [m for m in (0, 2) if m <= n]  # called inside publish
        assert listener.pattern == "ai.tool.*" and bus.statistics().subscribers == 2
    assert listener.closed
    bus.publish(sig("ai.tool.result", seq=9))
    assert seen == [0, 2]
    assert [s.seq for s in sub.drain_nowait()] == [0, 2, 9]  # subscriptions unchanged


def test_a_listener_takes_run_and_run_tree_filters() -> None:
    bus = SignalBus()
    tree: list[str] = []
    one: list[str] = []
    kept = [  # (a listener nobody holds is closed)
        bus.listen(lambda s: tree.append(s.run_id), run_tree="a"),
        bus.listen(lambda s: one.append(s.run_id), run_id="a"),
    ]
    for run in ("a", "a/c1", "a/c1/x", "ab", "b/a", ""):
        bus.publish(sig(run_id=run))
    assert tree == ["a", "a/c1", "a/c1/x"]
    assert one == ["a"]
    assert not any(listener.closed for listener in kept)


def test_statistics_count_a_listener_as_a_subscriber() -> None:
    bus = SignalBus()
    listener = bus.listen(lambda s: None, "ai.*", run_tree="r")
    bus.publish(sig(run_id="r"))
    bus.publish(sig(run_id="other"))
    stats = bus.statistics()
    assert stats.subscribers == 1 and stats.delivered == 1
    assert listener.statistics() == SubscriptionStatistics(
        pattern="ai.*",
        run_id=None,
        run_tree="r",
        buffer=0,
        overflow="none",
        buffered=0,
        delivered=1,
        dropped=0,
        closed=False,
        listener=True,
    )
    assert "1 delivered" in repr(listener)
    listener.close()
    listener.close()
    assert bus.statistics().subscribers == 0 and "closed" in repr(listener)


def test_a_sink_that_raises_leaves_the_bus_and_publish_goes_on() -> None:
    bus = SignalBus()
    closed: list[str] = []
    after: list[int] = []

    def broken(signal: Signal) -> None:
        raise ValueError(f"cannot take {signal.seq}")

    listener = bus.listen(broken, on_close=lambda: closed.append("broken"))
    other = bus.listen(lambda s: after.append(s.seq))
    bus.publish(sig(seq=1))  # does not raise
    bus.publish(sig(seq=2))
    assert listener.closed and closed == ["broken"]
    assert isinstance(listener.error, ValueError) and str(listener.error) == "cannot take 1"
    assert after == [1, 2]
    assert bus.statistics().subscribers == 1 and not other.closed


def test_on_close_is_called_once_whatever_closes_the_listener() -> None:
    bus = SignalBus()
    calls: list[str] = []
    first = bus.listen(lambda s: None, on_close=lambda: calls.append("first"))
    second = bus.listen(lambda s: None, on_close=lambda: calls.append("second"))
    first.close()
    first.close()
    bus.close()
    bus.close()
    assert calls == ["first", "second"]
    assert first.closed and second.closed and first.error is None
    with pytest.raises(UsageError, match="cannot listen to a closed SignalBus"):
        bus.listen(lambda s: None)


def test_an_on_close_that_raises_is_kept_not_raised() -> None:
    bus = SignalBus()

    def boom() -> None:
        raise RuntimeError("on_close failed")

    listener = bus.listen(lambda s: None, on_close=boom)
    listener.close()
    assert isinstance(listener.error, RuntimeError)


def test_a_sink_may_close_its_own_listener_while_it_is_called() -> None:
    bus = SignalBus()
    seen: list[int] = []
    others: list[int] = []
    holder: list[Listener] = []

    def once(signal: Signal) -> None:
        seen.append(signal.seq)
        holder[0].close()

    holder.append(bus.listen(once))
    other = bus.listen(lambda s: others.append(s.seq))
    bus.publish(sig(seq=1))
    bus.publish(sig(seq=2))
    assert seen == [1] and others == [1, 2] and not other.closed


def test_dropping_a_listener_stops_the_calls() -> None:
    bus = SignalBus()
    seen: list[Signal] = []
    listener = bus.listen(seen.append)
    del listener
    gc.collect()
    bus.publish(sig())
    assert seen == [] and bus.statistics().subscribers == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"run_id": "a", "run_tree": "a"}, "not both"),
        ({"run_tree": ""}, "non-empty string"),
        ({"run_id": ""}, "non-empty string"),
    ],
)
def test_invalid_listen_arguments_are_rejected(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        SignalBus().listen(lambda s: None, **kwargs)  # type: ignore[arg-type]


def test_a_sink_must_be_callable_and_the_pattern_valid() -> None:
    with pytest.raises(UsageError, match="must be callable"):
        SignalBus().listen("not a function")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        SignalBus().listen(lambda s: None, "ai..usage")


@pytest.mark.anyio
async def test_the_sink_runs_in_the_publishing_task() -> None:
    bus = SignalBus()
    where: list[object] = []
    listener = bus.listen(lambda s: where.append(anyio.get_current_task().id))

    async def publisher() -> None:
        bus.publish(sig())
        where.append(anyio.get_current_task().id)

    async with anyio.create_task_group() as tg:
        tg.start_soon(publisher)
    assert len(where) == 2 and where[0] == where[1]
    listener.close()
