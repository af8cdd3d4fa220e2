"""print_trace / print_chain: the spec's boxed view, coloured on a terminal, plain when piped."""

from __future__ import annotations

import io
from typing import Any

import pytest

from ptcflow import SubAgent, print_chain, print_trace
from ptcflow.runtime import Step
from ptcflow.testing import ScriptedLLM

from .ptc_support import block

EMAILS = [{"id": 1, "subject": "Urgent"}, {"id": 2, "subject": "Hello"}]


def list_emails(user: str) -> list[dict[str, Any]]:
    """List a user's emails."""
    return EMAILS


FINDER = SubAgent(
    prompt="Find urgent emails for {{user}}",
    signature="(user :string) -> {count :int, ids [:int]}",
    tools=[list_emails],
)
PROGRAM = (
    '(let [emails (call "list_emails" {:user ctx/user})]\n'
    '  (call "return" {:count (count emails) :ids (map :id emails)}))'
)


@pytest.fixture
def step() -> Step:
    llm = ScriptedLLM([block("(+ 1 nil)"), block(PROGRAM)])
    return FINDER.run_sync(llm=llm, context={"user": "alice@example.com"})


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_boxed_view_is_plain_when_piped(step: Step) -> None:
    out = io.StringIO()
    print_trace(step, file=out)
    text = out.getvalue()
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert lines[0].startswith("┌─ Turn 1 ─")
    assert "│ Prompt: Find urgent emails for alice@example.com" in lines
    assert "│ Error: type at line 1, column 1: + expects numbers, got nil" in text
    second = lines[lines.index(next(x for x in lines if x.startswith("┌─ Turn 2"))) :]
    assert second[2:5] == [
        "│ Program:",
        '│   (let [emails (call "list_emails" {:user ctx/user})]',
        '│     (call "return" {:count (count emails) :ids (map :id emails)}))',
    ]
    assert '│   → list_emails({:user "alice@example.com"})' in second
    assert '│     ← [{:id 1, :subject "Urgent"} {:id 2, :subject "Hello"}]' in second
    assert "│ Result: {:count 2, :ids [1 2]}" in second
    assert any(x.startswith("│ Duration: ") and " in / " in x for x in second)
    assert any(x.startswith("└──") for x in second)
    assert lines[-1].startswith("ok: returned | 2 turns |")


def test_colour_on_a_terminal_unless_no_color(step: Step, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = Tty()
    print_trace(step, file=tty)
    assert "\x1b[" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    tty = Tty()
    print_trace(step, file=tty)
    assert "\x1b[" not in tty.getvalue()
    forced = io.StringIO()
    print_trace(step, file=forced, color=True)
    assert "\x1b[" in forced.getvalue()


def test_print_chain_heads_each_step(step: Step) -> None:
    out = io.StringIO()
    failed = Step(run_id="r2", ok=False, reason="max_turns_exceeded")
    print_chain([step, failed], file=out)
    text = out.getvalue()
    assert text.startswith("══ Step 1 of 2: ok (returned), 2 turns, ")
    assert "══ Step 2 of 2: failed (max_turns_exceeded), 0 turns, 0 ms ══" in text
    assert text.rstrip().endswith("(no trace: run the agent with trace=True)")


def test_print_trace_writes_to_stdout_by_default(
    step: Step, capsys: pytest.CaptureFixture[str]
) -> None:
    print_trace(step)
    assert capsys.readouterr().out.startswith("┌─ Turn 1 ─")
