"""Tools, models and strategies the Temporal tests run on workers (imported by path there:
module-level, stateless, deterministic)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec

from ptcflow import SubAgent
from ptcflow.directives import Directive, LLMEmbed, RunChild, RunProgram, ToolExec
from ptcflow.runtime import LLMRequest
from ptcflow.sessions import SUMMARY_PROMPT
from ptcflow.signals import (
    PROGRAM_RESULT,
    TERMINAL_TYPES,
    Message,
    Ok,
    ProgramOutput,
    Signal,
    ToolCall,
    ToolSpec,
)
from ptcflow.strategies import Outcome, ReAct, RunInfo
from ptcflow.testing import ScriptedLLM
from ptcflow.tools import ToolContext
from temporal import missions

ANALYST = "You analyse one region."
PLANNER = "You plan the mission."
TOTAL = "Total the orders of"
CHAT = "You chat."
"""The system prompt of a conversation's ReAct: its answer lists the questions it saw."""
REMEMBER = "Remember"
"""A SubAgent prompt starting so keeps a total: ``def`` on the first question, read after."""
TRIAGE = "You triage."
"""A ReAct that adds (a tool call), then hands the conversation on (its handoff tool)."""
BILLING = "You handle refunds."
"""A ReAct that answers with the roles of the conversation it was given."""
TO_REFUNDS = "You triage refunds."
"""A ReAct that hands the conversation to the SubAgent ``refunds`` (order 7)."""
PAY_BACK = "Pay back order"
"""A SubAgent's prompt starting so returns "refunded" (a handoff's next agent)."""
ROUTE = "Route the question"
"""A SubAgent's prompt starting so runs a program that calls its handoff tool."""
PING = "You ping."
"""A ReAct that hands the conversation on at once, every time (a cycle of handoffs)."""
TOTAL_PROGRAMS = (
    '(def s (call "add" {:x 1 :y 2}))\n(println "partial" s)',
    "(return {:total (addd s 1)})",  # an error the next turn fixes
    '(return {:total (call "add" {:x s :y (count ctx/user)})})',
)
"""The SubAgent's programs, one per turn (see :func:`totaller`)."""


def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def slow_add(x: int, y: int) -> int:
    """Add two integers, slowly (half a second)."""
    await anyio.sleep(0.5)
    return x + y


async def wait_for_ever() -> str:
    """Never return."""
    await anyio.sleep_forever()
    return "never"


def big(size: int) -> str:
    """Return ``size`` characters that do not compress."""
    return os.urandom(size // 2).hex()


async def logged(ctx: ToolContext, x: int) -> int:
    """Append to the file $PTCFLOW_TEST_LOG when a call starts and when it is done (its
    side effect, counted by the tests: ``start|done {run id}/{call id} {pid} {time}``),
    taking ``PTCFLOW_TEST_DELAY`` seconds."""
    log = anyio.Path(os.environ["PTCFLOW_TEST_LOG"])
    async with await log.open("a") as f:
        await f.write(f"start {ctx.run_id}/{ctx.call_id} {os.getpid()} {time.time():.3f}\n")
    await anyio.sleep(float(os.environ.get("PTCFLOW_TEST_DELAY", "0.5")))
    async with await log.open("a") as f:
        await f.write(f"done {ctx.run_id}/{ctx.call_id} {os.getpid()} {time.time():.3f}\n")
    return x * 10


def last_two(messages: Sequence[Message]) -> list[Message]:
    """A handoff's input filter of one's own: the last two messages."""
    return list(messages[-2:])


def say_no(messages: Sequence[Message]) -> list[Message]:
    """A handoff's input filter that raises."""
    raise ValueError("no conversation today")


def _script(req: LLMRequest) -> Any:
    mission = missions.script(req)
    if mission is not None:
        return mission
    system = req.messages[0].content if req.messages[0].role == "system" else ""
    last = req.messages[-1]
    tools = {t.name for t in req.tools}
    transfer = sorted(t for t in tools if t.startswith("transfer_to_"))
    if system == TRIAGE:
        if not any(m.role == "tool" for m in req.messages):
            return ToolCall(id="call_add", name="add", input={"x": 1, "y": 2})
        return ToolCall(id="call_handoff", name=transfer[0], input={})
    if system == TO_REFUNDS:
        return ToolCall(id="call_refunds", name="transfer_to_refunds", input={"order": 7})
    if system != BILLING and any(m.role == "user" and ROUTE in m.content for m in req.messages):
        return '```clojure\n(return (call "transfer_to_billing" {}))\n```'
    if any(m.role == "user" and PAY_BACK in m.content for m in req.messages):
        return '```clojure\n(return "refunded")\n```'
    if system == BILLING:
        return "billing saw " + ",".join(m.role for m in req.messages[1:])
    if system.startswith(PING):  # "You ping." hands to pong, the other one to ping
        other = "transfer_to_pong" if system == PING else "transfer_to_ping"
        return ToolCall(id=f"call_{len(req.messages)}", name=other, input={})
    if system == SUMMARY_PROMPT:  # a compaction's summarizing call
        return "SUMMARY: they said hello"
    if system == CHAT:
        asked = [m.content for m in req.messages if m.role == "user"]
        return f"#{len(asked)}: " + " / ".join(asked)
    if any(m.role == "user" and REMEMBER in m.content for m in req.messages):
        if "Kept in memory" in last.content:
            return "```clojure\n(return (* total 2))\n```"
        return "```clojure\n(def total 42)\n(return total)\n```"
    if any(m.role == "user" and TOTAL in m.content for m in req.messages):
        turn = sum(1 for m in req.messages if m.role == "assistant")
        return f"```clojure\n{TOTAL_PROGRAMS[turn]}\n```"
    if system == PLANNER:
        if last.role == "tool":
            results = [m.content for m in req.messages if m.role == "tool"]
            return "mission report: " + " | ".join(results)
        return [
            ToolCall(id="call_a", name="analyst", input={"prompt": "emea"}),
            ToolCall(id="call_b", name="analyst", input={"prompt": "amer"}),
            _own_tool_call(tools, "call_c", "planner"),
        ]
    prompt = next((m.content for m in req.messages if m.role == "user"), "")
    if "logged" in tools:
        n = sum(1 for m in req.messages if m.role == "tool")
        if n < 3:
            return ToolCall(id=f"call_{n}", name="logged", input={"x": n + len(str(prompt))})
        return "logged thrice"
    if last.role == "tool":
        return f"done: {last.content}"
    return _own_tool_call(tools, f"call_{prompt}", str(prompt))


def _own_tool_call(tools: set[str], id: str, prompt: str) -> ToolCall:
    """A call of the run's first tool that is not an agent."""
    name = next(iter(sorted(tools - {"analyst"})), "add")
    args: dict[str, Any] = {"x": len(prompt), "y": 1}
    if name == "wait_for_ever":
        args = {}
    elif name == "big":
        args = {"size": 200_000}
    return ToolCall(id=id, name=name, input=args)


def model() -> ScriptedLLM:
    """A stateless scripted model (each answer depends on the request only)."""
    return ScriptedLLM(_script)


class Delegate(msgspec.Struct, frozen=True, kw_only=True):
    """ReAct whose tool calls of ``agents`` become child runs (``RunChild``)."""

    inner: ReAct
    agents: dict[str, str]

    @property
    def name(self) -> str:
        """The wrapped strategy's name."""
        return self.inner.name

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        """Start ReAct with the agents among its tools."""
        specs = tuple(
            ToolSpec(
                name=name,
                description=text,
                input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
            )
            for name, text in self.agents.items()
        )
        state, out = self.inner.init(msgspec.structs.replace(run, tools=run.tools + specs))
        return state, self._children(out)

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        """Fold a signal into ReAct."""
        state, out = self.inner.handle(state, signal)
        return state, self._children(out)

    def outcome(self, state: Any) -> Outcome | None:
        """ReAct's outcome."""
        result: Outcome | None = self.inner.outcome(state)
        return result

    def snapshot(self, state: Any) -> Any:
        """ReAct's snapshot."""
        return self.inner.snapshot(state)

    def _children(self, directives: Sequence[Directive]) -> Sequence[Directive]:
        return [
            RunChild(
                id=d.id,
                agent=d.tool_name,
                input=d.arguments,
                request_id=d.request_id,
                iteration=d.iteration,
            )
            if isinstance(d, ToolExec) and d.tool_name in self.agents
            else d
            for d in directives
        ]


def planner() -> Delegate:
    """The mission's top agent: two analysts (child runs) and a tool, in parallel."""
    return Delegate(
        inner=ReAct(system_prompt=PLANNER, name="planner"), agents={"analyst": "analyse a region"}
    )


def analyst() -> ReAct:
    """A child agent: one tool call, then an answer."""
    return ReAct(system_prompt=ANALYST, name="analyst")


def totaller() -> SubAgent:
    """A SubAgent (PTC) of three turns whose programs call ``add``, one of them failing."""
    return SubAgent(
        prompt=TOTAL + " {{user}}",
        signature="(user :string) -> {total :int}",
        tools=[add],
        name="totaller",
    )


class Clocky(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy that is not deterministic: its directive ids read the clock."""

    name: str = "clocky"

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        """Ask for one tool call whose id is the time."""
        return "asked", [
            ToolExec(id=f"add_{time.time_ns()}", tool_name="add", arguments={"x": 1, "y": 2})
        ]

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        """Done at the tool's result."""
        return ("done" if signal.type == "ai.tool.result" else state), []

    def outcome(self, state: Any) -> Outcome | None:
        """Done once the tool answered."""
        from ptcflow.signals import Ok, Usage

        return Outcome(result=Ok(payload=state), usage=Usage()) if state == "done" else None

    def snapshot(self, state: Any) -> Any:
        """Nothing to share."""
        return None


class LogAll(Directive, frozen=True, kw_only=True, tag="log_all"):
    """A custom directive whose handler makes one sub-call of ``logged`` per value (the
    shape of a program: sub-calls through ``ctx.call_tool``)."""

    values: list[int]


async def log_all(directive: LogAll, ctx: Any) -> list[Any]:
    """Call ``logged`` once per value, in order."""
    out = []
    for n, x in enumerate(directive.values, 1):
        result = await ctx.call_tool("logged", {"x": x}, index=n)
        out.append(result.payload if result.ok else result.error.type)
    return out


LOG_PROGRAM = '(return [(call "logged" {:x 1}) (call "logged" {:x 2}) (call "logged" {:x 3})])'
"""A program of three sequential calls of ``logged``."""


class Measure(LLMEmbed, frozen=True, kw_only=True, tag="measure"):
    """An ``LLMEmbed`` performed by a handler of the workers' own (``measure``): it ends
    with ``ai.tool.result``, as any directive with a handler of its own."""


async def measure(directive: Measure, ctx: Any) -> list[int]:
    """The length of each input."""
    return [len(text) for text in directive.inputs]


TOOLS = [logged]
HANDLERS: dict[type[Directive], Any] = {LogAll: log_all, Measure: measure}


class LogOnce(msgspec.Struct, frozen=True, kw_only=True):
    """One LogAll directive (or, with ``program``, the runtime's own ``RunProgram`` kind);
    done at its own result."""

    name: str = "log-once"
    program: str | None = None
    measure: tuple[str, ...] = ()

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        """Ask for the sub-calls (or for the program, or for ``measure``)."""
        d: Directive = LogAll(id=f"{run.run_id}/all", values=[1, 2, 3])
        if self.program is not None:
            d = RunProgram(id=f"{run.run_id}/all", source=self.program, tool_names=("logged",))
        elif self.measure:
            d = Measure(id=f"{run.run_id}/all", inputs=self.measure)
        return None, [d]

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        """Keep the directive's own result (whatever its terminal signal); a program's is
        its value (``ai.program.result`` carries ``Ok(ProgramOutput)``)."""
        own = signal.call_id is not None and signal.call_id.endswith("/all")
        if not own or signal.type not in TERMINAL_TYPES:
            return state, []
        result = signal.data.result
        if signal.type == PROGRAM_RESULT and isinstance(result, Ok):
            assert isinstance(result.payload, ProgramOutput), result  # typed after JSON
            return Ok(payload=result.payload.value), []
        return result, []

    def outcome(self, state: Any) -> Outcome | None:
        """Done with the directive's result."""
        from ptcflow.signals import Usage

        return None if state is None else Outcome(result=state, usage=Usage())

    def snapshot(self, state: Any) -> Any:
        """Nothing to share."""
        return None


class Loose(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy wrapper whose field is typed ``Any``: it would not come back equal."""

    inner: Any = None

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        """Delegate."""
        result: tuple[Any, Sequence[Directive]] = self.inner.init(run)
        return result

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        """Delegate."""
        result: tuple[Any, Sequence[Directive]] = self.inner.handle(state, signal)
        return result
