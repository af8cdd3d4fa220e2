"""SignalBus run-tree subscriptions (``run_tree=``): a run and its child runs, and the
cached routes kept right while subscriptions come and go."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.signals import Signal, SignalBus, Subscription
from ptcflow.signals._pattern import compile_pattern, matches as _matches
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM, ScriptItem


def sig(type: str = "ai.usage", *, seq: int = 0, run_id: str = "run_1") -> Signal:
    return Signal(type=type, source="test", id=f"id-{seq}", time="t", seq=seq, run_id=run_id)


def seqs(sub: Subscription) -> list[int]:
    return [s.seq for s in sub.drain_nowait()]


def test_a_run_tree_is_the_run_and_its_child_runs_at_any_depth() -> None:
    bus = SignalBus()
    tree = bus.subscribe("ai.**", run_tree="run_a")
    child = bus.subscribe(run_tree="run_a/call_1")
    runs = [
        "run_a",  # 0: the run
        "run_a/call_1",  # 1: a child
        "run_a/call_1/x/program/1/tool/0",  # 2: a grandchild, slashes in its call id
        "run_ab",  # 3: another run whose id starts the same
        "run_b/run_a",  # 4: another tree
        "run_a/call_10",  # 5: a sibling of call_1 (a prefix, but not at a "/")
    ]
    for n, run in enumerate(runs):
        bus.publish(sig(seq=n, run_id=run))
    bus.publish(sig(seq=9, run_id=""))  # no run
    assert seqs(tree) == [0, 1, 2, 5]
    assert seqs(child) == [1, 2]
    assert tree.run_tree == "run_a" and tree.run_id is None
    assert tree.statistics().run_tree == "run_a"


def test_run_tree_takes_the_pattern_too() -> None:
    bus = SignalBus()
    tools = bus.subscribe("ai.tool.*", run_tree="r")
    bus.publish(sig("ai.usage", seq=1, run_id="r"))
    bus.publish(sig("ai.tool.result", seq=2, run_id="r/c"))
    assert seqs(tools) == [2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"run_id": "a", "run_tree": "a"}, "not both"),
        ({"run_tree": ""}, "non-empty string"),
        ({"run_id": ""}, "non-empty string"),
        ({"run_tree": 3}, "non-empty string"),
    ],
)
def test_bad_run_scopes_are_usage_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        SignalBus().subscribe("**", **kwargs)  # type: ignore[arg-type]


def test_a_thousand_clients_each_get_only_their_own_run() -> None:
    bus = SignalBus()
    subs = {f"run_{n}": bus.subscribe(run_tree=f"run_{n}") for n in range(1000)}
    bus.publish(sig(seq=1, run_id="run_7/call_1"))
    bus.publish(sig(seq=2, run_id="run_999"))
    delivered = {run: sub.statistics().delivered for run, sub in subs.items()}
    assert {run: n for run, n in delivered.items() if n} == {"run_7": 1, "run_999": 1}
    for sub in subs.values():
        sub.close()
    assert bus.statistics().subscribers == 0


def test_routes_cached_before_a_subscription_opens_or_closes_stay_right() -> None:
    bus = SignalBus()
    everything = bus.subscribe()
    bus.publish(sig("ai.usage", seq=1, run_id="r"))  # the route of ai.usage is cached now
    late = bus.subscribe("ai.usage", run_tree="r")
    bus.publish(sig("ai.usage", seq=2, run_id="r/c"))
    late.close()
    bus.publish(sig("ai.usage", seq=3, run_id="r"))
    assert seqs(late) == [2]
    assert seqs(everything) == [1, 2, 3]


# -- a model of the bus: every subscription gets exactly what its pattern and scope say --

TYPES = ("ai.usage", "ai.tool.result", "ai.tool.started", "ai.llm.delta", "x")
PATTERNS = ("**", "ai.**", "ai.tool.*", "ai.usage", "x", "*")
RUNS = ("a", "a/1", "a/1/2", "a/12", "ab", "b", "b/a", "a/1/x/y")


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, ...]]:
    ops: list[tuple[str, ...]] = []
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(("subscribe", "publish", "publish", "close")))
        if kind == "subscribe":
            scope = draw(st.sampled_from(("all", "run_id", "run_tree")))
            ops.append(("subscribe", draw(st.sampled_from(PATTERNS)), scope, draw(st.sampled_from(RUNS))))  # fmt: skip
        elif kind == "publish":
            ops.append(("publish", draw(st.sampled_from(TYPES)), draw(st.sampled_from(RUNS))))
        else:
            ops.append(("close", str(draw(st.integers(0, 20)))))
    return ops


def _expected(pattern: str, scope: str, run: str, signal: Signal) -> bool:
    if not _matches(compile_pattern(pattern), tuple(signal.type.split("."))):
        return False
    got = signal.run_id or ""
    if scope == "run_id":
        return got == run
    if scope == "run_tree":
        return got == run or got.startswith(run + "/")
    return True


@settings(max_examples=300, deadline=None)
@given(operations())
def test_each_subscription_gets_what_its_pattern_and_scope_say(ops: list[tuple[str, ...]]) -> None:
    bus = SignalBus()
    subs: list[tuple[Subscription, str, str, str]] = []
    expected: list[list[int]] = []
    open_: list[bool] = []
    for seq, op in enumerate(ops):
        if op[0] == "subscribe":
            _, pattern, scope, run = op
            kwargs = {} if scope == "all" else {scope: run}
            subs.append((bus.subscribe(pattern, buffer=1000, **kwargs), pattern, scope, run))  # type: ignore[arg-type]
            expected.append([])
            open_.append(True)
        elif op[0] == "publish":
            signal = sig(op[1], seq=seq, run_id=op[2])
            bus.publish(signal)
            for n, (_, pattern, scope, run) in enumerate(subs):
                if open_[n] and _expected(pattern, scope, run, signal):
                    expected[n].append(seq)
        elif subs:
            n = int(op[1]) % len(subs)
            subs[n][0].close()
            open_[n] = False
    assert [seqs(sub) for sub, *_ in subs] == expected
    assert bus.statistics().subscribers == sum(open_)


# -- on a Runtime, asyncio and trio -------------------------------------------------


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


@pytest.mark.anyio
async def test_a_run_tree_subscription_streams_its_run_and_not_the_others() -> None:
    def model(request: LLMRequest) -> ScriptItem:
        if any(m.role == "tool" for m in request.messages):
            return "5"
        return ScriptedLLM.tool_call("add", x=2, y=3)

    bus = SignalBus()
    async with Runtime(llm=ScriptedLLM(model, record=False), tools=[add], bus=bus) as rt:
        got: dict[str, list[str]] = {"mine": [], "theirs": []}

        async def read(name: str, sub: Subscription) -> None:
            async with sub:
                async for signal in sub:
                    got[name].append(signal.run_id or "")
                    if signal.type == "ai.request.completed":
                        return

        async with anyio.create_task_group() as tg:
            tg.start_soon(read, "mine", bus.subscribe(run_tree="mine"))
            tg.start_soon(read, "theirs", bus.subscribe(run_tree="theirs"))
            await anyio.wait_all_tasks_blocked()
            async with anyio.create_task_group() as runs:
                runs.start_soon(lambda: rt.run(ReAct(), "2 + 3?", run_id="mine"))
                runs.start_soon(lambda: rt.run(ReAct(), "2 + 3?", run_id="theirs"))
    assert set(got["mine"]) == {"mine"} and set(got["theirs"]) == {"theirs"}
    assert len(got["mine"]) == len(got["theirs"]) >= 6
    assert bus.statistics().subscribers == 0
