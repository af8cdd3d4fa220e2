"""The viewer on runs that pause for a person and resume (issue 25): a paused run is
``paused`` with its waiting calls (not failed, not running), each waiting call shows why it
waits and then its decision, and a resumed run goes on in the same row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ptcflow import Approve, Deny, Supply
from ptcflow.cli import main
from ptcflow.signals import read_journal
from ptcflow.trace import (
    HIDDEN,
    STATUSES,
    FollowPrinter,
    LiveMission,
    Mission,
    format_mission,
    format_summary,
    otlp_request,
    page_html,
    summarize,
)

from .approvals import journal_nested, journal_program, journal_react

pytestmark = pytest.mark.anyio


def spans_of(mission: Mission, **options: Any) -> dict[str, dict[str, Any]]:
    """The exported spans by name and call id, with their attributes as a dict."""
    body = otlp_request(mission, **options)
    out = {}
    for span in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
        key = attrs.get("gen_ai.tool.call.id") or span["name"]
        events = {
            e["name"]: {a["key"]: next(iter(a["value"].values())) for a in e["attributes"]}
            for e in span.get("events", [])
        }
        out[key] = {"attrs": attrs, "events": events, "status": span.get("status")}
    return out


async def test_a_paused_run_shows_as_paused_with_its_waiting_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    step = await journal_react(path)
    (pending,) = step.pending
    mission = Mission.from_journal(path)
    run = mission.nodes["refunds"]
    assert "paused" in STATUSES and "waiting" in STATUSES
    assert (run.status, run.error, run.detail["reason"]) == ("paused", None, "paused")
    assert run.end_ms is not None and mission.ended  # it stopped: nothing runs
    assert [p["call_id"] for p in run.detail["pending"]] == [pending.call_id]
    assert run.detail["pending"][0]["arguments"] == {"order": "B", "amount": 500}
    assert (run.input_tokens, run.output_tokens) == (
        step.usage.input_tokens,
        step.usage.output_tokens,
    )
    call = mission.nodes[f"refunds|{pending.call_id}"]
    assert call.status == "waiting" and call.end_ms == run.end_ms
    assert call.detail["approval"]["reason"] == "requires approval"
    assert "decision" not in call.detail["approval"]
    turn = mission.nodes[call.parent or ""]
    assert turn.kind == "turn" and turn.status == "waiting"
    assert mission.nodes["refunds|call_1_0"].status == "ok"  # the call that needed none ran

    text = format_mission(mission)
    assert "│     ‖ waits for approval: requires approval" in text
    assert "paused: 1 call waits for a decision | 1 turns" in text
    assert f'  ‖ {pending.call_id} refund({{:order "B", :amount 500}}): requires approval' in text
    assert "failed" not in text and "running" not in text
    (row,) = summarize(mission)
    assert (row.runs, row.ok, row.failed, row.running, row.paused) == (1, 0, 0, 0, 1)
    table = format_summary([row]).splitlines()
    assert table[0].split()[:5] == ["agent", "runs", "ok", "failed", "paused"]
    assert table[1].split()[:5] == ["react", "1", "0", "0", "1"]
    assert main(["trace", "show", str(path)]) == 1  # not a success (yet)
    assert "paused: 1 call waits" in capsys.readouterr().out

    spans = spans_of(mission)
    agent = spans["invoke_agent react"]
    assert agent["attrs"]["ptcflow.run.paused"] is True
    assert agent["attrs"]["ptcflow.run.pending_calls"] == "1"  # OTLP JSON: int64 as a string
    assert agent["status"] is None and "error.type" not in agent["attrs"]
    waiting = spans[pending.call_id]
    assert waiting["attrs"]["ptcflow.approval.status"] == "pending"
    requested = waiting["events"]["ptcflow.approval.requested"]
    assert requested["ptcflow.approval.reason"] == "requires approval"
    assert "gen_ai.tool.call.arguments" not in requested
    with_content = spans_of(mission, capture_content=True)[pending.call_id]
    assert json.loads(
        with_content["events"]["ptcflow.approval.requested"]["gen_ai.tool.call.arguments"]
    ) == {"order": "B", "amount": 500}

    page = page_html(mission)
    assert '"st":"paused"' in page and '"st":"waiting"' in page


async def test_a_resumed_run_goes_on_in_the_same_row_with_the_decision(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    done = await journal_react(path, {"B": Approve()})
    assert done.ok
    mission = Mission.from_journal(path)
    assert mission.roots == ["refunds"] and len(mission.runs()) == 1
    run = mission.nodes["refunds"]
    assert (run.status, run.detail["reason"]) == ("ok", "final_answer")
    assert "pending" not in run.detail
    (pause,) = run.detail["pauses"]
    assert pause["decided"] == ["call_1_1"] and pause["resumed_ms"] >= pause["paused_ms"]
    call = mission.nodes["refunds|call_1_1"]
    assert call.status == "ok" and call.detail["result"] == "refunded 500 on B"
    assert call.detail["approval"]["decision"] == "approve"
    assert [mission.nodes[c].kind for c in run.children] == ["turn", "turn"]
    text = format_mission(mission)
    assert "│     ‖ approved\n│     ← refunded 500 on B" in text
    assert "ok: final_answer | 2 turns" in text and "| paused once, waited " in text
    (row,) = summarize(mission)
    assert (row.ok, row.paused, row.failed) == (1, 0, 0)
    assert "paused" not in format_summary([row])  # no column when nothing is paused
    spans = spans_of(mission)
    assert spans["invoke_agent react"]["attrs"]["ptcflow.run.resumed"] is True
    assert set(spans["invoke_agent react"]["events"]) == {
        "ptcflow.run.paused",
        "ptcflow.run.resumed",
    }
    decided = spans["call_1_1"]
    assert decided["attrs"]["ptcflow.approval.decision"] == "approve"
    assert "ptcflow.approval.status" not in decided["attrs"]
    assert set(decided["events"]) == {"ptcflow.approval.requested", "ptcflow.approval.resolved"}


async def test_live_the_row_pauses_then_runs_again(tmp_path: Path) -> None:
    """Folded one signal at a time (as the live page and --follow see it)."""
    path = tmp_path / "run.jsonl"
    await journal_react(path, {"B": Approve()})
    live = LiveMission("refunds")
    seen: dict[str, tuple[str, str, bool]] = {}
    for signal in read_journal(path):
        live.feed(signal)
        run = live.mission.nodes["refunds"]
        call = live.mission.nodes.get("refunds|call_1_1")
        state = (run.status, call.status if call else "-", live.done)
        seen.setdefault(signal.type, state)
    assert seen["ai.approval.requested"] == ("running", "waiting", False)
    assert seen["ai.request.paused"] == ("paused", "waiting", True)  # the stream may end
    assert seen["ai.request.resumed"] == ("running", "running", False)
    assert seen["ai.approval.resolved"] == ("running", "running", False)
    assert seen["ai.request.completed"] == ("ok", "ok", True)
    assert live.status() == "ok"


async def test_follow_prints_the_pause_then_the_rest_of_the_run(tmp_path: Path) -> None:
    import io

    path = tmp_path / "run.jsonl"
    await journal_react(path, {"B": Approve()})
    mission, out = Mission(), io.StringIO()
    printer = FollowPrinter(mission, out)
    for signal in read_journal(path):
        printer.feed(mission.add(signal))
    text = out.getvalue()
    paused = text.index("paused: 1 call waits for a decision")
    resumed = text.index("↻ resumed, decided: call_1_1")
    assert paused < resumed < text.index("ok: final_answer")


async def test_a_program_waits_at_its_calls_and_shows_each_decision(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    step = await journal_program(path)
    mission = Mission.from_journal(path)
    by_order = {p.arguments["order"]: p.call_id for p in step.pending}
    program = mission.nodes["program|program/program/1"]
    assert program.status == "waiting" and mission.nodes["program"].status == "paused"
    calls = {o: mission.nodes[f"program|{c}"] for o, c in by_order.items()}
    assert {o: n.status for o, n in calls.items()} == {"B": "waiting", "C": "waiting"}
    assert all(n.parent == program.id for n in calls.values())
    assert "paused: 2 calls wait for a decision" in format_mission(mission)
    assert spans_of(mission)["program/program/1"]["attrs"]["ptcflow.approval.status"] == "pending"

    path = tmp_path / "resumed.jsonl"
    done = await journal_program(path, {"B": Approve(), "C": Supply("refunded by hand")})
    assert done.ok, done
    mission = Mission.from_journal(path)
    assert mission.nodes["program"].status == "ok"
    program = mission.nodes["program|program/program/1"]
    assert program.status == "ok" and len(program.children) == 6  # each call once
    decisions = {
        mission.nodes[c].detail["arguments"]["order"]: mission.nodes[c].detail["approval"]
        for c in program.children
        if "approval" in mission.nodes[c].detail
    }
    assert {o: a["decision"] for o, a in decisions.items()} == {"B": "approve", "C": "supply"}
    text = format_mission(mission)
    assert "‖ approved" in text and "‖ result supplied" in text


async def test_a_denial_s_reason_is_content(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await journal_react(path, {"B": Deny("over the limit")})
    shown = Mission.from_journal(path)
    approval = shown.nodes["refunds|call_1_1"].detail["approval"]
    assert (approval["decision"], approval["decision_reason"]) == ("deny", "over the limit")
    assert "‖ denied: over the limit" in format_mission(shown)
    assert shown.nodes["refunds|call_1_1"].status == "error"
    hidden = Mission.from_journal(path, content=False)
    assert hidden.nodes["refunds|call_1_1"].detail["approval"]["decision_reason"] == HIDDEN
    resolved = spans_of(shown)["call_1_1"]["events"]["ptcflow.approval.resolved"]
    assert resolved == {"ptcflow.approval.decision": "deny"}
    with_content = spans_of(shown, capture_content=True)["call_1_1"]
    resolved = with_content["events"]["ptcflow.approval.resolved"]
    assert resolved["ptcflow.approval.reason"] == "over the limit"


async def test_an_agent_used_as_a_tool_pauses_inside_its_caller(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    step = await journal_nested(path)
    (pending,) = step.pending
    mission = Mission.from_journal(path)
    child = mission.nodes["top/call_1_0"]
    call = mission.nodes["top|call_1_0"]  # the parent's call that runs the child
    assert child.parent == call.id
    assert (mission.nodes["top"].status, call.status, child.status) == (
        "paused",
        "waiting",
        "paused",
    )
    (listed,) = mission.nodes["top"].detail["pending"]
    assert listed["call_id"] == pending.call_id and listed["agent"] == ["react", "refunder"]
    text = format_mission(mission)
    assert text.count("paused: 1 call waits for a decision") == 2  # the child's, the top's
    assert "‖ waits for approval" in text

    path = tmp_path / "resumed.jsonl"
    done = await journal_nested(path, Approve())
    assert done.ok, done
    mission = Mission.from_journal(path)
    assert [n.id for n in mission.runs()] == ["top", "top/call_1_0"]  # same rows
    assert {n.status for n in mission.nodes.values()} == {"ok"}
    (refund_call,) = [n for n in mission.nodes.values() if n.name == "refund"]
    assert refund_call.run_id == "top/call_1_0"
    assert refund_call.detail["approval"]["decision"] == "approve"


def test_follow_from_the_command_line_reads_on_past_a_pause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    paused, resumed = tmp_path / "paused.jsonl", tmp_path / "resumed.jsonl"
    anyio.run(journal_react, paused)
    anyio.run(lambda: journal_react(resumed, {"B": Approve()}))
    assert main(["trace", "show", "--follow", str(paused)]) == 1  # stops at the pause
    assert capsys.readouterr().out.rstrip().endswith("requires approval")
    assert main(["trace", "show", "--follow", str(resumed)]) == 0  # the resume follows it
    out = capsys.readouterr().out
    assert "paused: 1 call waits" in out and "↻ resumed, decided: call_1_1" in out
    assert "ok: final_answer" in out
