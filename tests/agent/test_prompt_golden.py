"""What the model reads, checked in as golden files: every change to a prompt shows in review.

The files in ``tests/agent/golden/`` are the rendered prompts (system, user, tool schemas)
of a few representative agents. When a change to the prompt is intended, regenerate them
and review the diff::

    PTCFLOW_REGEN_GOLDEN=1 .venv/bin/pytest tests/agent/test_prompt_golden.py
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptcflow import SubAgent, preview_prompt
from ptcflow.agent import PromptPreview
from ptcflow.errors import UsageError
from ptcflow.runtime import Step

GOLDEN = Path(__file__).parent / "golden"


def list_emails(user: str, limit: int = 20) -> list[dict[str, Any]]:
    """List the newest emails of a user.

    Args:
        user: the user's address.
        limit: at most this many emails.
    """
    return []


def mark_read(ids: list[int]) -> int:
    """Mark emails as read; returns how many changed."""
    return len(ids)


def send_email(to: str, subject: str, body: str) -> bool:
    """Send an email (for planning only)."""
    return True


def email_finder() -> PromptPreview:
    agent = SubAgent(
        prompt="Find urgent emails for {{user}} and mark them read",
        signature="(user :string) -> {count :int, _ids [:int]}",
        tools=[list_emails, mark_read],
        tool_catalog=[send_email],
        name="email_finder",
    )
    return preview_prompt(agent, context={"user": "alice@example.com"})


def judgment() -> PromptPreview:
    agent = SubAgent(
        prompt="Is this order suspicious? {{order.id}} for {{order.amount}} EUR",
        signature="(order {id :int, amount :float, country :string}) -> {suspicious :bool, reason :string}",
        max_turns=1,
    )
    order = {"id": 7, "amount": 9400.0, "country": "NL"}
    return preview_prompt(agent, context={"order": order})


def chained() -> PromptPreview:
    agent = SubAgent(
        prompt="Draft one reply for the {{count}} urgent emails",
        signature="(count :int) -> {subject :string, body :string}",
        max_turns=3,
    )
    previous = Step(
        run_id="r0",
        ok=True,
        value={"count": 2, "_ids": [1, 3], "rows": [{"id": 1, "subject": "x" * 300}]},
        signature="(user :string) -> {count :int, _ids [:int], rows [{id :int, subject :string}]}",
    )
    return preview_prompt(agent, context=previous)


def json_mode() -> PromptPreview:
    agent = SubAgent(
        prompt="Classify this ticket: {{text}}",
        signature="(text :string) -> {category :keyword, urgent :bool}",
        output="json",
    )
    return preview_prompt(agent, context={"text": "The site is down!", "_tenant": "acme"})


CASES: dict[str, Callable[[], PromptPreview]] = {
    "email_finder": email_finder,
    "judgment": judgment,
    "chained": chained,
    "json_mode": json_mode,
}


def render(preview: PromptPreview) -> str:
    schemas = json.dumps(list(preview.tool_schemas), indent=2, sort_keys=True)
    return (
        f"=== system ===\n{preview.system}\n=== user ===\n{preview.user}\n"
        f"=== tool schemas ===\n{schemas}\n"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_prompt_matches_the_golden_file(name: str) -> None:
    text = render(CASES[name]())
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("PTCFLOW_REGEN_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}: run with PTCFLOW_REGEN_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), (
        f"the prompt of {name!r} changed; if intended, regenerate with "
        "PTCFLOW_REGEN_GOLDEN=1 .venv/bin/pytest tests/agent/test_prompt_golden.py and review the diff"
    )


def test_the_preview_shows_the_expanded_task_and_the_data() -> None:
    preview = email_finder()
    assert preview.user == "Find urgent emails for alice@example.com and mark them read"
    assert '- ctx/user :string = "alice@example.com"' in preview.system
    assert "## Tools for planning (do not call)\n- send_email(" in preview.system
    assert '(call "list_emails" {:user "..."})' in preview.system
    assert [s["name"] for s in preview.tool_schemas] == ["list_emails", "mark_read"]
    assert preview.tool_schemas[0]["signature"] == (
        "list_emails(user :string, limit :int?) -> [:map]"
    )


def test_firewalled_data_never_reaches_the_prompt() -> None:
    preview = chained()
    assert "<Firewalled>" in preview.system and "[1 3]" not in preview.system
    assert "- ctx/count :int = 2" in preview.system
    assert "- ctx/rows [{id :int, subject :string}] (1 item) = " in preview.system
    assert "acme" not in json_mode().system


def test_a_missing_placeholder_is_an_error_before_any_call() -> None:
    agent = SubAgent(prompt="Hi {{who}}", signature="(who :string) -> :string")
    with pytest.raises(UsageError, match=r"\{\{who\}\} has no value"):
        preview_prompt(agent, context={})
