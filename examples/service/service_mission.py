"""The mission the agent service runs: a planner, analysts, and SubAgents, three levels deep.

    planner (ReAct)                      "Which regions grew last quarter?"
    ├── analyst (ReAct), one per region  asked by the planner in parallel
    │   ├── fetch_sales (a tool)         apac's fails: a tool error
    │   ├── counter (SubAgent, PTC)      totals the orders; its first program has a bug
    │   └── writer (SubAgent, JSON)      writes the headline
    └── the planner's answer

Everything runs offline on one :class:`~ptcflow.testing.ScriptedLLM` with a realistic
latency per answer, so the run takes a few seconds and can be watched live; one analyst's
first model call is rate limited (a retry).

One stand-in lives here until the runtime has it (then this module shrinks):
:class:`Delegate`: agents used as tools (the mission tree) are not built yet; it turns
the wrapped strategy's tool calls of an agent name into ``RunChild`` directives, which
the runtime runs as nested child runs (``parent_run_id`` set, cancelled with the parent).
The SubAgents' programs are performed by the runtime itself (its ``RunProgram`` kind).

``tests/trace_viewer/make_mission.py`` records this mission into the journal the viewer's
tests use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import msgspec

from ptcflow import SubAgent
from ptcflow.directives import Directive, RunChild, ToolExec
from ptcflow.runtime import LLMRequest, Runtime
from ptcflow.signals import Signal, SignalBus, ToolSpec
from ptcflow.strategies import Outcome, ReAct, RunInfo
from ptcflow.testing import ScriptedLLM, ScriptItem, Turn
from ptcflow.tools import for_agent

__all__ = (
    "REGIONS",
    "Delegate",
    "mission_agents",
    "mission_model",
    "open_mission_runtime",
    "planner",
    "run_mission",
)

REGIONS: tuple[str, ...] = ("emea", "apac", "amer")
_SALES = {"emea": [120.0, 80.5, 42.0], "amer": [300.0, 12.5], "apac": []}


class Delegate(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy whose tool calls of ``agents`` start child runs (``RunChild``).

    Stand-in for agents used as tools: the wrapped strategy sees each agent as a tool
    taking ``{"prompt": str}`` (or the SubAgent's context), and its call becomes a child
    run whose outcome comes back as the call's ``ai.tool.result``. Pure, like the
    strategy it wraps.

    Attributes:
        inner: the wrapped strategy (ReAct, ...).
        agents: ``{agent name: description}``, the names ``Runtime(agents=...)`` runs.
    """

    inner: Any
    agents: dict[str, str]

    @property
    def name(self) -> str:
        """The wrapped strategy's name."""
        return str(self.inner.name)

    def init(self, run: RunInfo) -> tuple[Any, Sequence[Directive]]:
        """Start the wrapped strategy with the agents added to its tools."""
        specs = tuple(
            ToolSpec(
                name=name,
                description=text,
                input_schema={
                    "type": "object",
                    "properties": {"prompt": {"type": "string"}, "region": {"type": "string"}},
                },
            )
            for name, text in self.agents.items()
        )
        state, out = self.inner.init(msgspec.structs.replace(run, tools=run.tools + specs))
        return state, self._children(out)

    def handle(self, state: Any, signal: Signal) -> tuple[Any, Sequence[Directive]]:
        """Fold a signal into the wrapped strategy."""
        state, out = self.inner.handle(state, signal)
        return state, self._children(out)

    def outcome(self, state: Any) -> Outcome | None:
        """The wrapped strategy's outcome."""
        result: Outcome | None = self.inner.outcome(state)
        return result

    def snapshot(self, state: Any) -> Any:
        """The wrapped strategy's snapshot."""
        return self.inner.snapshot(state)

    def _children(self, directives: Sequence[Directive]) -> Sequence[Directive]:
        if not any(isinstance(d, ToolExec) and d.tool_name in self.agents for d in directives):
            return directives
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


# -- tools ------------------------------------------------------------------------------


def _tools(latency: float) -> list[Callable[..., Awaitable[Any]]]:
    async def fetch_sales(region: str) -> dict[str, Any]:
        """Quarterly sales figures of a region.

        Args:
            region: emea, apac or amer.
        """
        await anyio.sleep(latency)
        if region == "apac":
            raise ConnectionError("sales warehouse for apac is unreachable")
        return {"region": region, "quarter": "Q3", "growth": {"emea": 0.12, "amer": 0.31}[region]}

    async def orders(region: str) -> list[dict[str, Any]]:
        """The orders of a region last quarter.

        Args:
            region: emea, apac or amer.
        """
        await anyio.sleep(latency / 2)
        return [{"id": i + 1, "amount": a} for i, a in enumerate(_SALES.get(region, []))]

    return [fetch_sales, orders]


# -- agents -------------------------------------------------------------------------------

COUNTER = SubAgent(
    name="counter",
    prompt="Total the orders of {{region}}",
    signature="(region :string) -> {total :float, orders :int}",
    max_turns=3,
)
WRITER = SubAgent(
    name="writer",
    prompt="Write a one-line headline about {{region}}",
    signature="(region :string) -> {headline :string}",
    output="json",
    max_turns=2,
)


def planner() -> Delegate:
    """The top-level agent: asks one analyst per region, then answers."""
    return Delegate(
        inner=ReAct(name="planner", system_prompt="You are the planner."),
        agents={"analyst": "Analyse the sales of one region."},
    )


def mission_agents() -> dict[str, Any]:
    """The agents child runs start by name (``Runtime(agents=...)``)."""
    return {
        "analyst": Delegate(
            inner=ReAct(name="analyst", system_prompt="You are an analyst."),
            agents={"counter": "Total a region's orders.", "writer": "Write a headline."},
        ),
        "counter": COUNTER.strategy(),
        "writer": WRITER.strategy(),
    }


# -- the scripted model ---------------------------------------------------------------


def _region(text: str) -> str:
    return next((r for r in REGIONS if r in text), "emea")


def mission_model(latency: float = 0.4, *, retry: bool = True) -> ScriptedLLM:
    """The scripted model of every agent of the mission, answering after ``latency`` s.

    It reads which agent is asking from the conversation and how far that agent is from
    the number of answers already in it. With ``retry``, the apac analyst's first call is
    rate limited once.
    """
    limited: set[str] = set()

    def answer(request: LLMRequest) -> ScriptItem:
        system = request.messages[0].content if request.messages else ""
        user = next((m.content for m in request.messages if m.role == "user"), "")
        done = sum(1 for m in request.messages if m.role == "assistant")
        region = _region(user)
        wait = latency * (0.6 + 0.2 * REGIONS.index(region))
        if system == "You are the planner.":
            if done == 0:
                calls = [
                    ScriptedLLM.tool_call("analyst", prompt=f"Analyse the sales of {r}")
                    for r in REGIONS
                ]
                return Turn(tool_calls=tuple(calls), latency=latency)
            return Turn(text="amer grew most (31%), then emea (12%); apac's data is missing.")
        if system == "You are an analyst.":
            if done == 0 and retry and region == "apac" and region not in limited:
                limited.add(region)
                return ScriptedLLM.rate_limited(retry_after=latency / 4)
            if done == 0:
                calls = [
                    ScriptedLLM.tool_call("fetch_sales", region=region),
                    ScriptedLLM.tool_call("counter", region=region),
                ]
                return Turn(tool_calls=tuple(calls), latency=wait)
            if done == 1:
                return Turn(tool_calls=(ScriptedLLM.tool_call("writer", region=region),))
            return Turn(text=f"{region}: report ready", latency=wait / 2)
        if "Total the orders" in user:
            if done == 0:
                return Turn(
                    text='(def rows (call "orders" {:region ctx/region}))\n'
                    '(+ "total: " (sum-by :amount rows))',
                    latency=wait,
                )
            return Turn(
                text='(let [rows (call "orders" {:region ctx/region})]\n'
                "  (return {:total (sum-by :amount rows) :orders (count rows)}))",
                latency=wait,
            )
        return Turn(text=f'{{"headline": "{region.upper()} sales in Q3"}}', latency=wait)

    return ScriptedLLM(answer, latency=latency, record=False)


def open_mission_runtime(
    *,
    bus: SignalBus | None = None,
    latency: float = 0.4,
    retry: bool = True,
    handlers: Mapping[type[Any], Any] | None = None,
) -> Runtime:
    """A Runtime for missions: the scripted model, the tools, the agents.

    Use it as ``async with open_mission_runtime(bus=bus) as rt``; ``handlers`` adds
    directive kinds of your own.
    """
    return Runtime(
        llm=mission_model(latency, retry=retry),
        tools=for_agent(_tools(latency)),
        agents=mission_agents(),
        bus=bus,
        handlers=handlers,
    )


async def run_mission(rt: Runtime, question: str, *, run_id: str | None = None) -> Any:
    """Run the planner on ``question`` in ``rt`` and return its Step."""
    return await rt.run(planner(), question, run_id=run_id, name="planner")
