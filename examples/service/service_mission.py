"""The mission the agent service runs: SubAgents calling SubAgents as tools, three levels deep.

    planner (SubAgent, PTC)              "Which regions grew last quarter?"
    ├── analyst (SubAgent, JSON), one per region, called by the planner's program (pmap)
    │   ├── fetch_sales (a tool)         apac's fails: a tool error its model reads
    │   ├── counter (SubAgent, PTC)      totals the orders; emea's first program has a bug
    │   └── writer (SubAgent, JSON)      writes the headline
    └── refund (a tool)                  "Refund order A17 (250 EUR)": above
                                         REFUND_THRESHOLD it waits for a person's approval

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
question runs the whole mission. A question asking for a refund ("Refund order A17 (250
EUR)") makes the planner's program call ``refund``: an amount above
:data:`REFUND_THRESHOLD` needs a person's approval, so the run pauses
(``ptcflow.tool(requires_approval=...)``, see docs/approvals.md); approved, the refund is
made once and the planner answers; denied, its program fails with the denial, which the
planner reads and answers with.

``tests/trace_viewer/make_mission.py`` records this mission into the journal the viewer's
tests use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

import ptcflow
from ptcflow import MissionLimits, Session, SubAgent
from ptcflow.runtime import LLMRequest, RunHandle, Runtime, Step
from ptcflow.sessions import SessionError, conversation_of
from ptcflow.signals import SignalBus
from ptcflow.testing import ScriptedLLM, ScriptItem, Turn

__all__ = (
    "EARLIER",
    "LIMITS",
    "NOTHING_EARLIER",
    "REFUND_THRESHOLD",
    "REGIONS",
    "mission_model",
    "open_mission_runtime",
    "planner",
    "refund_tool",
    "resume_mission",
    "run_mission",
    "start_mission",
)

REGIONS: tuple[str, ...] = ("emea", "apac", "amer")
_SALES = {"emea": [120.0, 80.5, 42.0], "amer": [300.0, 12.5], "apac": []}
_GROWTH = {"emea": 0.12, "amer": 0.31}

LIMITS = MissionLimits(max_depth=3, turn_budget=40)
"""The mission's limits: 20 model calls are made, one of them retried."""
REFUND_THRESHOLD = 100.0
"""A refund above this amount waits for a person's approval."""


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


def refund_tool(made: list[dict[str, Any]] | None = None) -> Any:
    """The ``refund`` tool: it appends each refund it makes to ``made``; a refund above
    :data:`REFUND_THRESHOLD` waits for a person's approval first."""
    made = [] if made is None else made

    def over(args: Mapping[str, Any]) -> bool | str:
        amount = args.get("amount")
        if isinstance(amount, int | float) and amount > REFUND_THRESHOLD:
            return f"a refund above {REFUND_THRESHOLD:g} needs a person's approval"
        return False

    @ptcflow.tool(requires_approval=over)
    def refund(order: str, amount: float) -> dict[str, Any]:
        """Refund an order.

        Args:
            order: the order's id.
            amount: how much to refund.
        """
        made.append({"order": order, "amount": amount})
        return {"order": order, "amount": amount, "status": "refunded"}

    return refund


def planner(latency: float = 0.4, *, refunds: list[dict[str, Any]] | None = None) -> SubAgent:
    """The mission's first agent, with the agents under it; its tools take ``latency`` s;
    the refunds it makes are appended to ``refunds``.

    Example:
        >>> [t.name for t in planner().tools]
        ['analyst', 'refund']
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
        tools=[analyst.as_tool(), refund_tool(refunds)],
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


_REFUND = re.compile(r"\brefund\b(?:\D*?\b([A-Z]\d+)\b)?(?:\D*?(\d+(?:\.\d+)?))?", re.IGNORECASE)


def _refund_program(asked: re.Match[str], request: LLMRequest, done: int) -> str:
    """The planner's program for a refund: call ``refund``; after a failed program (the
    refund was denied), answer with what it read."""
    order, amount = (asked.group(1) or "A17").upper(), float(asked.group(2) or 250)
    if done == 0:
        return (
            f'(let [r (call "refund" {{:order "{order}" :amount {amount}}})]\n'
            f'  (return {{:answer (str "Refunded " (:amount r) " on order " (:order r) ".")\n'
            "           :reports []}))"
        )
    said = request.messages[-1].content or ""
    found = re.search(r"approval_denied\W+(.*)", said)
    why = found.group(1).strip().splitlines()[0] if found else said.strip()[:200]
    answer = f"The refund of order {order} was not made: {why}"
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
        # the planner: a refund, or a question that refers back (a follow-up)
        now = task.split("\n## Now\n", 1)[-1]
        asked = _REFUND.search(now)
        if asked is not None:
            return Turn(text=_refund_program(asked, request, done), latency=latency)
        if _REFERS_BACK.search(now):
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
    rt: Runtime,
    question: str,
    *,
    run_id: str | None = None,
    latency: float = 0.4,
    refunds: list[dict[str, Any]] | None = None,
) -> RunHandle:
    """Start the planner on ``question`` in ``rt`` (tools taking ``latency`` s); return
    its handle."""
    return rt.start(
        planner(latency, refunds=refunds),
        context={"question": question},
        run_id=run_id,
        mission_limits=LIMITS,
    )


async def run_mission(
    rt: Runtime,
    question: str,
    *,
    run_id: str | None = None,
    latency: float = 0.4,
    session: Session | None = None,
    refunds: list[dict[str, Any]] | None = None,
) -> Step:
    """Run the planner on ``question`` in ``rt`` (tools taking ``latency`` s); return its
    Step. With ``session``, the question continues that conversation (and is stored in it
    when the mission succeeds; a mission that pauses for an approval stores nothing:
    :func:`resume_mission` stores it when it completes)."""
    return await rt.run(
        planner(latency, refunds=refunds),
        context={"question": question},
        run_id=run_id,
        mission_limits=LIMITS,
        session=session,
    )


async def resume_mission(
    rt: Runtime,
    paused: Step,
    decisions: Mapping[str, ptcflow.Decision],
    *,
    latency: float = 0.4,
    session: Session | None = None,
    refunds: list[dict[str, Any]] | None = None,
) -> Step:
    """Continue a mission that paused for an approval with ``decisions``; return its next
    Step. With ``session`` (the conversation it paused in), a mission that completes is
    stored as the conversation's next turn, as :func:`run_mission` stores one: the
    question and what the mission said, after the turns it was given (a mission that
    pauses again, or fails, stores nothing)."""
    agent = planner(latency, refunds=refunds)
    if session is None:
        return await rt.resume(paused, decisions, agent=agent, mission_limits=LIMITS)
    async with session.turn() as turns:
        history, _ = conversation_of(turns)
        run = paused.paused_run
        start = next(iter(run.signals()), None) if run is not None else None
        given = getattr(getattr(start, "data", None), "history", ())
        if tuple(given) != tuple(history):  # checked before anything runs
            raise SessionError(
                f"run {paused.run_id} paused in an earlier state of the conversation "
                f"{session.session_id!r} (turns were added since): ask the question again",
                session.session_id,
            )
        step = await rt.resume(paused, decisions, agent=agent, mission_limits=LIMITS)
        if step.ok:
            await session.append(
                len(turns), step.run_id, step.messages[len(history) :], memory=step.memory
            )
        return step
