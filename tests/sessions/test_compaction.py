"""Compaction: past a limit, the history sent to the model shrinks (the last messages kept,
the older ones dropped or summarized by a journaled model call); what is stored stays
whole, and a summary is reused by the next runs of a session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ptcflow import ConfigError, Session, SubAgent, UsageError
from ptcflow.runtime import RunOptions, Runtime, Telemetry
from ptcflow.sessions import (
    Compaction,
    SQLiteStore,
    Summary,
    estimate_tokens,
    history_digest,
    plan_compaction,
)
from ptcflow.signals import (
    LLM_RESPONSE,
    LLMResponse,
    LLMResponseData,
    Message,
    Ok,
    Signal,
    ToolCall,
)
from ptcflow.strategies import Outcome, ReAct, RunInfo, replay
from ptcflow.testing import Fault, ScriptedLLM, Turn

pytestmark = pytest.mark.anyio


def _chat(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out += [Message(role="user", content=f"q{i}"), Message(role="assistant", content=f"a{i}")]
    return out


def _contents(messages: Any) -> list[str]:
    return [m.content for m in messages]


# -- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({}, "give max_messages or max_tokens"),
        ({"max_messages": 0}, "max_messages must be a positive integer"),
        ({"max_messages": -3}, "max_messages must be a positive integer"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer"),
        ({"max_messages": 1.5}, "max_messages must be a positive integer"),
        ({"max_messages": True}, "max_messages must be a positive integer"),
        ({"max_messages": 10, "keep_last": 10}, "keep_last (10) must be below max_messages (10)"),
        ({"max_messages": 10, "keep_last": 40}, "keep_last (40) must be below max_messages (10)"),
        ({"max_messages": 10, "keep_last": -1}, "keep_last must be an integer >= 1"),
        ({"max_messages": 10, "keep_last": 0}, "it needs summarize=True"),
        ({"max_messages": 1}, "keep_last (1) must be below max_messages (1)"),
        ({"max_messages": 10, "summary_model": "m"}, "only used with summarize=True"),
        ({"max_messages": 10, "summarize": True, "summary_model": ""}, "non-empty string"),
        ({"max_messages": 10, "summarize": "yes"}, "summarize must be True or False"),
    ],
)
def test_bad_settings_fail_when_built_naming_the_problem(
    kwargs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ConfigError, match=r"^Compaction: ") as info:
        Compaction(**kwargs)
    assert needle in str(info.value)


def test_keep_last_defaults_to_half_the_limit() -> None:
    assert Compaction(max_messages=40).keep_last == 20
    assert Compaction(max_tokens=2000).keep_last == 10
    assert Compaction(max_messages=1, summarize=True).keep_last == 0
    assert Compaction(max_messages=5, keep_last=0, summarize=True).keep_last == 0


def test_a_compaction_option_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(UsageError, match=r"compaction must be a ptcflow\.sessions\.Compaction"):
        RunOptions(compaction={"max_messages": 3})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"summary must be a ptcflow\.sessions\.Summary"):
        RunOptions(summary="earlier")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"compaction must be a ptcflow\.sessions\.Compaction"):
        Session("s", compaction=3)  # type: ignore[arg-type]


async def test_a_strategy_without_a_conversation_refuses_compaction() -> None:
    class Plain:
        name = "plain"

        def init(self, run: RunInfo) -> tuple[int, list[Any]]:
            return 0, []

        def handle(self, state: int, signal: Signal) -> tuple[int, list[Any]]:
            return state, []

        def outcome(self, state: int) -> Outcome:
            return Outcome(result=Ok(payload=1))

        def snapshot(self, state: int) -> int:
            return state

    async with Runtime(llm=ScriptedLLM([])) as rt:
        with pytest.raises(UsageError, match="compaction= work with ReAct"):
            await rt.run(Plain(), "x", compaction=Compaction(max_messages=4))


# -- the plan: Hypothesis over random conversations ---------------------------------------

_TEXT = st.text(alphabet="abcdefgh xyz", max_size=30)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Valid conversations: turns of a question, rounds of tool calls and their results,
    an answer; now and then a system message between turns."""
    out: list[Message] = []
    n = 0
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 5)) == 0:
            out.append(Message(role="system", content="note " + draw(_TEXT)))
        out.append(Message(role="user", content=draw(_TEXT)))
        for _ in range(draw(st.integers(0, 2))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n += 1
                calls.append(ToolCall(id=f"c{n}", name="add", input={"x": n}))
            out.append(Message(role="assistant", content=draw(_TEXT), tool_calls=tuple(calls)))
            for call in calls:
                out.append(
                    Message(role="tool", content=draw(_TEXT), tool_call_id=call.id, name="add")
                )
        if draw(st.booleans()):
            out.append(Message(role="assistant", content=draw(_TEXT)))
    return out


@st.composite
def compactions(draw: st.DrawFn) -> Compaction:
    summarize = draw(st.booleans())
    max_messages = draw(st.none() | st.integers(2, 30))
    max_tokens = (
        draw(st.integers(8, 400)) if max_messages is None else draw(st.none() | st.integers(8, 400))
    )
    ceiling = (max_messages - 1) if max_messages is not None else 20
    keep_last = draw(st.integers(0 if summarize else 1, ceiling))
    return Compaction(
        max_messages=max_messages, max_tokens=max_tokens, keep_last=keep_last, summarize=summarize
    )


def _check_sent(sent: tuple[Message, ...], history: list[Message]) -> None:
    """Every tool result sent has its call sent before it; the history's messages keep
    their order; its system messages are all sent."""
    called: set[str] = set()
    for m in sent:
        if m.role == "tool":
            assert m.tool_call_id in called, f"result {m.tool_call_id} sent without its call"
        called.update(c.id for c in m.tool_calls)
    where = {id(m): i for i, m in enumerate(history)}  # the very objects: sent, not copied
    positions = [where[id(m)] for m in sent if id(m) in where]
    assert positions == sorted(positions)
    systems = [m for m in history if m.role == "system"]
    assert systems == [m for m in sent if id(m) in where and m.role == "system"]


@settings(max_examples=300, deadline=None)
@given(conversations(), compactions())
def test_a_plan_never_splits_a_call_from_its_result(
    history: list[Message], compaction: Compaction
) -> None:
    plan = plan_compaction(history, compaction)
    over = (compaction.max_messages is not None and len(history) > compaction.max_messages) or (
        compaction.max_tokens is not None and estimate_tokens(history) > compaction.max_tokens
    )
    if plan is None:
        assert not over
        return
    assert over
    assert plan.kept == tuple(history[plan.start :])  # a suffix, in order
    assert compaction.keep_last is not None and len(plan.kept) <= compaction.keep_last
    if compaction.max_tokens is not None:
        assert estimate_tokens(plan.kept) <= compaction.max_tokens
    assert not plan.kept or plan.kept[0].role != "tool"
    assert plan.needs_summary == (compaction.summarize and plan.start > 0)
    _check_sent(plan.pinned + plan.kept, history)


@settings(max_examples=200, deadline=None)
@given(conversations(), compactions())
def test_what_react_sends_keeps_the_system_prompt_and_every_pair(
    history: list[Message], compaction: Compaction
) -> None:
    react = ReAct(system_prompt="You are terse.")
    state, directives = react.init(
        RunInfo(run_id="r", input="next?", history=tuple(history), compaction=compaction)
    )
    if state.status == "compacting":  # the summary first, then the run's own call
        (ask,) = directives
        assert ask.id == "r/compact" and ask.metadata["operation"] == "compaction"
        answer = Signal.create(
            LLM_RESPONSE,
            LLMResponseData(result=Ok(payload=LLMResponse(text="S"))),
            run_id="r",
            call_id="r/compact",
            seq=2,
        )
        state, directives = react.handle(state, answer)
        assert state.summary is not None and state.summary.text == "S"
    (call,) = directives
    sent = call.messages  # type: ignore[attr-defined]
    assert sent[0] == Message(role="system", content="You are terse.")
    assert sent[-1] == Message(role="user", content="next?")
    _check_sent(tuple(sent[1:-1]), history)
    assert react.conversation(state) == (*history, Message(role="user", content="next?"))


def test_a_summary_is_reused_while_it_covers_the_start_and_extended_past_the_limit() -> None:
    compaction = Compaction(max_messages=6, keep_last=2, summarize=True)
    history = _chat(4)  # 8 messages
    first = plan_compaction(history, compaction)
    assert first is not None and first.needs_summary and first.start == 6
    summary = Summary(text="S1", covers=6, digest=first.digest)
    # two more messages: 4 after the summary, under the limit: reused, no call
    longer = [*history, *_chat(5)[8:]]
    reused = plan_compaction(longer, compaction, summary)
    assert reused is not None and not reused.needs_summary and reused.summary == summary
    assert reused.kept == tuple(longer[6:])
    # past the limit again: the call folds the summary and the messages that fell out
    longest = _chat(8)
    extended = plan_compaction(longest, compaction, summary)
    assert extended is not None and extended.needs_summary and extended.base == 6
    transcript = extended.request[1].content
    assert "S1" in transcript and "q0" not in transcript and "q3" in transcript
    # a summary of other messages (a forked or edited history) is not used
    other = Summary(text="S?", covers=6, digest=history_digest(_chat(3)[::-1]))
    fresh = plan_compaction(longest, compaction, other)
    assert fresh is not None and fresh.base == 0 and "q0" in fresh.request[1].content


# -- runs ---------------------------------------------------------------------------------


async def test_keep_last_sends_the_last_messages_and_returns_the_whole_conversation() -> None:
    llm = ScriptedLLM(["ok"])
    history = _chat(5)
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            ReAct(system_prompt="sys"),
            "next",
            history=history,
            compaction=Compaction(max_messages=6, keep_last=4),
        )
    assert step.ok and llm.calls == 1
    assert _contents(llm.requests[0].messages) == ["sys", "q3", "a3", "q4", "a4", "next"]
    assert step.messages == (*history, Message(role="user", content="next"),
                             Message(role="assistant", content="ok"))  # fmt: skip
    assert step.summary is None


async def test_under_the_limit_nothing_changes() -> None:
    llm = ScriptedLLM(["ok"])
    async with Runtime(llm=llm) as rt:
        await rt.run(ReAct(), "next", history=_chat(2), compaction=Compaction(max_messages=6))
    assert _contents(llm.requests[0].messages) == ["q0", "a0", "q1", "a1", "next"]


async def test_summarize_makes_a_journaled_model_call_that_replay_reproduces() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    llm = ScriptedLLM(["The user asked q0..q2.", "answer"])
    history = _chat(5)
    react = ReAct(system_prompt="sys")
    compaction = Compaction(max_messages=6, keep_last=4, summarize=True)
    async with Runtime(llm=llm, telemetry=Telemetry(tracer_provider=provider)) as rt:
        step = await rt.run(react, "next", history=history, compaction=compaction, record=True)
    assert step.ok and step.value == "answer" and step.turns == 2
    summarize, ask = llm.requests
    assert summarize.messages[0].role == "system" and "summarize" in summarize.messages[0].content
    assert "q0" in summarize.messages[1].content and "q3" not in summarize.messages[1].content
    assert _contents(ask.messages)[0] == "sys"
    assert ask.messages[1].content.startswith("[Summary of the first 6 messages")
    assert ask.messages[1].content.endswith("The user asked q0..q2.")
    assert _contents(ask.messages)[2:] == ["q3", "a3", "q4", "a4", "next"]
    assert step.summary == Summary(
        text="The user asked q0..q2.", covers=6, digest=history_digest(history[:6])
    )
    assert step.messages[: len(history)] == tuple(history)
    # the summarizing call is a directive: journaled, with usage, and traced
    responses = [s for s in step.signals if s.type == LLM_RESPONSE]
    assert [s.call_id for s in responses] == [f"{step.run_id}/compact", f"{step.run_id}/llm/1"]
    assert step.usage.input_tokens > ask.messages.__len__()  # both calls counted
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(chats) == 2
    assert any(
        (s.attributes or {}).get("ptcflow.directive.metadata.operation") == "compaction"
        for s in chats
    )
    # replay: the same state from the journal, with no model
    state = replay(react, step.signals)
    assert state.status == "completed" and state.summary == step.summary
    assert react.conversation(state) == step.messages


async def test_a_failed_summary_fails_the_run_and_a_session_keeps_what_it_had() -> None:
    llm = ScriptedLLM(["hi", "hello", Turn(fault=Fault(kind="auth"))])
    session = Session("s", compaction=Compaction(max_messages=3, keep_last=2, summarize=True))
    async with Runtime(llm=llm) as rt:
        for q in ("a", "b"):
            assert (await rt.run(ReAct(), q, session=session)).ok
        stored = await session.turns()
        step = await rt.run(ReAct(), "c", session=session)
    assert not step.ok and step.reason == "llm_error" and step.error is not None
    assert llm.requests[-1].messages[0].content.startswith("You summarize")
    assert await session.turns() == stored
    assert step.messages == tuple(m for t in stored for m in t.messages)


async def test_a_session_stores_the_summary_and_reuses_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "chats.db")
    compaction = Compaction(max_messages=6, keep_last=2, summarize=True)
    replies = iter(range(100))

    def reply(request: Any) -> str:  # a summarizing call answers "summary n", others "n"
        n = next(replies)
        system = request.messages[0].content if request.messages else ""
        return f"summary {n}" if system.startswith("You summarize") else f"answer {n}"

    llm = ScriptedLLM(reply)
    try:
        session = Session("chat", store=store, compaction=compaction)
        async with Runtime(llm=llm) as rt:
            steps = [await rt.run(ReAct(), f"q{i}", session=session) for i in range(8)]
        assert all(s.ok for s in steps)
        # the store holds every message, and the summaries with the turns that made them
        everything = await session.messages()
        assert len(everything) == 16
        assert [m.content for m in everything if m.role == "user"] == [f"q{i}" for i in range(8)]
        turns = await session.turns()
        made = [t.index for t in turns if t.summary is not None]
        # turn 4's history (8 messages) passes the limit: a summary of 6, 2 kept; turns 5
        # and 6 send it with the 4 and 6 messages after it; turn 7's 8 pass it again
        assert made == [4, 7]
        kinds = [
            "S" if r.messages[0].content.startswith("You summarize") else "A" for r in llm.requests
        ]
        assert "".join(kinds) == "AAAA" + "SA" + "A" + "A" + "SA"
        assert [len(r.messages) for r in llm.requests if not r.messages[0].content.startswith("You")] == [
            1, 3, 5, 7, 4, 6, 8, 4,
        ]  # fmt: skip
        # the second summary extends the first (its text in the request), not the whole chat
        second = [r for r in llm.requests if r.messages[0].content.startswith("You summarize")][1]
        assert "summary 4" in second.messages[1].content
        assert "q0" not in second.messages[1].content and "q5" in second.messages[1].content
        assert turns[7].summary is not None and turns[7].summary.covers == 12
        assert await session.summary() == turns[7].summary
        assert steps[-1].summary == turns[7].summary
        # reloading from the file gives the same summary back
        again = SQLiteStore(tmp_path / "chats.db")
        try:
            assert (await again.load("chat"))[7].summary == turns[7].summary
        finally:
            again.close()
    finally:
        store.close()


async def test_a_summary_given_with_the_history_is_reused_without_a_call() -> None:
    history = _chat(4)
    compaction = Compaction(max_messages=6, keep_last=2, summarize=True)
    summary = Summary(text="Earlier: q0 to q2.", covers=6, digest=history_digest(history[:6]))
    llm = ScriptedLLM(["ok"])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            ReAct(), "next", history=history, compaction=compaction, summary=summary
        )
    assert llm.calls == 1 and step.summary == summary
    assert llm.requests[0].messages[0].content.endswith("Earlier: q0 to q2.")
    assert _contents(llm.requests[0].messages)[1:] == ["q3", "a3", "next"]


async def test_the_summary_model_is_asked_for_the_summary() -> None:
    llm = ScriptedLLM(["S", "ok"])
    compaction = Compaction(max_messages=2, keep_last=1, summarize=True, summary_model="small")
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            ReAct(model="big"), "next", history=_chat(2), compaction=compaction, record=True
        )
    assert step.ok
    assert [r.model for r in llm.requests] == ["small", "big"]


async def test_the_json_mode_compacts_its_history() -> None:
    agent = SubAgent(prompt="{{q}}", signature="(q :string) -> :int", output="json")
    llm = ScriptedLLM(["S", "7"])
    compaction = Compaction(max_messages=4, keep_last=2, summarize=True)
    async with Runtime(llm=llm) as rt:
        step = await rt.run(agent, context={"q": "next"}, history=_chat(3), compaction=compaction)
    assert step.ok and step.value == 7, step
    summarize, ask = llm.requests
    assert "q0" in summarize.messages[1].content
    assert ask.messages[1].content.startswith("[Summary of the first 4 messages")
    assert _contents(ask.messages)[2:4] == ["q2", "a2"]
    assert step.messages[:6] == tuple(_chat(3))
    assert step.summary is not None and step.summary.covers == 4
    assert step.trace is not None and len(step.trace.turns) == 1  # the summary is no turn


async def test_a_ptc_subagent_shows_the_summary_and_the_kept_turns_in_its_task() -> None:
    agent = SubAgent(prompt="{{q}}", signature="(q :string) -> :int")

    def reply(request: Any) -> str:
        if request.messages[0].content.startswith("You summarize"):
            return "The user counted from q0 to q2. " + "x" * 500  # longer than a line
        return "(return 7)"

    llm = ScriptedLLM(reply)
    compaction = Compaction(max_messages=6, keep_last=2, summarize=True)
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            agent, context={"q": "next"}, history=_chat(4), compaction=compaction, record=True
        )
        assert step.ok and step.value == 7, step
        summarize, ask = llm.requests
        assert "q0" in summarize.messages[1].content
        task = ask.messages[1].content
        assert "(a summary of the first 6 messages) The user counted" in task
        assert "x" * 500 in task  # whole, not cut to a line
        assert "user: q3\nassistant: a3\n\n## Now\nnext" in task and "user: q2" not in task
        assert step.summary is not None and step.summary.covers == 6
        assert step.messages[:8] == tuple(_chat(4))
        assert step.trace is not None and len(step.trace.turns) == 1
        assert step.usage.input_tokens > 0 and step.turns == 2
        # the next run reuses the summary: no summarizing call
        again = await rt.run(
            agent,
            context={"q": "again"},
            history=step.messages,
            compaction=compaction,
            summary=step.summary,
        )
    assert again.ok and llm.calls == 3 and again.summary == step.summary
    assert "(a summary of the first 6 messages)" in llm.requests[-1].messages[1].content


async def test_keep_last_alone_trims_a_ptc_subagent_s_earlier_lines() -> None:
    agent = SubAgent(prompt="{{q}}", signature="(q :string) -> :int")
    llm = ScriptedLLM(["(return 1)"])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            agent,
            context={"q": "next"},
            history=_chat(5),
            compaction=Compaction(max_messages=4, keep_last=2),
        )
    assert step.ok and step.summary is None
    task = llm.requests[0].messages[1].content
    assert "user: q4\nassistant: a4" in task and "q3" not in task


async def test_a_turn_with_a_summary_round_trips_and_older_rows_still_read(
    tmp_path: Path,
) -> None:
    from ptcflow.sessions import CorruptTurnError, Turn

    store = SQLiteStore(tmp_path / "s.db")
    try:
        summary = Summary(text="S", covers=2, digest="d")
        plain = Turn(index=0, run_id="r0", messages=tuple(_chat(1)))
        with_summary = Turn(index=1, run_id="r1", messages=tuple(_chat(1)), summary=summary)
        await store.append("s", plain)
        await store.append("s", with_summary)
        assert await store.load("s") == (plain, with_summary)
        session = Session("s", store=store)
        assert await session.summary() == summary
        fork = await session.fork("t", at_turn=1)
        assert await fork.summary() == summary
        assert await (await session.fork("u", at_turn=0)).summary() is None
    finally:
        store.close()
    from ptcflow.sessions._store import decode_turn

    with pytest.raises(CorruptTurnError, match="stored turn 3 cannot be read"):
        decode_turn("s", 3, "r", b'{"messages": [], "summary": {"text": 1}}')


async def test_an_agent_run_on_a_session_uses_the_session_s_compaction() -> None:
    agent = SubAgent(prompt="{{q}}", signature="(q :string) -> :int", output="json")

    def reply(request: Any) -> str:
        return "S" if request.messages[0].content.startswith("You summarize") else "1"

    llm = ScriptedLLM(reply)
    session = Session("s", compaction=Compaction(max_messages=3, keep_last=2, summarize=True))
    for i in range(3):
        step = await agent.run(llm=llm, context={"q": f"q{i}"}, session=session)
        assert step.ok, step
    assert llm.calls == 4  # turn 2's history (4 messages) passed the limit: one summary
    assert (await session.turns())[2].summary == step.summary
    assert step.summary is not None and step.summary.covers == 2


async def test_a_subagent_session_keeps_memory_and_summary_in_one_turn_and_replays(
    tmp_path: Path,
) -> None:
    import msgspec

    from ptcflow.runtime import replay_session
    from ptcflow.signals import ProgramMemory

    agent = SubAgent(prompt="Remember {{q}}", signature="(q :string) -> :int")

    def reply(request: Any) -> str:
        if request.messages[0].content.startswith("You summarize"):
            return "The user asked for a total."
        if "Kept in memory" in request.messages[-1].content:
            return "(return (* total 2))"
        return "(def total 42)\n(return total)"

    llm = ScriptedLLM(reply)
    store = SQLiteStore(tmp_path / "chats.db")
    try:
        compaction = Compaction(max_messages=3, keep_last=2, summarize=True)
        session = Session("memo", store=store, compaction=compaction)
        async with Runtime(llm=llm) as rt:
            steps = [
                await rt.run(agent, context={"q": q}, session=session)
                for q in ("the total", "it doubled", "again")
            ]
        assert [s.value for s in steps] == [42, 84, 84], steps
        task = llm.requests[-1].messages[1].content
        assert "(a summary of the first 2 messages) The user asked for a total." in task
        assert "Kept in memory by earlier programs" in task and "total" in task
        again = SQLiteStore(tmp_path / "chats.db")  # read back from the file
        try:
            turns = await again.load("memo", journals=True)
        finally:
            again.close()
        last = turns[2]
        assert last.memory == ProgramMemory(values={"total": "42"})
        assert last.summary == steps[2].summary and last.summary is not None
        assert last.summary.covers == 2 and last.journal
        assert [t.summary for t in turns[:2]] == [None, None]
        replayed = await replay_session(session, agent)
        live = [
            msgspec.structs.replace(s, duration_ms=0.0, signals=(), cost_usd=None) for s in steps
        ]
        assert list(replayed) == live
    finally:
        store.close()
