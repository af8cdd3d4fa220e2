"""``ptcflow trace show``: boxes per turn, nested agents indented, ``--follow`` on a live run."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest
from service_mission import open_mission_runtime, run_mission

from ptcflow.cli import main
from ptcflow.signals import SignalBus, record_journal
from ptcflow.trace import FollowPrinter, Mission, follow_journal, format_mission

from .make_mission import QUESTION
from .support import JOURNAL, KINDS, RUNS


def test_show_prints_every_turn_with_nested_agents_indented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["trace", "show", str(JOURNAL), "--summary"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "══ planner (mission_1) ══"
    assert sum(1 for line in lines if "┌─ Turn" in line) == KINDS["turn"]
    headers = [line for line in lines if "══ " in line]
    assert len(headers) == sum(RUNS.values())
    # a counter runs inside an analyst's turn, inside the planner's turn: two box levels
    # (an agent called as a tool is shown under its call)
    counter = next(line for line in headers if "══ counter" in line)
    assert counter.startswith("│     │     ══ counter")
    assert "│     │     │ Error: type at line 2, column 1: + expects numbers" in out
    assert "│     │     │   → orders({:region " in out
    assert "Model: scripted, 2 attempts" in out
    assert "← error tool_error: tool 'fetch_sales' raised ConnectionError" in out
    summary = lines[lines.index("") + 1 :]
    assert summary[0].split()[:4] == ["agent", "runs", "ok", "failed"]
    assert [row.split()[:2] for row in summary[1:]] == [[a, str(n)] for a, n in RUNS.items()]


def test_show_puts_costs_when_prices_are_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text("[prices.scripted]\ninput = 3.0\noutput = 15.0\n")
    assert main(["trace", "show", str(JOURNAL), "--prices", str(prices), "--summary"]) == 0
    out = capsys.readouterr().out
    assert "| $0." in out.splitlines()[-len(RUNS) - 3]
    assert all("$" in row for row in out.splitlines()[-len(RUNS) :])


def test_show_explains_a_missing_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "show", str(tmp_path / "nope.jsonl")]) == 2
    assert "no journal at" in capsys.readouterr().err


def test_the_text_of_an_empty_mission_says_so() -> None:
    assert format_mission(Mission()) == "(no runs in this journal)"


@pytest.mark.anyio
async def test_follow_prints_turns_while_a_live_run_writes_its_journal(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    out = io.StringIO()
    mission = Mission()
    printer = FollowPrinter(mission, out)
    run_done = anyio.Event()
    boxes_during_run = 0

    async def follow() -> None:
        nonlocal boxes_during_run
        async with follow_journal(path, poll=0.005) as signals:
            async for signal in signals:
                printer.feed(mission.add(signal))
                if not run_done.is_set():
                    boxes_during_run = out.getvalue().count("┌─ Turn")
                if mission.ended:
                    return

    bus = SignalBus()
    # line-buffered: each signal reaches the file as it is journaled
    with path.open("w", buffering=1) as file:
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            async with (
                open_mission_runtime(bus=bus, latency=0.03) as rt,
                record_journal(bus, file),
            ):
                step = await run_mission(rt, QUESTION, run_id="mission_1", latency=0.03)
            run_done.set()
    assert step.ok
    text = out.getvalue()
    assert text.count("┌─ Turn") == KINDS["turn"]
    assert boxes_during_run > 0  # boxes were printed while the mission was still running
    assert text.splitlines()[-1].startswith("ok: returned")
    assert "│     ══ analyst" in text  # child runs indented


def test_follow_from_the_command_line_stops_when_every_run_has_ended(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["trace", "show", "--follow", str(JOURNAL)]) == 0
    out = capsys.readouterr().out
    assert out.count("┌─ Turn") == KINDS["turn"]
