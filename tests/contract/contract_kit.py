"""Shared pieces of the contract (parity) suite: strategy cases, a recorder, the checks.

Adding a strategy to the suite is one line: append its :class:`Case` to :data:`CASES`.
A case says how to build the strategy with the common options and how a model turn that
calls tools (or answers) looks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ptcflow.directives import Directive
from ptcflow.runtime import LLMRequest, Step
from ptcflow.signals import (
    LLM_DELTA,
    LLM_RESPONSE,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    TERMINAL_TYPES,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    Signal,
    decode_signal,
    encode_signal,
)
from ptcflow.strategies import ReAct, replay
from ptcflow.testing import Recording, ScriptedLLM, ScriptItem

ToolRequest = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Case:
    """How the contract suite drives one strategy.

    Attributes:
        name: the test id.
        make: builds the strategy from the common options (``llm_max_retries``,
            ``llm_timeout_ms``, ``tool_timeout_ms``, ``tool_max_retries``, ``stream``,
            ``max_iterations``).
        calls: a model turn that asks for these tool calls, in this order.
        answer: a model turn that gives this final answer.
        results_seen: the tool results (payloads) a model request shows, in order.
    """

    name: str
    make: Callable[..., Any]
    calls: Callable[[Sequence[ToolRequest]], ScriptItem]
    answer: Callable[[str], ScriptItem]
    results_seen: Callable[[LLMRequest], list[Any]]


def _react_calls(requests: Sequence[ToolRequest]) -> ScriptItem:
    return [ScriptedLLM.tool_call(name, **args) for name, args in requests]


def _tool_messages(request: LLMRequest) -> list[Any]:
    bodies = [msgspec.json.decode(m.content) for m in request.messages if m.role == "tool"]
    return [b["result"] if b["ok"] else b["error"]["type"] for b in bodies]


REACT = Case(
    name="react",
    make=ReAct,
    calls=_react_calls,
    answer=lambda text: text,
    results_seen=_tool_messages,
)

CASES: list[Case] = [REACT]
"""Every strategy the contract suite runs against (add the PTC SubAgent case here)."""


class Recorder(Recording[Any]):
    """:class:`~ptcflow.testing.Recording` that can also simulate a strategy bug."""

    def __init__(self, inner: Any, crash_on: str | None = None) -> None:
        super().__init__(inner)
        self.inner = inner
        self.crash_on = crash_on

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        if signal.type == self.crash_on:
            raise RuntimeError(f"strategy bug on {signal.type}")
        return super().handle(state, signal)


def of_run(step: Step) -> list[Signal]:
    """The recorded signals of the step's own run (child runs excluded)."""
    return [s for s in step.signals if s.run_id == step.run_id]


def check_contract(step: Step, recorder: Recorder) -> None:
    """Assert every run-level contract on a finished, recorded run."""
    signals = of_run(step)
    assert signals, "run with record=True to check the contract"
    seqs = [s.seq for s in signals]
    assert seqs == sorted(set(seqs)), f"seq must be strictly increasing: {seqs}"
    assert signals[0].type == "ai.request.started"
    ends = [s for s in signals if s.type in (REQUEST_COMPLETED, REQUEST_FAILED)]
    assert len(ends) == 1 and ends[0] is signals[-1], "exactly one end signal, last"
    assert (ends[0].type == REQUEST_COMPLETED) == step.ok

    position = {id(s): i for i, s in enumerate(signals)}
    terminals: dict[str, list[Signal]] = {}
    for s in signals:
        if s.type in TERMINAL_TYPES and s.call_id is not None:
            terminals.setdefault(s.call_id, []).append(s)
    for d in recorder.directives:
        got = terminals.get(d.id, [])
        assert len(got) == 1, (
            f"directive {d.id} ({type(d).__name__}) has {len(got)} terminal signals before "
            "the run's end signal (ai.request.completed/failed must come after all of them)"
        )
    directive_ids = {d.id for d in recorder.directives}
    assert set(terminals) <= directive_ids, "a terminal signal without a directive"

    for call_id, (terminal,) in terminals.items():
        mine = [s for s in signals if s.call_id == call_id]
        if terminal.type == TOOL_RESULT:
            started = [s for s in mine if s.type == TOOL_STARTED]
            assert len(started) <= 1
            assert all(position[id(s)] < position[id(terminal)] for s in started)
        if terminal.type == LLM_RESPONSE:
            deltas = [position[id(s)] for s in mine if s.type == LLM_DELTA]
            usage = [position[id(s)] for s in mine if s.type == USAGE]
            assert len(usage) <= 1
            assert all(d < u for d in deltas for u in usage), "deltas before ai.usage"
            assert all(x < position[id(terminal)] for x in deltas + usage), "before response"

    for s in step.signals:
        line = encode_signal(s)
        msgspec.json.decode(line)  # plain JSON
        assert decode_signal(line) == s, f"{s.type} does not survive the journal"

    assert recorder.run is not None
    if recorder.crash_on is None:  # a crashed strategy has no final state to reproduce
        assert replay(recorder.inner, step.signals, tools=recorder.run.tools) == recorder.state


def terminal(step: Step, call_id: str) -> Signal:
    """The terminal signal of one directive."""
    (found,) = [s for s in of_run(step) if s.call_id == call_id and s.type in TERMINAL_TYPES]
    return found


def llm_terminals(step: Step) -> list[Signal]:
    """The ``ai.llm.response`` signals of the run, in order."""
    return [s for s in of_run(step) if s.type == LLM_RESPONSE]


def tool_terminals(step: Step) -> list[Signal]:
    """The ``ai.tool.result`` signals of the run, in order."""
    return [s for s in of_run(step) if s.type == TOOL_RESULT]
