"""``ptcflow trace open``: one self-contained HTML file (the browser tests open it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ptcflow.cli import main
from ptcflow.signals import Ok, ToolResultData, ToolStartedData
from ptcflow.testing import SignalFactory
from ptcflow.trace import Mission, Prices, live_page, page_html

from .support import JOURNAL, KINDS


def _data(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="ptc-data" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_open_writes_a_page_that_needs_no_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    out = tmp_path / "mission.html"
    assert main(["trace", "open", str(JOURNAL), "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert opened == [out.resolve().as_uri()]
    html = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # no CDN, no fetch
    assert "import " not in html
    # the script's live code (EventSource, the AG-UI fetch) runs on a live page only
    assert html.count("fetch(") == 1 and _data(html).get("live") is None
    assert len(_data(html)["nodes"]) == sum(KINDS.values())


def test_no_open_only_writes_next_to_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(JOURNAL.read_bytes())
    assert main(["trace", "open", str(journal), "--no-open"]) == 0
    assert (tmp_path / "run.html").is_file() and opened == []


def test_text_from_a_model_cannot_end_the_script_element() -> None:
    sig = SignalFactory("r")
    evil = "</script><script>alert(1)</script><!--"
    signals = [
        sig.request_started(evil),
        sig.make(
            "ai.tool.started",
            ToolStartedData(tool_name="t", arguments={"q": evil}),
            call="c",
            iteration=1,
        ),
        sig.make(
            "ai.tool.result",
            ToolResultData(tool_name="t", result=Ok(payload=evil)),
            call="c",
            iteration=1,
        ),
    ]
    html = page_html(Mission.from_signals(signals), title="<b>x</b>")
    assert html.count("</script>") == 2  # the data's and the code's own
    assert "<b>x</b>" not in html
    nodes = _data(html)["nodes"]
    assert nodes[0]["d"]["input"] == evil


def test_prices_and_live_settings_reach_the_page() -> None:
    prices = Prices({"scripted": {"input": 1.0, "output": 2.0}})
    data = _data(page_html(Mission.from_journal(JOURNAL), prices=prices))
    assert data["prices"] == {"scripted": {"input": 1.0, "output": 2.0}} and data["live"] is None
    live = _data(live_page("/missions/stream", question="why?"))
    assert live["nodes"] == [] and live["live"] == {
        "stream": "/missions/stream",
        "question": "why?",
    }
    over_agui = _data(live_page("/missions/stream", agui="/agui"))["live"]
    assert over_agui == {"stream": "/missions/stream", "question": "", "agui": "/agui"}


def test_no_content_keeps_times_and_errors_only(tmp_path: Path) -> None:
    out = tmp_path / "bare.html"
    assert main(["trace", "open", str(JOURNAL), "-o", str(out), "--no-open", "--no-content"]) == 0
    nodes = _data(out.read_text())["nodes"]
    tools = [n for n in nodes if n["k"] == "tool"]
    assert all(n["d"].get("arguments") == "[content not kept]" for n in tools)
    (broken,) = (n for n in tools if "err" in n)
    assert broken["err"] == "tool_error: (ConnectionError)"  # no tool data, as telemetry
    programs = [n for n in nodes if n["k"] == "program" and "err" in n]
    assert programs[0]["err"].startswith("type error at line 2, column 1")
