"""SignalBus: patterns, buffering, overflow policies, run filter, lifecycle, statistics."""

from __future__ import annotations

import functools
import gc

import anyio
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.signals import (
    BusStatistics,
    Signal,
    SignalBus,
    SignalOverflowError,
    Subscription,
    SubscriptionStatistics,
)
from ptcflow.signals._pattern import compile_pattern, matches as _matches


def sig(type: str = "ai.usage", *, seq: int = 0, run_id: str = "run_1") -> Signal:
    return Signal(type=type, source="test", id=f"id-{seq}", time="t", seq=seq, run_id=run_id)


def drain(sub: Subscription) -> list[Signal]:
    return list(sub.drain_nowait())


@pytest.mark.parametrize(
    ("pattern", "type", "expected"),
    [
        ("ai.tool.result", "ai.tool.result", True),
        ("ai.tool.result", "ai.tool.started", False),
        ("ai.tool.result", "ai.tool.result.x", False),
        ("ai.tool.*", "ai.tool.result", True),
        ("ai.tool.*", "ai.tool.started", True),
        ("ai.tool.*", "ai.tool", False),
        ("ai.tool.*", "ai.tool.a.b", False),
        ("ai.*", "ai.usage", True),
        ("ai.*", "ai.tool.result", False),
        ("ai.**", "ai.tool.result", True),
        ("ai.**", "ai.usage", True),
        ("ai.**", "ai", True),
        ("ai.**", "aix.usage", False),
        ("ai.**", "other.ai.usage", False),
        ("**", "anything.at.all", True),
        ("**.result", "ai.tool.result", True),
        ("**.result", "result", True),
        ("**.result", "ai.tool.started", False),
        ("ai.**.result", "ai.result", True),
        ("ai.**.result", "ai.tool.result", True),
        ("ai.**.result", "ai.llm.x.result", True),
        ("ai.**.result", "ai.tool.started", False),
        ("*.*", "ai.usage", True),
        ("*.*", "ai.tool.result", False),
        ("ai.*.*", "ai.tool.result", True),
    ],
)
def test_pattern_matching(pattern: str, type: str, expected: bool) -> None:
    assert _matches(compile_pattern(pattern), tuple(type.split("."))) is expected


segment = st.text(alphabet="abcxyz_", min_size=1, max_size=4)
types = st.lists(segment, min_size=1, max_size=5).map(".".join)


@settings(deadline=None)  # the shared CI machine is noisy
@given(types)
def test_exact_and_catch_all_patterns(type: str) -> None:
    segs = tuple(type.split("."))
    assert _matches(compile_pattern(type), segs)
    assert _matches(compile_pattern("**"), segs)
    assert _matches(compile_pattern(".".join("*" for _ in segs)), segs)
    assert not _matches(compile_pattern(".".join("*" for _ in (*segs, "x"))), segs)


@settings(deadline=None)  # the shared CI machine is noisy
@given(types, types)
def test_exact_pattern_matches_only_itself(a: str, b: str) -> None:
    assert _matches(compile_pattern(a), tuple(b.split("."))) is (a == b)


@pytest.mark.parametrize("bad", ["", "ai..tool", ".ai", "ai.", "ai.to*", "a**", "*x.y"])
def test_invalid_patterns_are_rejected(bad: str) -> None:
    with pytest.raises(UsageError, match="pattern"):
        SignalBus().subscribe(bad)


@pytest.mark.parametrize("buffer", [0, -1, True, 1.5])
def test_invalid_buffer_is_rejected(buffer: object) -> None:
    with pytest.raises(UsageError, match="buffer"):
        SignalBus().subscribe("**", buffer=buffer)  # type: ignore[arg-type]


def test_invalid_overflow_is_rejected() -> None:
    with pytest.raises(UsageError, match="drop_oldest"):
        SignalBus().subscribe("**", overflow="block")  # type: ignore[arg-type]


def test_idle_bus_counts_nothing() -> None:
    bus = SignalBus()
    bus.publish(sig())
    assert bus.statistics() == BusStatistics(published=0, delivered=0, dropped=0, subscribers=0)


def test_publish_delivers_matching_signals_in_order() -> None:
    bus = SignalBus()
    tools = bus.subscribe("ai.tool.*")
    everything = bus.subscribe()
    for n, t in enumerate(["ai.tool.started", "ai.usage", "ai.tool.result", "other"]):
        bus.publish(sig(t, seq=n))
    assert [s.seq for s in drain(tools)] == [0, 2]
    assert [s.seq for s in drain(everything)] == [0, 1, 2, 3]
    stats = bus.statistics()
    assert (stats.published, stats.delivered, stats.subscribers) == (4, 6, 2)


def test_route_cache_is_refreshed_when_subscriptions_change() -> None:
    bus = SignalBus()
    first = bus.subscribe("ai.usage")
    bus.publish(sig(seq=1))
    second = bus.subscribe("ai.*")
    bus.publish(sig(seq=2))
    first.close()
    bus.publish(sig(seq=3))
    assert [s.seq for s in drain(first)] == [1, 2]
    assert [s.seq for s in drain(second)] == [2, 3]


def test_run_id_filter() -> None:
    bus = SignalBus()
    mine = bus.subscribe("ai.**", run_id="run_a")
    also_mine = bus.subscribe("ai.usage", run_id="run_a")
    theirs = bus.subscribe("ai.**", run_id="run_b")
    bus.publish(sig(seq=1, run_id="run_a"))
    bus.publish(sig(seq=2, run_id="run_b"))
    bus.publish(sig(seq=3, run_id="run_c"))
    assert [s.seq for s in drain(mine)] == [1]
    assert [s.seq for s in drain(also_mine)] == [1]
    assert [s.seq for s in drain(theirs)] == [2]
    assert mine.run_id == "run_a"


def test_drop_oldest_keeps_the_newest_and_counts() -> None:
    bus = SignalBus()
    sub = bus.subscribe(buffer=3)
    for n in range(5):
        bus.publish(sig(seq=n))
    assert [s.seq for s in drain(sub)] == [2, 3, 4]
    stats = sub.statistics()
    assert (stats.delivered, stats.dropped, stats.buffered) == (5, 2, 0)
    assert bus.statistics().dropped == 2


def test_drop_newest_keeps_the_oldest_and_counts() -> None:
    bus = SignalBus()
    sub = bus.subscribe(buffer=3, overflow="drop_newest")
    for n in range(5):
        bus.publish(sig(seq=n))
    assert [s.seq for s in drain(sub)] == [0, 1, 2]
    assert (sub.statistics().delivered, sub.statistics().dropped) == (3, 2)


def test_overflow_error_raises_after_the_buffered_signals_and_closes() -> None:
    bus = SignalBus()
    sub = bus.subscribe(buffer=2, overflow="error")
    other = bus.subscribe()
    for n in range(4):
        bus.publish(sig(seq=n))  # the publisher never sees the overflow
    assert sub.closed and not other.closed
    assert [sub.receive_nowait().seq, sub.receive_nowait().seq] == [0, 1]
    with pytest.raises(SignalOverflowError, match="buffer of 2"):
        sub.receive_nowait()
    with pytest.raises(anyio.EndOfStream):
        sub.receive_nowait()
    assert [s.seq for s in drain(other)] == [0, 1, 2, 3]
    assert bus.statistics().subscribers == 1


def test_receive_nowait_would_block_then_end_of_stream() -> None:
    bus = SignalBus()
    sub = bus.subscribe()
    with pytest.raises(anyio.WouldBlock):
        sub.receive_nowait()
    bus.publish(sig(seq=7))
    sub.close()
    bus.publish(sig(seq=8))  # not received: closed
    assert sub.receive_nowait().seq == 7
    with pytest.raises(anyio.EndOfStream):
        sub.receive_nowait()


def test_dropping_a_subscription_unsubscribes() -> None:
    bus = SignalBus()
    sub = bus.subscribe("ai.**")
    assert bus.statistics().subscribers == 1
    del sub
    gc.collect()
    assert bus.statistics().subscribers == 0
    bus.publish(sig())
    assert bus.statistics().published == 0


def test_closed_bus_refuses_subscriptions_and_ignores_publish() -> None:
    bus = SignalBus()
    sub = bus.subscribe()
    bus.close()
    bus.close()
    assert bus.closed and sub.closed
    bus.publish(sig())
    with pytest.raises(UsageError, match="closed SignalBus"):
        bus.subscribe()
    assert "closed" in repr(bus) and "closed" in repr(sub)


def test_statistics_are_frozen_structs() -> None:
    bus = SignalBus()
    sub = bus.subscribe("ai.*", run_id="r", buffer=5, overflow="drop_newest")
    bus.publish(sig(run_id="r"))
    stats = bus.statistics()
    assert stats.per_subscriber == (
        SubscriptionStatistics(
            pattern="ai.*",
            run_id="r",
            buffer=5,
            overflow="drop_newest",
            buffered=1,
            delivered=1,
            dropped=0,
            closed=False,
        ),
    )
    with pytest.raises(AttributeError):
        stats.published = 3  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(stats), type=BusStatistics) == stats
    assert sub.pattern == "ai.*"


@pytest.mark.anyio
async def test_async_iteration_waits_for_publish_and_ends_on_close() -> None:
    bus = SignalBus()
    got: list[int] = []

    async def consume(sub: Subscription) -> None:
        async for s in sub:
            got.append(s.seq)

    async with bus.subscribe("ai.usage") as sub, anyio.create_task_group() as tg:
        tg.start_soon(consume, sub)
        await anyio.wait_all_tasks_blocked()
        assert got == []
        bus.publish(sig(seq=1))
        bus.publish(sig(seq=2))
        await anyio.wait_all_tasks_blocked()
        assert got == [1, 2]
        bus.publish(sig(seq=3))
        bus.close()
    assert got == [1, 2, 3]


@pytest.mark.anyio
async def test_leaving_async_with_unsubscribes() -> None:
    bus = SignalBus()
    async with bus.subscribe() as sub:
        assert bus.statistics().subscribers == 1
    assert sub.closed
    assert bus.statistics().subscribers == 0


@pytest.mark.anyio
async def test_waiting_receive_can_be_cancelled() -> None:
    bus = SignalBus()
    sub = bus.subscribe()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sub.receive)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
    assert scope.cancelled_caught
    bus.publish(sig(seq=4))
    assert (await sub.receive()).seq == 4


@pytest.mark.anyio
async def test_receive_raises_overflow_after_waiting() -> None:
    bus = SignalBus()
    sub = bus.subscribe(buffer=1, overflow="error")
    bus.publish(sig(seq=1))
    bus.publish(sig(seq=2))
    assert (await sub.receive()).seq == 1
    with pytest.raises(SignalOverflowError):
        await sub.receive()
    assert [s.seq async for s in sub] == []


@pytest.mark.anyio
async def test_two_consumers_share_one_subscription() -> None:
    bus = SignalBus()
    sub = bus.subscribe()
    got: list[int] = []

    async def consume() -> None:
        got.append((await sub.receive()).seq)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        bus.publish(sig(seq=1))
        await anyio.wait_all_tasks_blocked()
        bus.publish(sig(seq=2))
    assert sorted(got) == [1, 2]


@pytest.mark.anyio
async def test_per_run_subscriptions_on_the_real_runtime() -> None:
    from ptcflow.runtime import Runtime
    from ptcflow.strategies import ReAct
    from ptcflow.testing import ScriptedLLM

    async def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    def answer(request: object) -> object:
        last = request.messages[-1]  # type: ignore[attr-defined]
        return "5" if last.role == "tool" else ScriptedLLM.tool_call("add", x=2, y=3)

    bus = SignalBus()
    everything = bus.subscribe("**", buffer=10_000)
    tools = bus.subscribe("ai.tool.*", buffer=10_000)
    run_ids = [f"run_{n}" for n in range(20)]
    per_run = {rid: bus.subscribe("ai.**", run_id=rid) for rid in run_ids}
    llm = ScriptedLLM(answer)  # type: ignore[arg-type]
    async with Runtime(llm=llm, tools=[add], bus=bus) as rt, anyio.create_task_group() as tg:
        for rid in run_ids:
            tg.start_soon(functools.partial(rt.run, ReAct(), "2 + 3?", run_id=rid))
    all_signals = drain(everything)
    assert {s.run_id for s in all_signals} == set(run_ids)
    tool_signals = drain(tools)
    assert tool_signals == [s for s in all_signals if s.type.startswith("ai.tool.")]
    assert (
        sorted(s.type for s in tool_signals) == ["ai.tool.result"] * 20 + ["ai.tool.started"] * 20
    )
    for rid, sub in per_run.items():
        got = drain(sub)
        assert {s.run_id for s in got} == {rid}
        assert [s.seq for s in got] == sorted({s.seq for s in got})
        assert got[0].type == "ai.request.started" and got[-1].type == "ai.request.completed"
        assert got == [s for s in all_signals if s.run_id == rid]
    stats = bus.statistics()
    assert stats.dropped == 0 and stats.published == len(all_signals)
