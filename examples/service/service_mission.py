"""The mission the agent service runs: SubAgents calling SubAgents as tools, three levels deep.

    planner (SubAgent, PTC)              "Which regions grew last quarter?"
    └── analyst (SubAgent, JSON), one per region, called by the planner's program (pmap)
        ├── fetch_sales (a tool)         apac's fails: a tool error its model reads
        ├── counter (SubAgent, PTC)      totals the orders; emea's first program has a bug
        └── writer (SubAgent, JSON)      writes the headline

The planner's program calls ``analyst`` (``analyst.as_tool()``) once per region in
parallel; each analyst calls ``fetch_sales``, ``counter`` and ``writer`` natively (tool
calls of its model). Every agent called as a tool is a child run of its caller (run id
``{caller run id}/{call id}``), sharing the planner's mission limits and its model.

Everything runs offline on one :class:`~ptcflow.testing.ScriptedLLM` with a realistic
latency per answer, so the run takes a few seconds and can be watched live; the apac
analyst's first model call is rate limited (a retry).

The planner holds a conversation (``run_mission(..., session=...)``): a question that
refers back ("Which of them grew most?": them, those, they, it, that) is a follow-up,
which the scripted planner answers from the earlier turns it was shown, without calling an
analyst; with no earlier turns it says there is nothing to follow up on. Any other
question runs the whole mission.

``tests/trace_viewer/make_mission.py`` records this mission into the journal the viewer's
tests use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from ptcflow import MissionLimits, Session, SubAgent
from ptcflow.runtime import LLMRequest, RunHandle, Runtime, Step
from ptcflow.signals import SignalBus
from ptcflow.testing import ScriptedLLM, ScriptItem, Turn

__all__ = (
    "EARLIER",
    "LIMITS",
    "NOTHING_EARLIER",
    "REGIONS",
    "mission_model",
    "open_mission_runtime",
    "planner",
    "run_mission",
    "start_mission",
)

REGIONS: tuple[str, ...] = ("emea", "apac", "amer")
_SALES = {"emea": [120.0, 80.5, 42.0], "amer": [300.0, 12.5], "apac": []}
_GROWTH = {"emea": 0.12, "amer": 0.31}

LIMITS = MissionLimits(max_depth=3, turn_budget=40)
"""The mission's limits: 20 model calls are made, one of them retried."""


# -- tools and agents -------------------------------------------------------------------


def _tools(latency: float) -> tuple[Callable[..., Awaitable[Any]], ...]:
    async def fetch_sales(region: str) -> dict[str, Any]:
        """Quarterly sales figures of a region.

        Args:
            region: emea, apac or amer.
        """
        await anyio.sleep(latency / 2)
        if region == "apac":
            raise ConnectionError("sales warehouse for apac is unreachable")
        return {"region": region, "quarter": "Q3", "growth": _GROWTH[region]}

    async def orders(region: str) -> list[dict[str, Any]]:
        """The orders of a region last quarter.

        Args:
            region: emea, apac or amer.
        """
        await anyio.sleep(latency / 4)
        return [{"id": i + 1, "amount": a} for i, a in enumerate(_SALES.get(region, []))]

    return fetch_sales, orders


def planner(latency: float = 0.4) -> SubAgent:
    """The mission's first agent, with the agents under it; its tools take ``latency`` s.

    Example:
        >>> [t.name for t in planner().tools]
        ['analyst']
    """
    fetch_sales, orders = _tools(latency)
    counter = SubAgent(
        name="counter",
        prompt="Total the orders of {{region}}",
        signature="(region :string) -> {total :float, orders :int}",
        description="Total a region's orders.",
        tools=[orders],
        max_turns=3,
    )
    writer = SubAgent(
        name="writer",
        prompt="Write a one-line headline about {{region}}",
        signature="(region :string) -> {headline :string}",
        description="Write a headline about a region.",
        output="json",
        max_turns=2,
    )
    analyst = SubAgent(
        name="analyst",
        prompt="Analyse the sales of {{region}}",
        signature="(region :string) -> {region :string, total :float, headline :string}",
        description="Analyse the sales of one region.",
        output="json",
        tools=[fetch_sales, counter.as_tool(), writer.as_tool()],
        max_turns=4,
    )
    return SubAgent(
        name="planner",
        prompt="{{question}}",
        signature="(question :string) -> {answer :string, reports [:map]}",
        tools=[analyst.as_tool()],
        max_turns=2,
        # the program waits for the analysts it calls: give it the mission's time
        program_limits={"timeout_ms": 120_000},
    )


# -- the scripted model ---------------------------------------------------------------


def _region(text: str) -> str:
    return next((r for r in REGIONS if r in text), "emea")


_PLAN = (
    '(let [reports (pmap #(call "analyst" {:region %}) ["emea" "apac" "amer"])]\n'
    '  (return {:answer "amer grew most (31%), then emea (12%); apac\'s data is missing."\n'
    "           :reports reports}))"
)
_BUGGY_TOTAL = (
    '(def rows (call "orders" {:region ctx/region}))\n(+ "total: " (sum-by :amount rows))'
)
_TOTAL = (
    '(let [rows (call "orders" {:region ctx/region})]\n'
    "  (return {:total (sum-by :amount rows) :orders (count rows)}))"
)


EARLIER = "## Earlier in this conversation"
"""How a SubAgent's task starts when the run continues a conversation."""
NOTHING_EARLIER = "There is nothing earlier in this conversation to follow up on."
"""The planner's answer to a follow-up question asked first."""
_REFERS_BACK = re.compile(r"\b(them|those|they|it|that)\b", re.IGNORECASE)
_ANSWER = re.compile(r'"answer":"((?:[^"\\]|\\.)*)"')


def _follow_up(task: str) -> str:
    """The planner's program for a follow-up question: the answer it gave last, as it
    reads it in the earlier turns of its task (the scripted model's proof that it was
    shown them)."""
    asked = [line[6:] for line in task.splitlines() if line.startswith("user: ")]
    said = [line[11:] for line in task.splitlines() if line.startswith("assistant: ")]
    found = _ANSWER.search(said[-1]) if said else None
    if not task.startswith(EARLIER) or not asked or found is None:
        answer = NOTHING_EARLIER
    else:
        earlier = json.loads(f'"{found.group(1)}"')
        best = next((r for r in earlier.split() if r in REGIONS), "none")
        answer = f"{best} grew most. Earlier you asked {asked[-1]!r}, and I said: {earlier}"
    return f"(return {{:answer {json.dumps(answer)} :reports []}})"


def mission_model(latency: float = 0.4, *, retry: bool = True) -> ScriptedLLM:
    """The scripted model of every agent of the mission, answering after ``latency`` s.

    It reads which agent is asking from the task (the first user message) and how far
    that agent is from the number of answers already in the conversation. With ``retry``,
    the apac analyst's first call is rate limited once.
    """
    limited: set[str] = set()

    def answer(request: LLMRequest) -> ScriptItem:
        task = next((m.content for m in request.messages if m.role == "user"), "")
        done = sum(1 for m in request.messages if m.role == "assistant")
        region = _region(task)
        wait = latency * (0.6 + 0.2 * REGIONS.index(region))
        if task.startswith("Analyse the sales"):
            if done == 0 and retry and region == "apac" and region not in limited:
                limited.add(region)
                return ScriptedLLM.rate_limited(retry_after=latency / 4)
            if done == 0:
                calls = (
                    ScriptedLLM.tool_call("fetch_sales", region=region),
                    ScriptedLLM.tool_call("counter", region=region),
                )
                return Turn(tool_calls=calls, latency=wait)
            if done == 1:
                return Turn(tool_calls=(ScriptedLLM.tool_call("writer", region=region),))
            report = {
                "region": region,
                "total": sum(_SALES[region]),
                "headline": f"{region.upper()} sales in Q3",
            }
            return Turn(text=json.dumps(report), latency=wait / 2)
        if task.startswith("Total the orders"):
            buggy = done == 0 and region == "emea"  # one program error in the mission
            return Turn(text=_BUGGY_TOTAL if buggy else _TOTAL, latency=wait)
        if task.startswith("Write a one-line headline"):
            return Turn(
                text=json.dumps({"headline": f"{region.upper()} sales in Q3"}), latency=wait
            )
        # the planner: a question that refers back follows up on the conversation
        if _REFERS_BACK.search(task.split("\n## Now\n", 1)[-1]):
            return Turn(text=_follow_up(task), latency=latency)
        return Turn(text=_PLAN, latency=latency)

    return ScriptedLLM(answer, latency=latency, record=False)


def open_mission_runtime(
    *,
    bus: SignalBus | None = None,
    latency: float = 0.4,
    retry: bool = True,
    handlers: Mapping[type[Any], Any] | None = None,
) -> Runtime:
    """A Runtime for missions: the scripted model (every agent of the mission inherits it).

    Use it as ``async with open_mission_runtime(bus=bus) as rt``; ``handlers`` adds
    directive kinds of your own.
    """
    return Runtime(llm=mission_model(latency, retry=retry), bus=bus, handlers=handlers)


def start_mission(
    rt: Runtime, question: str, *, run_id: str | None = None, latency: float = 0.4
) -> RunHandle:
    """Start the planner on ``question`` in ``rt`` (tools taking ``latency`` s); return
    its handle."""
    return rt.start(
        planner(latency), context={"question": question}, run_id=run_id, mission_limits=LIMITS
    )


async def run_mission(
    rt: Runtime,
    question: str,
    *,
    run_id: str | None = None,
    latency: float = 0.4,
    session: Session | None = None,
) -> Step:
    """Run the planner on ``question`` in ``rt`` (tools taking ``latency`` s); return its
    Step. With ``session``, the question continues that conversation (and is stored in it
    when the mission succeeds)."""
    return await rt.run(
        planner(latency),
        context={"question": question},
        run_id=run_id,
        mission_limits=LIMITS,
        session=session,
    )
