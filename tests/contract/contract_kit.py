"""Shared pieces of the contract (parity) suite: strategy cases, a recorder, the checks.

Adding a strategy to the suite is one line: append its :class:`Case` to :data:`CASES`.
A case says how to build the strategy with the common options and how a model turn that
calls tools (or answers) looks for it. Two cases: ReAct (native tool calls, one ``ToolExec``
per call) and the PTC SubAgent (one program per turn, its calls ``ai.tool.*`` sub-calls of
the ``RunProgram`` directive, which ends with ``ai.program.result``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ptcflow.directives import Directive, RunProgram, ToolExec
from ptcflow.errors import UsageError
from ptcflow.lisp import memory_from_data
from ptcflow.lisp._convert import to_python
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
    ProgramOutput,
    Signal,
    decode_signal,
    encode_signal,
)
from ptcflow.strategies import PTC, PromptLimit, ReAct, replay
from ptcflow.testing import Recording, ScriptedLLM, ScriptItem, SignalFactory

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
        input: the run's input.
        work: the directive class that carries a turn's tool calls.
        work_done: the terminal signal of one such directive, successful (for the tests
            that drive the strategy as a plain function).
        skip: tests or scenarios that do not apply to the strategy, with why.
    """

    name: str
    make: Callable[..., Any]
    calls: Callable[[Sequence[ToolRequest]], ScriptItem]
    answer: Callable[[str], ScriptItem]
    results_seen: Callable[[LLMRequest], list[Any]]
    input: Any = "go"
    work: type[Directive] = ToolExec
    work_done: Callable[[SignalFactory, Directive], Signal] = lambda sig, d: sig.tool_result(d, 1)
    skip: Mapping[str, str] = field(default_factory=dict)

    def skipped(self, name: str) -> str | None:
        """Why test or scenario ``name`` does not apply (``None``: it does)."""
        return self.skip.get(name)


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


# -- the PTC SubAgent ----------------------------------------------------------------------


def _ptc(
    *,
    llm_max_retries: int = 2,
    llm_timeout_ms: int | None = None,
    tool_timeout_ms: int | None = None,
    tool_max_retries: int = 0,
    stream: bool = False,
    max_iterations: int = 10,
) -> PTC:
    """The PTC strategy from the common options (tools' own timeouts and retries, and
    streaming, are not options of a SubAgent: their scenarios are skipped or replaced)."""
    return PTC(
        prompt="Work on: {{task}}",
        max_turns=max_iterations,
        llm_max_retries=llm_max_retries,
        llm_timeout_ms=llm_timeout_ms,
        prompt_limit=PromptLimit(value_chars=100_000, tool_result_chars=100_000),
        name="ptc",
    )


def lisp_string(text: str) -> str:
    """``text`` as a PTC-Lisp string literal that survives code extraction exactly."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~" or ord(ch) > 0xFFFF:
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}")
    out.append('"')
    return "".join(out)


def _lisp_value(value: Any) -> str:
    if isinstance(value, str):
        return lisp_string(value)
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "nil"}[value]
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{" + " ".join(f"{lisp_string(k)} {_lisp_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no PTC-Lisp literal for {value!r}")


def _ptc_calls(requests: Sequence[ToolRequest]) -> ScriptItem:
    """One program making the calls (concurrently, results in order); its value, the
    vector of results, is shown to the model."""
    calls = [f"#(call {lisp_string(name)} {_lisp_value(args)})" for name, args in requests]
    return "(pcalls " + " ".join(calls) + ")"


def _ptc_results(request: LLMRequest) -> list[Any]:
    """The value of the last program, as the model read it (its results, in order)."""
    text = request.messages[-1].content
    marker = "Value of your program:\n"
    if marker not in text:
        return []
    shown = text.split(marker, 1)[1].split("\n\nThe task is not finished", 1)[0]
    try:
        value = to_python(memory_from_data({"v": shown})["v"])
    except UsageError:  # cut short, or not readable back (a huge integer): the text
        return [shown]
    return list(value) if isinstance(value, list) else [value]


def _program_done(sig: SignalFactory, d: Directive) -> Signal:
    return sig.program_result(d, ProgramOutput(value=1))


PTC_CASE = Case(
    name="ptc",
    make=_ptc,
    calls=_ptc_calls,
    answer=lambda text: f"(return {lisp_string(text)})",
    results_seen=_ptc_results,
    input={"task": "go"},
    work=RunProgram,
    work_done=_program_done,
    skip={
        "stream_retried_after_5xx": "a SubAgent does not stream its model calls",
        "streamed": "a SubAgent does not stream its model calls",
        "unknown_tool": "a program naming an unknown tool is refused before it runs "
        "(no call is made): test_contract_programs checks it",
        "tool_deadline": "a tool's own timeout is the tool's option (tool(fn, timeout_ms=...)), "
        "not the strategy's: test_contract_programs checks it",
        "nothing_to_do_stalls": "a PTC run always asks the model first: it cannot stall",
    },
)

CASES: list[Case] = [REACT, PTC_CASE]
"""Every strategy the contract suite runs against."""


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
    for call_id, got in terminals.items():
        if call_id in directive_ids:
            continue
        # a sub-call (a program's tool call): one terminal, correlated to its directive,
        # before the directive's own terminal
        (sub,) = got
        parent = sub.causation_id
        assert parent in directive_ids and call_id.startswith(f"{parent}/tool/"), call_id
        (parent_end,) = terminals[parent]
        assert position[id(sub)] < position[id(parent_end)], f"{call_id} after its directive"

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
