"""The same mission gives the same Step, the same signals and a replayable journal locally
and on Temporal (a real dev server)."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

import anyio
import msgspec
import pytest

from ptcflow.runtime import Runtime, Step
from ptcflow.signals import Signal, SignalBus, read_journal, record_journal
from ptcflow.strategies import replay
from ptcflow.temporal import TemporalOptions, TemporalRuntime, open_worker
from temporal.agents import HANDLERS, LogOnce, add, analyst, model, planner

pytestmark = pytest.mark.anyio

QUESTION = "Which regions grew?"


def _comparable(step: Step) -> Step:
    return msgspec.structs.replace(step, duration_ms=0.0, signals=())


def _shape(signals: Iterable[Signal]) -> dict[tuple[str, str | None], list[tuple[Any, ...]]]:
    """What must match: the signals of each call of each run, in order, with their
    correlation and data (durations, CloudEvents ids and times, and how concurrent calls
    interleave aside); each run's seq numbers strictly increase."""
    out: dict[tuple[str, str | None], list[tuple[Any, ...]]] = {}
    last: dict[str, int] = {}
    for s in sorted(signals, key=lambda s: (s.run_id, s.seq)):
        assert s.seq > last.get(s.run_id, 0)
        last[s.run_id] = s.seq
        data = s.data
        if hasattr(data, "duration_ms"):
            data = msgspec.structs.replace(data, duration_ms=0.0)
        row = (s.type, s.causation_id, s.parent_run_id, s.request_id, s.iteration, data)
        out.setdefault((s.run_id, s.call_id), []).append(row)
    return out


async def test_a_nested_mission_gives_the_same_step_and_signals_locally_and_on_temporal(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    run_id = f"mission-{options.task_queue}"
    local_bus, remote_bus = SignalBus(), SignalBus()
    async with (
        local_bus.subscribe("ai.**", buffer=10_000) as mine,
        remote_bus.subscribe("ai.**", buffer=10_000) as theirs,
    ):
        async with Runtime(
            llm=model(), tools=[add], agents={"analyst": analyst()}, bus=local_bus, telemetry=None
        ) as rt:
            local = await rt.run(planner(), QUESTION, run_id=run_id, record=True)
        async with TemporalRuntime(
            client=client,
            tools=[add],
            agents={"analyst": analyst()},
            options=options,
            bus=remote_bus,
        ) as trt:
            remote = await trt.run(planner(), QUESTION, run_id=run_id, record=True)
        local_seen, remote_seen = list(mine.drain_nowait()), list(theirs.drain_nowait())
    assert local.ok, local.error
    assert remote.ok, remote.error
    assert str(remote.value).startswith("mission report: ")
    assert _comparable(remote) == _comparable(local)
    assert _shape(remote.signals) == _shape(local.signals)
    # the bus sees the parent's and both children's signals, as locally
    runs = {s.run_id for s in remote_seen}
    assert len(runs) == 3 and runs == {s.run_id for s in local_seen}
    assert _shape(remote_seen) == _shape(local_seen)


async def test_a_temporal_run_journals_and_replays(
    client: Any, worker: Any, options: TemporalOptions
) -> None:
    bus, out = SignalBus(), io.StringIO()
    run_id = f"journal-{options.task_queue}"
    async with (
        TemporalRuntime(client=client, tools=[add], options=options, bus=bus) as trt,
        record_journal(bus, out, run_id=run_id),
    ):
        step = await trt.run(analyst(), "emea", run_id=run_id)
    assert step.ok, step.error
    signals = read_journal(io.StringIO(out.getvalue()))
    state = replay(analyst(), signals)
    assert state.status == "completed" and state.text == step.value


async def test_a_kind_with_a_handler_of_the_workers_own_ends_as_it_does_locally(
    client: Any, options: TemporalOptions
) -> None:
    """A handler for an ``LLMEmbed`` subclass: ``ai.tool.result`` locally (the handler's
    kind) and on Temporal, though the workflow does not know the workers' handlers."""
    strategy = LogOnce(measure=("ab", "cde"))
    async with Runtime(handlers=HANDLERS, telemetry=None) as rt:
        local = await rt.run(strategy, "go", record=True, run_id="measure")
    async with (
        open_worker(client, task_queue=options.task_queue, handlers=HANDLERS),
        TemporalRuntime(client=client, options=options) as trt,
    ):
        with anyio.fail_after(20):  # without its terminal table updated it never ends
            remote = await trt.run(strategy, "go", record=True, run_id="measure")
    assert remote.ok and remote.value == local.value == [2, 3], (remote.error, local.error)
    assert [s.type for s in remote.signals] == [s.type for s in local.signals]
    assert "ai.tool.result" in [s.type for s in remote.signals]
