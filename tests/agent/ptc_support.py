"""Drive the PTC strategy as plain functions: scripted model text, programs really run.

Programs run with :func:`ptcflow.program.perform_program` (the same code the runtime's
program kind uses), their tool calls answered by plain Python functions; the strategy is
fed the signals a runtime would publish (:class:`~ptcflow.testing.SignalFactory`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from ptcflow.directives import Directive, LLMGenerate, RunProgram
from ptcflow.program import perform_program
from ptcflow.signals import Err, ErrorEnvelope, Ok, ProgramOutput, Signal, ToolSpec, Usage
from ptcflow.strategies import PTC, PtcState, RunInfo
from ptcflow.testing import SignalFactory

ToolFn = Callable[..., Any]


def run_program(directive: RunProgram, tools: Mapping[str, ToolFn]) -> ProgramOutput:
    """Run a RunProgram directive, each call answered by ``tools[name](**args)``."""

    async def call(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
        try:
            return Ok(payload=tools[name](**args))
        except Exception as exc:
            return Err(error=ErrorEnvelope.make("tool_error", f"{type(exc).__name__}: {exc}"))

    async def main() -> ProgramOutput:
        return await perform_program(directive, call)

    return anyio.run(main)


class Drive:
    """A PTC run fed by hand: answer model calls with texts, run programs for real."""

    def __init__(
        self,
        ptc: PTC,
        context: Mapping[str, Any] | None = None,
        tools: Mapping[str, ToolFn] | None = None,
        run_id: str = "r1",
    ) -> None:
        self.ptc = ptc
        self.tools = dict(tools or {})
        self.sig = SignalFactory(run_id)
        specs = tuple(ToolSpec(name=n) for n in self.tools)
        self.start = self.sig.request_started(dict(context or {}))
        self.signals: list[Signal] = [self.start]
        self.directives: list[Directive] = []
        self.outputs: list[ProgramOutput] = []
        state, out = ptc.init(
            RunInfo(run_id=run_id, input=dict(context or {}), request_id=None, tools=specs)
        )
        self.specs = specs
        self.state: PtcState = state
        self.pending: list[Directive] = list(out)
        self.directives.extend(out)

    def feed(self, signal: Signal) -> None:
        self.signals.append(signal)
        self.state, out = self.ptc.handle(self.state, signal)
        self.pending.extend(out)
        self.directives.extend(out)

    def reply(self, text: str, usage: Usage | None = None) -> None:
        """Answer the pending model call with ``text``; run the program it leads to."""
        llm = self.pending.pop(0)
        assert isinstance(llm, LLMGenerate), llm
        for s in self.sig.llm_reply(llm, text, usage=usage):
            self.feed(s)
        while self.pending and isinstance(self.pending[0], RunProgram):
            program = self.pending.pop(0)
            assert isinstance(program, RunProgram)
            out = run_program(program, self.tools)
            self.outputs.append(out)
            self.feed(self.sig.program_result(program, out))

    def script(self, texts: Sequence[str]) -> PtcState:
        for text in texts:
            self.reply(text)
        return self.state

    @property
    def status(self) -> str:
        """The state's status (a plain ``str``, so checks in a row do not narrow it)."""
        return str(self.state.status)

    @property
    def last_prompt(self) -> str:
        """The last user message the model was sent."""
        llm = [d for d in self.directives if isinstance(d, LLMGenerate)][-1]
        return llm.messages[-1].content


def block(code: str) -> str:
    """A model response holding one program."""
    return f"Here is the program:\n```clojure\n{code}\n```\n"
