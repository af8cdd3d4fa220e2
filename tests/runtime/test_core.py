"""The run core on its own: events in, work and signals out, no event loop, no clock."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ptcflow.core import Flight, RunCore, cancelled
from ptcflow.directives import Directive, EmitToolError, LLMGenerate, ToolExec
from ptcflow.runtime import Step
from ptcflow.signals import (
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    TOOL_STARTED,
    Err,
    ErrorEnvelope,
    LLMResponse,
    Ok,
    Signal,
    ToolStartedData,
)

from .support import MSGS, Probe


def _stamps() -> Any:
    counter = itertools.count(1)
    return lambda: (f"sig-{next(counter)}", "2026-01-01T00:00:00.000Z")


def _core(strategy: Any, **kwargs: Any) -> RunCore[Flight]:
    return RunCore(strategy, "go", run_id="r1", stamp=_stamps(), record=True, **kwargs)


def _step(core: RunCore[Flight]) -> Step | None:
    return core.step  # (a call: mypy must not narrow the attribute)


def _reason(core: RunCore[Flight]) -> str:
    step = core.step
    assert step is not None
    return step.reason


def _value(core: RunCore[Flight]) -> Any:
    step = core.step
    assert step is not None
    return step.value


def _take(core: RunCore[Flight]) -> list[Flight]:
    work, core.to_perform = core.to_perform or [], None
    return work


def _types(core: RunCore[Flight]) -> list[str]:
    assert core.recorded is not None
    return [s.type for s in core.recorded]


def test_a_run_is_driven_by_events_with_injected_ids_and_time() -> None:
    core = _core(Probe([ToolExec(id="t", tool_name="add")]))
    core.start(0.0)
    (flight,) = _take(core)
    assert flight.directive.id == "t" and _step(core) is None
    core.emit(flight, TOOL_STARTED, ToolStartedData(tool_name="add"))
    core.finish(flight, Ok(payload=3), 0.25, attempts=1, duration_ms=5.0)
    assert isinstance(_step(core), Step) and _reason(core) == "done" and _value(core) == [3]
    step = _step(core)
    assert step is not None and step.duration_ms == 250.0  # time comes only from the events
    assert _types(core) == [REQUEST_STARTED, TOOL_STARTED, TOOL_RESULT, REQUEST_COMPLETED]
    assert core.recorded is not None
    assert [s.id for s in core.recorded] == ["sig-1", "sig-2", "sig-3", "sig-4"]
    assert [s.seq for s in core.recorded] == [1, 2, 3, 4]
    result = core.recorded[2]
    assert (result.call_id, result.causation_id, result.run_id) == ("t", "t", "r1")
    assert core.answered == [flight] and flight.result == Ok(payload=3)


def test_a_second_result_for_a_directive_is_dropped_and_counted() -> None:
    core = _core(Probe([ToolExec(id="a", tool_name="x"), ToolExec(id="b", tool_name="x")]))
    core.start(0.0)
    a, b = _take(core)
    assert core.finish(a, Ok(payload=1), 0.0) == Ok(payload=1)
    assert core.finish(a, Ok(payload=2), 0.0) is None  # late: dropped
    core.finish(b, Ok(payload=3), 0.0)
    assert core.late_results == 1
    assert core.recorded is not None
    assert [s.call_id for s in core.recorded if s.type == TOOL_RESULT] == ["a", "b"]


def test_the_deadline_wins_over_work_that_finishes_late() -> None:
    """Work finishing after the deadline is recorded, but nothing new starts."""
    then = [LLMGenerate(id="g", messages=MSGS)]
    probe = Probe(
        [ToolExec(id="t", tool_name="x")], then=lambda s: then if s.call_id == "t" else []
    )
    core = _core(probe, deadline=1.0)
    core.start(0.0)
    (tool,) = _take(core)
    core.finish(tool, Ok(payload="committed"), 1.5)  # a shielded commit, past the deadline
    assert core.to_perform is None, "no directive may start after the deadline"
    step = _step(core)
    assert step is not None and not step.ok and step.reason == "timeout"
    assert core.recorded is not None
    results = {s.call_id: s.data.result for s in core.recorded if s.type in (TOOL_RESULT,)}
    assert results["t"] == Ok(payload="committed")  # nothing lost
    (llm,) = [s for s in core.recorded if s.call_id == "g"]
    assert llm.data.result.error.type == "timeout"  # answered at once, never performed


def test_cancel_interrupts_what_is_in_flight_and_ends_after_the_last_answer() -> None:
    core = _core(Probe([ToolExec(id="a", tool_name="x"), ToolExec(id="b", tool_name="x")]))
    core.start(0.0)
    a, b = _take(core)
    core.cancel(cancelled("stop"), 0.1)
    assert core.to_cancel == [a, b] and _step(core) is None
    core.finish(a, None, 0.2)
    core.finish(b, Ok(payload="done anyway"), 0.2)
    step = _step(core)
    assert step is not None and step.error is not None and step.error.type == "cancelled"
    assert core.recorded is not None and core.recorded[-1].type == REQUEST_FAILED
    assert isinstance(a.result, Err) and a.result.error.message == "stop"


def test_a_run_with_nothing_in_flight_and_no_outcome_is_stalled() -> None:
    class Idle(Probe):
        def outcome(self, state: Any) -> Any:
            return None

    core = _core(Idle([EmitToolError(id="e", tool_name="x", error=ErrorEnvelope.make("x", "y"))]))
    core.start(0.0)
    assert _step(core) is not None and _reason(core) == "stalled"


def test_a_crashing_strategy_ends_the_run_and_stops_its_directives() -> None:
    core = _core(
        Probe(
            [ToolExec(id="a", tool_name="x"), ToolExec(id="b", tool_name="x")], fail_on=TOOL_RESULT
        )
    )
    core.start(0.0)
    a, b = _take(core)
    core.finish(a, Ok(payload=1), 0.0)
    assert core.to_cancel == [b] and core.closing
    core.finish(b, None, 0.0)
    step = _step(core)
    assert step is not None and step.error is not None and step.error.type == "internal"
    assert step.reason == "strategy_error"


def test_a_crash_is_logged_with_where_it_happened_and_its_message_names_the_strategy() -> None:
    logged: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def error(self, event: str, **fields: Any) -> None:
            logged.append((event, fields))

    core = _core(Probe([ToolExec(id="a", tool_name="x")], fail_on=TOOL_RESULT), log=Log())
    core.start(0.0)
    (a,) = _take(core)
    core.finish(a, Ok(payload=1), 0.0)
    step = _step(core)
    assert step is not None and step.error is not None
    assert "raised" in step.error.message and "handling signal ai.tool.result" in step.error.message
    assert step.error.details["where"].startswith("handling signal ai.tool.result")
    ((event, fields),) = logged
    assert event == "run.strategy_crashed" and fields["where"] == step.error.details["where"]
    assert isinstance(fields["exc_info"], Exception)


def test_invalid_directives_and_emit_errors_are_answered_without_being_performed() -> None:
    error = ErrorEnvelope.make("unknown_tool", "no such tool")
    core = _core(
        Probe([ToolExec(id="", tool_name="x"), EmitToolError(id="e", tool_name="q", error=error)])
    )
    core.start(0.0)
    assert core.to_perform is None
    assert _step(core) is not None
    assert core.recorded is not None
    errors = [s.data.result.error.type for s in core.recorded if s.type == TOOL_RESULT]
    assert errors == ["validation", "unknown_tool"]


def test_a_sub_call_has_its_own_terminal_answered_before_its_parent() -> None:
    class Program(Directive, frozen=True, kw_only=True, tag="test_core_program"):
        pass

    core = _core(Probe([Program(id="p")]))
    core.start(0.0)
    (parent,) = _take(core)
    one = core.open_subcall(parent, ToolExec(id="p/tool/1", tool_name="x"))
    two = core.open_subcall(parent, ToolExec(id="p/tool/2", tool_name="x"))
    core.finish(one, Ok(payload=1), 0.0)
    assert _step(core) is None, "a sub-call's result is not its parent's terminal"
    parent.cancel_reason = cancelled("the program stopped")
    core.finish(parent, Ok(payload="program done"), 0.0)
    assert core.finish(two, Ok(payload=2), 0.0) is None  # answered with its parent already
    assert core.recorded is not None
    results = [(s.call_id, s.causation_id) for s in core.recorded if s.type == TOOL_RESULT]
    assert results == [("p/tool/1", "p"), ("p/tool/2", "p"), ("p", "p")]
    step = _step(core)
    assert step is not None and step.ok and step.value == ["program done"]


def test_a_driver_makes_its_own_records_and_reads_the_work_each_event_hands_out() -> None:
    seen: list[str] = []

    class Record(Flight, eq=False):
        performed: bool = False

    def carry_out(core: RunCore[Record]) -> None:
        for flight in core.to_perform or ():
            flight.performed = True
            seen.append(f"perform {flight.directive.id}")
        for flight in core.answered or ():
            seen.append(f"answered {flight.directive.id}")
        core.to_perform = core.answered = None
        if core.step is not None:
            seen.append(f"end {core.step.ok}")

    core: RunCore[Record] = RunCore(
        Probe([ToolExec(id="t", tool_name="x")]), "go", run_id="r", make_flight=Record
    )
    core.start(0.0)
    carry_out(core)
    (flight,) = core.flights
    assert isinstance(flight, Record) and flight.performed
    core.finish(flight, Ok(payload=1), 0.0)
    carry_out(core)
    assert seen == ["perform t", "answered t", "end True"]
    assert core.to_perform is None and core.to_cancel is None and core.answered is None


def test_signals_published_while_folding_are_folded_in_order() -> None:
    """A publish sink that reacts (cancels the run) does not fold signals out of order."""
    published: list[Signal] = []
    probe = Probe([ToolExec(id="t", tool_name="x")])
    core: RunCore[Flight] = RunCore(probe, "go", run_id="r", publish=published.append)
    core.start(0.0)
    (flight,) = _take(core)
    core.finish(flight, Ok(payload=LLMResponse(text="x")), 0.0)
    assert [s.seq for s in published] == sorted(s.seq for s in published)
    assert [s.seq for s in probe.received] == [s.seq for s in published[1:]]


@pytest.mark.parametrize("late", [True, False])
def test_abandon_answers_what_ignores_cancellation(late: bool) -> None:
    core = _core(Probe([ToolExec(id="t", tool_name="x")]))
    core.start(0.0)
    (flight,) = _take(core)
    core.cancel(cancelled("stop"), 0.0)
    core.abandon(5.0)
    assert _step(core) is not None and _reason(core) == "cancelled"
    if late:
        assert core.finish(flight, Ok(payload=1), 6.0) is None
        assert core.late_results == 1
