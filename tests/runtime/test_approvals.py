"""Tool approvals (issue 25): calls that wait for a person, runs that pause, resume from
their journal, and every bad resume a typed error with nothing performed twice."""

from __future__ import annotations

import datetime
import zlib
from typing import Any

import anyio
import msgspec
import pytest

import ptcflow
from ptcflow import Approve, Deny, ReAct, Runtime, Step, SubAgent, Supply, ToolContext
from ptcflow.core import PausedRun, journal_lines
from ptcflow.runtime import _resume
from ptcflow.signals import (
    APPROVAL_DENIED,
    APPROVAL_EXPIRED,
    APPROVAL_REQUESTED,
    APPROVAL_RESOLVED,
    REQUEST_PAUSED,
    REQUEST_RESUMED,
    TOOL_RESULT,
    SignalBus,
)
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


class Ledger:
    """Counts side effects: every refund actually made."""

    def __init__(self) -> None:
        self.made: list[tuple[str, int]] = []

    def tools(self) -> list[ptcflow.Tool]:
        made = self.made

        @ptcflow.tool(requires_approval=lambda args: args["amount"] > 100)
        def refund(order: str, amount: int) -> str:
            """Refund an order."""
            made.append((order, amount))
            return f"refunded {amount} on {order}"

        @ptcflow.tool(blocking=False)
        def lookup(order: str) -> int:
            """The amount of an order."""
            return {"A": 50, "B": 500, "C": 700}[order]

        return [refund, lookup]


def two_refunds(final: str = "done") -> ScriptedLLM:
    """A model that asks for two refunds at once (A: 50, runs; B: 500, waits), then answers."""
    return ScriptedLLM(
        [
            [
                ScriptedLLM.tool_call("refund", order="A", amount=50),
                ScriptedLLM.tool_call("refund", order="B", amount=500),
            ],
            final,
        ]
    )


async def paused_react(ledger: Ledger, llm: ScriptedLLM, **options: Any) -> Step:
    async with Runtime(llm=llm, tools=ledger.tools(), **options) as rt:
        step = await rt.run(ReAct(), "refund A and B")
    assert step.paused, step
    return step


async def test_a_call_that_needs_approval_waits_while_the_others_run() -> None:
    ledger = Ledger()
    step = await paused_react(ledger, two_refunds())
    assert ledger.made == [("A", 50)]  # the call under the threshold ran
    assert not step.ok and step.error is None and step.reason == "paused"
    (pending,) = step.pending
    assert (pending.tool, pending.arguments, pending.kind) == (
        "refund",
        {"order": "B", "amount": 500},
        "approval",
    )
    assert pending.agent == ("react",) and pending.run_id == step.run_id
    with pytest.raises(ptcflow.RunError, match="is paused"):
        step.unwrap()


async def test_approve_after_a_round_trip_through_json_in_a_new_runtime() -> None:
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm)
    data = msgspec.json.encode(step)
    back = msgspec.json.decode(data, type=Step)
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:  # "after a restart"
        done = await rt.resume(back, {back.pending[0].call_id: Approve()}, agent=ReAct())
    assert done.ok and done.value == "done"
    assert ledger.made == [("A", 50), ("B", 500)]  # each refund once
    assert done.run_id == step.run_id and done.turns == 2 and done.tool_calls == 2
    results = [m for m in done.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ["call_1_0", "call_1_1"]


async def test_deny_gives_the_model_a_tool_error_with_the_reason() -> None:
    ledger = Ledger()
    llm = two_refunds("sorry")
    step = await paused_react(ledger, llm)
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        done = await rt.resume(step, {step.pending[0].call_id: Deny("too large")}, agent=ReAct())
    assert done.ok and done.value == "sorry"
    assert ledger.made == [("A", 50)]
    last = llm.requests[-1].messages
    denied = [m for m in last if m.role == "tool" and m.tool_call_id == "call_1_1"]
    assert APPROVAL_DENIED in denied[0].content and "too large" in denied[0].content


async def test_signals_on_the_bus_correlate_request_decision_and_result() -> None:
    ledger = Ledger()
    llm = two_refunds()
    bus = SignalBus()
    seen: list[Any] = []
    async with bus.subscribe("ai.**") as sub, Runtime(llm=llm, tools=ledger.tools(), bus=bus) as rt:
        step = await rt.run(ReAct(), "refund A and B")
        call = step.pending[0].call_id
        await rt.resume(step, {call: Approve()}, agent=ReAct(), record=True)
        with anyio.move_on_after(1):
            async for signal in sub:
                seen.append(signal)
                if signal.type == "ai.request.completed":
                    break
    types = [(s.type, s.call_id) for s in seen if s.call_id in (call, None)]
    assert (APPROVAL_REQUESTED, call) in types
    assert (REQUEST_PAUSED, None) in types and (REQUEST_RESUMED, None) in types
    order = [t for t, c in types if c == call]
    assert (
        order.index(APPROVAL_REQUESTED) < order.index(APPROVAL_RESOLVED) < order.index(TOOL_RESULT)
    )
    assert len({s.run_id for s in seen}) == 1  # the resumed run keeps its id
    seqs = [s.seq for s in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # one numbering across the pause


async def test_a_deferred_tool_gets_its_result_from_outside() -> None:
    @ptcflow.tool(deferred=True)
    def ship(order: str) -> dict[str, str]:
        """Ship an order (done by the warehouse, not here)."""
        raise AssertionError("a deferred tool has no body here")

    llm = ScriptedLLM([ScriptedLLM.tool_call("ship", order="A"), "shipped"])
    async with Runtime(llm=llm, tools=[ship]) as rt:
        step = await rt.run(ReAct(), "ship A")
        (pending,) = step.pending
        assert (pending.kind, pending.reason) == ("deferred", "deferred tool")
        with pytest.raises(ptcflow.WrongDecisionError, match="Supply"):
            await rt.resume(step, {pending.call_id: Approve()}, agent=ReAct())
        done = await rt.resume(step, {pending.call_id: Supply({"tracking": "Z9"})}, agent=ReAct())
    assert done.ok
    tool_message = next(m for m in llm.requests[-1].messages if m.role == "tool")
    assert "Z9" in tool_message.content


async def test_a_predicate_may_read_the_tool_context_and_give_the_reason() -> None:
    def policy(args: dict[str, Any], ctx: ToolContext) -> str | bool:
        return f"{ctx.tool_name} over budget" if args["amount"] > 10 else False

    @ptcflow.tool(requires_approval=policy)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    llm = ScriptedLLM([ScriptedLLM.tool_call("pay", amount=20), "ok"])
    async with Runtime(llm=llm, tools=[pay]) as rt:
        step = await rt.run(ReAct(), "pay")
    assert step.pending[0].reason == "pay over budget"


async def test_a_predicate_that_raises_fails_the_call_not_the_run() -> None:
    @ptcflow.tool(requires_approval=lambda args: args["missing"])
    def pay(amount: int) -> str:
        """Pay."""
        raise AssertionError("not called")

    llm = ScriptedLLM([ScriptedLLM.tool_call("pay", amount=20), "gave up"])
    async with Runtime(llm=llm, tools=[pay]) as rt:
        step = await rt.run(ReAct(), "pay")
    assert step.ok and not step.paused
    tool_message = next(m for m in llm.requests[-1].messages if m.role == "tool")
    assert "requires_approval predicate" in tool_message.content


# -- bad resumes -------------------------------------------------------------------------------


async def test_decisions_for_unknown_calls_and_wrong_values_are_refused() -> None:
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm)
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        with pytest.raises(ptcflow.UnknownCallError, match="call_1_1"):
            await rt.resume(step, {"nope": Approve()}, agent=ReAct())
        with pytest.raises(ptcflow.WrongDecisionError):
            await rt.resume(step, {step.pending[0].call_id: True}, agent=ReAct())  # type: ignore[dict-item]
        with pytest.raises(ptcflow.NotPausedError):
            await rt.resume(Step(run_id="r", ok=True, value=1), {}, agent=ReAct())
    assert ledger.made == [("A", 50)]


async def test_a_second_decision_on_a_call_is_refused() -> None:
    ledger = Ledger()
    llm = ScriptedLLM(
        [
            [
                ScriptedLLM.tool_call("refund", order="B", amount=500),
                ScriptedLLM.tool_call("refund", order="C", amount=700),
            ],
            "done",
        ]
    )
    step = await paused_react(ledger, llm)
    first, second = (p.call_id for p in step.pending)
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        again = await rt.resume(step, {first: Approve()}, agent=ReAct())
        assert again.paused and [p.call_id for p in again.pending] == [second]
        with pytest.raises(ptcflow.AlreadyDecidedError, match=first):
            await rt.resume(again, {first: Deny()}, agent=ReAct())
        done = await rt.resume(again, {second: Approve()}, agent=ReAct())
    assert done.ok and ledger.made == [("B", 500), ("C", 700)]


async def test_the_same_pause_resumed_twice_performs_each_call_once() -> None:
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm)
    call = step.pending[0].call_id
    outcomes: list[Any] = []
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:

        async def resume() -> None:
            try:
                outcomes.append(await rt.resume(step, {call: Approve()}, agent=ReAct()))
            except ptcflow.PauseInUseError as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(resume)
            tg.start_soon(resume)
        with pytest.raises(ptcflow.PauseInUseError):  # and later, too
            await rt.resume(step, {call: Approve()}, agent=ReAct())
    assert sorted(type(o).__name__ for o in outcomes) == ["PauseInUseError", "Step"]
    assert ledger.made == [("A", 50), ("B", 500)]


async def test_a_tampered_pause_is_refused() -> None:
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm)
    paused = step.paused_run
    assert paused is not None
    call = step.pending[0].call_id
    lines = journal_lines(paused.journal, paused.run_id)
    changed = [line.replace(b'"amount":500', b'"amount":5') for line in lines]
    assert changed != lines
    forged_journal = msgspec.structs.replace(paused, journal=zlib.compress(b"\n".join(changed)))
    shown = msgspec.json.encode(step).replace(b'"amount":500', b'"amount":5')
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        with pytest.raises(ptcflow.TamperedPauseError, match="changed"):
            await rt.resume(forged_journal, {call: Approve()}, agent=ReAct())
        with pytest.raises(ptcflow.TamperedPauseError, match="pending"):
            await rt.resume(msgspec.json.decode(shown, type=Step), {call: Approve()}, agent=ReAct())
        bomb = msgspec.structs.replace(paused, journal=b"not zlib").signed(None)
        with pytest.raises(ptcflow.TamperedPauseError, match="journal"):
            await rt.resume(bomb, {call: Approve()}, agent=ReAct())
    assert ledger.made == [("A", 50)]


async def test_with_a_pause_key_only_signed_pauses_resume() -> None:
    key = b"k" * 32
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm, pause_key=key)
    assert step.paused_run is not None and step.paused_run.digest.startswith("hmac-sha256:")
    unsigned = step.paused_run.signed(None)  # anyone can compute a plain digest
    async with Runtime(llm=llm, tools=ledger.tools(), pause_key=b"x" * 32) as rt:
        with pytest.raises(ptcflow.TamperedPauseError):
            await rt.resume(step, {step.pending[0].call_id: Approve()}, agent=ReAct())
    async with Runtime(llm=llm, tools=ledger.tools(), pause_key=key) as rt:
        with pytest.raises(ptcflow.TamperedPauseError, match="not signed"):
            await rt.resume(unsigned, {step.pending[0].call_id: Approve()}, agent=ReAct())
        done = await rt.resume(step, {step.pending[0].call_id: Approve()}, agent=ReAct())
    assert done.ok and ledger.made == [("A", 50), ("B", 500)]
    with pytest.raises(ptcflow.UsageError, match="16 bytes"):
        Runtime(pause_key=b"short")


async def test_a_pause_checked_against_the_agent_it_belongs_to() -> None:
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm)
    call = step.pending[0].call_id
    async with Runtime(llm=llm, tools=ledger.tools()[:1]) as rt:
        with pytest.raises(ptcflow.PauseMismatchError, match="tools"):
            await rt.resume(step, {call: Approve()}, agent=ReAct())
    paused = step.paused_run
    assert paused is not None
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        with pytest.raises(ptcflow.PauseMismatchError, match="named"):
            await rt.resume(step, {call: Approve()}, agent=ReAct(name="other"))
        with pytest.raises(ptcflow.PauseMismatchError, match="version"):
            await rt.resume(
                msgspec.structs.replace(paused, version=99),
                {call: Approve()},
                agent=ReAct(),
            )
    assert ledger.made == [("A", 50)]


# -- the journal is the state --------------------------------------------------------------------


async def test_a_pause_rebuilt_from_the_journal_alone_resumes(tmp_path: Any) -> None:
    ledger = Ledger()
    llm = two_refunds()
    path = tmp_path / "run.jsonl"
    bus = SignalBus()
    async with (
        ptcflow.signals.record_journal(bus, path),
        Runtime(llm=llm, tools=ledger.tools(), bus=bus) as rt,
    ):
        step = await rt.run(ReAct(), "refund A and B")
    signals = ptcflow.signals.read_journal(path)
    paused = PausedRun.from_journal(signals)
    assert paused.run_id == step.run_id
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        done = await rt.resume(paused, {step.pending[0].call_id: Approve()}, agent=ReAct())
    assert done.ok and ledger.made == [("A", 50), ("B", 500)]
    cut = [s for s in signals if s.type != REQUEST_PAUSED]  # cut in the middle of the pause
    with pytest.raises(ptcflow.NotPausedError, match="cut"):
        PausedRun.from_journal(cut)
    with pytest.raises(ptcflow.PauseMismatchError, match=r"ai\.request\.started"):
        PausedRun.from_journal(
            [s for s in signals if s.type != "ai.request.started"], run_id=step.run_id
        )


async def test_time_waiting_does_not_count_but_time_running_does() -> None:
    def slow_answer() -> ScriptedLLM:
        return ScriptedLLM(
            [
                [
                    ScriptedLLM.tool_call("refund", order="A", amount=50),
                    ScriptedLLM.tool_call("refund", order="B", amount=500),
                ],
                ptcflow.testing.Turn(text="done", latency=0.2),
            ]
        )

    ledger = Ledger()
    llm = slow_answer()
    step = await paused_react(ledger, llm)
    assert step.paused_run is not None
    call = step.pending[0].call_id
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        # A run that had used up 9.95 s of its 10 s before it paused has 50 ms left: its
        # 200 ms answer comes too late.
        spent = msgspec.structs.replace(step.paused_run, elapsed_ms=9_950.0).signed(None)
        late = await rt.resume(spent, {call: Approve()}, agent=ReAct(), timeout=10.0)
    assert not late.ok and late.error is not None and late.error.type == "timeout"
    llm = slow_answer()
    fresh = await paused_react(Ledger(), llm)
    async with Runtime(llm=llm, tools=Ledger().tools()) as rt:
        # However long ago it paused, the run has its 10 s minus the little it ran.
        done = await rt.resume(
            fresh, {fresh.pending[0].call_id: Approve()}, agent=ReAct(), timeout=10.0
        )
    assert done.ok


async def test_an_approval_timeout_ends_the_wait_with_a_typed_error(monkeypatch: Any) -> None:
    @ptcflow.tool(requires_approval=True, approval_timeout=60)
    def wipe(disk: str) -> str:
        """Wipe a disk."""
        raise AssertionError("never approved")

    llm = ScriptedLLM([ScriptedLLM.tool_call("wipe", disk="d1"), "it expired"])
    async with Runtime(llm=llm, tools=[wipe]) as rt:
        step = await rt.run(ReAct(), "wipe d1")
        (pending,) = step.pending
        assert pending.expires_at is not None
        later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=2)
        monkeypatch.setattr(_resume, "utcnow", lambda: later)
        done = await rt.resume(step, {}, agent=ReAct())
    assert done.ok
    tool_message = next(m for m in llm.requests[-1].messages if m.role == "tool")
    assert APPROVAL_EXPIRED in tool_message.content
    with pytest.raises(ptcflow.UsageError, match="approval_timeout"):
        ptcflow.tool(lambda x: x, approval_timeout=0)


# -- programs ------------------------------------------------------------------------------------------

PROGRAM = """```clojure
(let [amounts (pmap (fn [o] (call "lookup" {:order o})) ["A" "B" "C"])
      done (pmap (fn [[o a]] (call "refund" {:order o :amount a}))
                 (map vector ["A" "B" "C"] amounts))]
  (return {:refunds done}))
```"""


async def test_a_program_suspends_at_the_calls_and_re_runs_from_its_record() -> None:
    ledger = Ledger()
    looked: list[str] = []
    tools = ledger.tools()

    @ptcflow.tool(name="lookup", blocking=False)
    def counted_lookup(order: str) -> int:
        """The amount of an order."""
        looked.append(order)
        return {"A": 50, "B": 500, "C": 700}[order]

    tools = [tools[0], counted_lookup]
    llm = ScriptedLLM([PROGRAM])
    agent = SubAgent(
        prompt="Refund the orders", signature="() -> {refunds [:string]}", tools=tools, llm=llm
    )
    async with Runtime() as rt:
        step = await rt.run(agent)
    assert step.paused
    assert sorted(p.arguments["order"] for p in step.pending) == ["B", "C"]
    assert all("/tool/" in p.call_id for p in step.pending)
    assert ledger.made == [("A", 50)] and sorted(looked) == ["A", "B", "C"]
    back = msgspec.json.decode(msgspec.json.encode(step), type=Step)
    decisions = {
        p.call_id: Approve() if p.arguments["order"] == "B" else Deny("no") for p in back.pending
    }
    async with Runtime() as rt:
        done = await rt.resume(back, decisions, agent=agent)
    assert sorted(looked) == ["A", "B", "C"]  # answered from the record: not looked up again
    assert sorted(ledger.made) == [("A", 50), ("B", 500)]
    assert not done.paused


async def test_a_run_cancelled_while_a_call_waits_answers_that_call_and_does_not_pause() -> None:
    """A call waits while another still runs; the run is cancelled: it ends cancelled (not
    paused), and the waiting call gets its one terminal signal, ``cancelled``."""
    release = anyio.Event()
    asked = anyio.Event()

    @ptcflow.tool
    async def slow(order: str) -> str:
        """Look slowly."""
        await release.wait()
        return order

    @ptcflow.tool(requires_approval=True)
    def wipe(disk: str) -> str:
        """Wipe a disk."""
        raise AssertionError("never approved")

    llm = ScriptedLLM(
        [[ScriptedLLM.tool_call("slow", order="A"), ScriptedLLM.tool_call("wipe", disk="d")], "x"]
    )
    bus = SignalBus()
    async with (
        bus.subscribe("ai.approval.**") as sub,
        Runtime(llm=llm, tools=[slow, wipe], bus=bus) as rt,
    ):
        handle = rt.start(ReAct(), "go", record=True)
        async for _ in sub:  # the wipe waits; slow still runs
            asked.set()
            break
        handle.cancel("stop")
        step = await handle.wait()
    assert asked.is_set()
    assert not step.paused and step.error is not None and step.error.type == "cancelled"
    wipe_results = [s for s in step.signals if s.type == TOOL_RESULT and s.data.tool_name == "wipe"]
    assert len(wipe_results) == 1 and wipe_results[0].data.result.error.type == "cancelled"
    assert REQUEST_PAUSED not in {s.type for s in step.signals}


async def test_a_usage_budget_goes_on_from_what_the_run_used_before_it_paused() -> None:
    ledger = Ledger()
    llm = two_refunds()
    step = await paused_react(ledger, llm)  # one model request, one tool call so far
    call = step.pending[0].call_id
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        over = await rt.resume(
            step,
            {call: Approve()},
            agent=ReAct(),
            usage_limits=ptcflow.UsageLimits(max_tool_calls=1),
        )
    assert not over.ok and over.error is not None
    assert over.error.type == "usage_limit_exceeded"
    assert ledger.made == [("A", 50)]


async def test_a_call_with_invalid_arguments_fails_before_anyone_is_asked() -> None:
    ledger = Ledger()
    llm = ScriptedLLM([ScriptedLLM.tool_call("refund", order="B", amount="lots"), "sorry"])
    async with Runtime(llm=llm, tools=ledger.tools()) as rt:
        step = await rt.run(ReAct(), "refund B")
    assert step.ok and not step.paused and ledger.made == []
    tool_message = next(m for m in llm.requests[-1].messages if m.role == "tool")
    assert "invalid arguments for tool 'refund'" in tool_message.content
