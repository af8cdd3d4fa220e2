"""The viewer in a real browser: headless Chromium (Debian's package) driven by Playwright.

``make test`` installs Debian's ``chromium`` when it runs as root and the browser is missing;
without it (or without Playwright) these tests skip, and pytest's ``-rs`` summary says why.
``PTCFLOW_SCREENSHOTS=1`` also writes the screenshots shown in README.md and docs/trace.md.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from ptcflow.trace import Mission, Prices, write_page

from .approvals import journal_react
from .support import JOURNAL, KINDS

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = ROOT / "docs" if os.environ.get("PTCFLOW_SCREENSHOTS") else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (the dev extra pins it): no browser tests")
    if not CHROMIUM.exists():
        pytest.skip(
            "no /usr/bin/chromium: `make test` installs Debian's chromium package when it runs "
            "as root (apt-get install -y chromium); install it to run the browser tests"
        )
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    page.close()
    assert errors == []


def _open(tab: Any, path: Path) -> None:
    tab.goto(path.resolve().as_uri())
    tab.wait_for_selector("body[data-ready='1']")


def _click_bar(tab: Any, node_id: str) -> None:
    tab.evaluate("id => ptcTrace.reveal(id)", node_id)
    tab.locator(f'.row[data-id="{node_id}"] .bar').click()


@pytest.fixture(scope="module")
def mission_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Mission]:
    mission = Mission.from_journal(JOURNAL)
    prices = Prices({"scripted": {"input": 3.0, "output": 15.0}})
    path = tmp_path_factory.mktemp("page") / "mission.html"
    return write_page(mission, path, prices=prices, title=JOURNAL.name), mission


def test_the_recorded_mission_shows_one_bar_per_node(
    tab: Any, mission_page: tuple[Path, Mission]
) -> None:
    path, mission = mission_page
    _open(tab, path)
    total = sum(KINDS.values())
    assert tab.get_attribute("#waterfall", "data-bars") == str(total) == str(len(mission.nodes))
    for kind, count in KINDS.items():
        assert tab.evaluate("k => ptcTrace.count(k)", kind) == count
    assert tab.evaluate("document.getElementById('spacer').offsetHeight") == total * 22
    visible = tab.locator(".row:not([hidden]) .bar").count()
    assert 30 < visible < total  # only the rows in view exist (virtualised)
    assert tab.locator("#summary td").first.inner_text() == "planner"
    assert "$" in tab.locator("#summary tr:nth-child(2) td:last-child").inner_text()
    assert tab.locator(".bar.retried").count() == 1  # the rate-limited model call, in view
    # "failures only": what failed and what holds it
    failed = {n.id for n in mission.nodes.values() if n.status in ("error", "cancelled")}
    keep: set[str] = set()
    for failed_id in failed:
        node_id: str | None = failed_id
        while node_id is not None and node_id not in keep:
            keep.add(node_id)
            node_id = mission.nodes[node_id].parent
    tab.check("#failures")
    assert tab.evaluate("document.getElementById('spacer').offsetHeight") == len(keep) * 22
    shown = {
        tab.locator(".row:not([hidden])").nth(i).get_attribute("data-id") for i in range(len(keep))
    }
    assert shown == keep
    tab.uncheck("#failures")
    assert tab.evaluate("document.getElementById('spacer').offsetHeight") == total * 22


def test_agents_called_as_tools_nest_under_the_callers_tool_call(
    tab: Any, mission_page: tuple[Path, Mission]
) -> None:
    path, mission = mission_page
    _open(tab, path)
    for run in mission.runs()[1:]:  # every agent but the planner was called as a tool
        call = mission.nodes[run.parent or ""]
        assert call.kind == "tool" and call.name == run.name
        tab.evaluate("id => ptcTrace.reveal(id)", run.id)
        rows = tab.locator(".row:not([hidden])")
        ids = [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]
        assert ids[ids.index(run.id) - 1] == call.id  # the run's row right under its call's

        def indent(node_id: str) -> int:
            row = tab.locator(f'.row:not([hidden])[data-id="{node_id}"]')
            label = row.locator("xpath=./*[1]")
            return int(label.evaluate("e => parseInt(e.style.paddingLeft)"))

        assert indent(run.id) == indent(call.id) + 12


def test_a_click_on_a_tool_bar_shows_its_arguments(
    tab: Any, mission_page: tuple[Path, Mission]
) -> None:
    path, mission = mission_page
    _open(tab, path)
    tool = next(
        n for n in mission.nodes.values() if n.name == "fetch_sales" and n.status == "error"
    )
    _click_bar(tab, tool.id)
    detail = tab.locator("#detail")
    assert detail.locator("h2").inner_text() == "tool: fetch_sales"
    arguments = detail.locator("h3:text('arguments') + pre").inner_text()
    assert '"region": "apac"' in arguments
    assert "sales warehouse for apac is unreachable" in detail.locator(".err").inner_text()
    assert tab.locator(f'.row.sel[data-id="{tool.id}"]').count() == 1


def test_a_failed_program_shows_where_it_failed(
    tab: Any, mission_page: tuple[Path, Mission]
) -> None:
    path, mission = mission_page
    _open(tab, path)
    program = next(n for n in mission.nodes.values() if n.kind == "program" and n.status == "error")
    _click_bar(tab, program.id)
    source = tab.locator("#detail .src")
    bad = source.locator(".ln.bad")
    assert bad.count() == 1 and bad.locator("i").inner_text() == "2"
    assert bad.inner_text().endswith('(+ "total: " (sum-by :amount rows))')
    assert bad.locator("mark").inner_text() == "("  # line 2, column 1
    assert "^ type at line 2, column 1" in source.locator(".caret").inner_text()
    # the model call before it: the conversation so far and the response
    assert program.call_id is not None
    head, turn = program.call_id.rsplit("/program/", 1)
    llm = mission.nodes[f"{program.run_id}|{head}/llm/{turn}"]
    _click_bar(tab, llm.id)
    assert "(def rows" in tab.locator("#detail h3:text('response') + pre").inner_text()
    if SHOTS is not None:
        _click_bar(tab, program.id)
        tab.evaluate("document.getElementById('scroller').scrollTop = 0")
        tab.screenshot(path=str(SHOTS / "trace-viewer.png"))


def test_a_paused_run_shows_its_waiting_call(tab: Any, tmp_path: Path) -> None:
    journal = tmp_path / "paused.jsonl"
    with ThreadPoolExecutor(1) as thread:  # Playwright's own event loop runs in this one
        thread.submit(lambda: anyio.run(lambda: journal_react(journal))).result()
    _open(tab, write_page(Mission.from_journal(journal), tmp_path / "paused.html"))
    assert tab.get_attribute("#stats", "data-paused") == "1"
    assert "1 paused" in tab.inner_text("#stats") and "failed" not in tab.inner_text("#stats")
    assert tab.locator(".bar.st-paused").count() == 1
    row = tab.locator('.row[data-id="refunds|call_1_1"]')
    assert row.locator(".x").inner_text() == "‖ waits for approval"
    assert row.locator(".bar").get_attribute("class") == "bar k-tool st-waiting"
    _click_bar(tab, "refunds")
    assert "call_1_1 · requires approval" in tab.inner_text("#detail")


def test_a_mission_of_1000_runs_is_interactive_within_budget(
    tab: Any, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path_factory.mktemp("big")
    journal = folder / "mission.jsonl"
    bench = [sys.executable, str(ROOT / "bench" / "trace_bench.py"), "--make-only"]
    made = subprocess.run([*bench, "--journal", str(journal)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr  # its own process: Playwright holds this loop
    runs, signals = (int(w) for w in made.stdout.split(": ")[1].split()[0:3:2])
    start = time.perf_counter()
    shown = subprocess.run(
        [sys.executable, "-m", "ptcflow.cli", "trace", "show", str(journal)],
        capture_output=True,
        text=True,
        check=True,
    )
    show_ms = (time.perf_counter() - start) * 1000
    assert shown.stdout.count("══ worker") == 990
    mission = Mission.from_journal(journal)
    page = write_page(mission, folder / "mission.html")
    start = time.perf_counter()
    _open(tab, page)
    tab.wait_for_selector(".row .bar")
    first_paint = tab.evaluate("ptcTrace.timings.firstPaint")
    target = [n.id for n in mission.nodes.values() if n.kind == "tool"][5000]
    tab.evaluate("id => ptcTrace.reveal(id)", target)
    start = time.perf_counter()
    tab.locator(f'.row[data-id="{target}"] .bar').click()
    tab.wait_for_selector("#detail h3:text('arguments')")
    click_ms = (time.perf_counter() - start) * 1000
    assert tab.get_attribute("#waterfall", "data-bars") == str(len(mission.nodes))
    with capsys.disabled():  # into the test log (make test's output)
        print(
            f"\n[trace viewer] {runs} runs, {signals} signals, {len(mission.nodes)} bars: "
            f"`ptcflow trace show` {show_ms:.0f} ms; page first paint {first_paint:.0f} ms, "
            f"click -> detail {click_ms:.0f} ms (budgets: 2 s each; machine shared)"
        )
    assert first_paint + click_ms < 10_000 and show_ms < 10_000  # hangs, not budgets


# The page asks the service how its missions ended, until one has the status (10 s at most).
STATUS_WAIT = """async (status) => {
  for (let i = 0; i < 100; i++) {
    const runs = Object.values(await (await fetch('/runs')).json());
    if (runs.includes(status)) {
      const counts = {};
      for (const r of runs) counts[r] = (counts[r] || 0) + 1;
      return counts;
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  return null;
}"""


@pytest.fixture(scope="module")
def service_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path_factory.mktemp("service-data")
    cmd = [sys.executable, "-m", "ptcflow.cli", "serve", "--example", "--port", str(port)]
    cmd += ["--data-dir", str(data)]
    process = subprocess.Popen([*cmd, "--latency-ms", "150"], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        assert "example service on" in process.stdout.readline().decode()  # it is listening
        for _ in range(100):  # uvicorn binds right after printing: connect once it has
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()  # type: ignore[union-attr]


def test_the_live_service_shows_bars_before_the_mission_ends(tab: Any, service_url: str) -> None:
    tab.goto(service_url + "/?protocol=sse")
    tab.wait_for_selector("body[data-ready='1']")
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'running' && ptcTrace.count('run') >= 4")
    early = tab.evaluate("ptcTrace.count()")
    running = tab.evaluate(
        "ptcTrace.count('run') - [...ptcTrace.nodes.values()].filter(n => n.k === 'run' && n.st !== 'running').length"
    )
    assert tab.evaluate("document.body.dataset.live") == "running" and running > 0
    assert tab.locator(".bar.st-running").count() > 0
    if SHOTS is not None:
        tab.wait_for_function("ptcTrace.count('program') >= 1")
        tab.screenshot(path=str(SHOTS / "trace-live.png"))
    tab.wait_for_function("document.body.dataset.live === 'ok'", timeout=30_000)
    final = tab.evaluate("ptcTrace.count()")
    assert early < final == sum(KINDS.values())
    running_nodes = "[...ptcTrace.nodes.values()].filter(n => n.st === 'running').length"
    assert tab.evaluate(running_nodes) == 0  # every node of the mission ended
    # the bars follow on the page's next redraw (it draws once per animation frame); rows
    # of the pool that are not in view are hidden and keep what they last showed
    tab.wait_for_function(
        "document.querySelectorAll('.row:not([hidden]) .bar.st-running').length === 0"
    )
    # Stop: the page closes its stream, and the service cancels that mission
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'running' && ptcTrace.count('run') >= 4")
    tab.click("#stop")
    assert tab.evaluate("document.body.dataset.live") == "stopped"
    cancelled = tab.evaluate(STATUS_WAIT, "cancelled")
    assert cancelled == {"ok": 1, "cancelled": 1}


def test_the_page_reads_the_mission_over_agui(tab: Any, service_url: str) -> None:
    # the same page, fed by the standard protocol: POST /agui, the tree from AG-UI state
    tab.goto(service_url + "/?protocol=agui")
    tab.wait_for_selector("body[data-ready='1']")
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'running' && ptcTrace.count('run') >= 2")
    tab.wait_for_function("document.body.dataset.live === 'ok'", timeout=30_000)
    assert tab.evaluate("ptcTrace.count()") == sum(KINDS.values())
    running_nodes = "[...ptcTrace.nodes.values()].filter(n => n.st === 'running').length"
    assert tab.evaluate(running_nodes) == 0
    tab.wait_for_function("document.querySelectorAll('.row:not([hidden]) .bar').length > 0")
    # Stop aborts the request: the endpoint sees the client go and cancels that mission
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'running' && ptcTrace.count('run') >= 2")
    tab.click("#stop")
    assert tab.evaluate("document.body.dataset.live") == "stopped"


def test_the_page_keeps_a_conversation_across_reloads(tab: Any, service_url: str) -> None:
    # "/" holds a conversation: a cookie names its AG-UI thread, kept in SQLite by the service
    tab.goto(service_url + "/")
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").count() == 0 and tab.locator("#chat").is_visible()
    tab.click("#go")  # the form's question: the whole mission runs
    tab.wait_for_function("document.body.dataset.live === 'ok'", timeout=30_000)
    assert tab.evaluate("ptcTrace.count()") == sum(KINDS.values())
    # a follow-up naming no region: the scripted planner answers it from the earlier turn
    # it was shown (with none, it would say there is nothing to follow up on)
    tab.fill("#question", "Which of them grew most?")
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.turns === '4'", timeout=30_000)
    shown = tab.locator("#turns li").all_inner_texts()
    assert shown[0] == "Which regions grew last quarter?"
    assert shown[1].startswith("amer grew most (31%)")
    assert shown[2] == "Which of them grew most?"
    assert shown[3].startswith("amer grew most. Earlier you asked 'Which regions grew last")
    tab.wait_for_function("document.body.dataset.live === 'ok'")
    if SHOTS is not None:
        tab.screenshot(path=str(SHOTS / "service-conversation.png"))
    # a reload shows the earlier turns: the page asks for them (AG-UI MESSAGES_SNAPSHOT)
    tab.reload()
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").all_inner_texts() == shown
    assert [tab.locator("#turns li").nth(i).get_attribute("data-role") for i in range(4)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    # a new conversation starts empty; a stopped question is not stored
    tab.click("#new")
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").count() == 0 and tab.url == service_url + "/"
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'running' && ptcTrace.count('run') >= 2")
    tab.click("#stop")
    assert tab.locator("#turns li").all_inner_texts() == [
        "Which regions grew last quarter?",
        "stopped",
    ]
    tab.reload()
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").count() == 0


REFUNDS = "async () => (await fetch('/refunds')).json()"


def test_a_refund_waits_for_approval_on_the_page(tab: Any, service_url: str) -> None:
    # a refund above the threshold pauses the mission (an AG-UI interrupt): the page shows
    # the call with Approve / Deny; a click resumes the run over AG-UI
    tab.goto(service_url + "/?new=1")
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    before = tab.evaluate(REFUNDS)
    tab.fill("#question", "Refund order A17 (250 EUR)")
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'paused'", timeout=30_000)
    panel = tab.locator("#pending")
    assert panel.is_visible()
    assert panel.locator(".tool").inner_text() == "refund"
    assert json.loads(panel.locator(".arguments").inner_text()) == {"order": "A17", "amount": 250}
    assert "needs a person's approval" in panel.locator(".reason").inner_text()
    assert tab.evaluate(REFUNDS) == before  # nothing refunded while it waits
    if SHOTS is not None:
        tab.screenshot(path=str(SHOTS / "service-approval.png"))
    # a reload shows the question still waiting, and the call
    tab.reload()
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").all_inner_texts() == ["Refund order A17 (250 EUR)"]
    assert tab.locator("#turns li.waiting").count() == 1 and panel.is_visible()
    tab.click("#pending .approve")
    tab.wait_for_function("document.body.dataset.live === 'ok'", timeout=30_000)
    shown = tab.locator("#turns li").all_inner_texts()
    assert shown == ["Refund order A17 (250 EUR)", "Refunded 250.0 on order A17."]
    assert not panel.is_visible()
    assert tab.evaluate(REFUNDS) == [*before, {"order": "A17", "amount": 250.0}]  # once
    # the resumed mission was stored as the question's turn
    tab.reload()
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").all_inner_texts() == shown
    assert not panel.is_visible()
    # Deny asks for a reason, which the model reads and answers with
    tab.fill("#question", "Refund order B9 (900)")
    tab.click("#go")
    tab.wait_for_function("document.body.dataset.live === 'paused'", timeout=30_000)
    tab.click("#pending .deny")
    tab.fill("#pending .why", "over the monthly limit")
    tab.click("#pending .confirm")
    tab.wait_for_function("document.body.dataset.live === 'ok'", timeout=30_000)
    answer = tab.locator("#turns li").all_inner_texts()[-1]
    assert answer.startswith("The refund of order B9 was not made")
    assert "over the monthly limit" in answer
    assert tab.evaluate(REFUNDS) == [*before, {"order": "A17", "amount": 250.0}]
    tab.reload()
    tab.wait_for_function("document.body.dataset.conversation === 'loaded'")
    assert tab.locator("#turns li").count() == 4
