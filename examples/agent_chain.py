"""A chain of three agents (finder -> drafter -> sender), two ways.

    .venv/bin/python examples/agent_chain.py

``checked_chain`` is the spec's ``with`` pattern: each Step is checked (``step.ok``) and
the first failure is returned, with a branch on its reason. ``raising_chain`` is the spec's
``run!`` / ``then!`` pipe: ``run_or_raise`` then ``then``, raising ``SubAgentError`` at the
first failure. Each Step is the next agent's context (its value and its types, DD-5).
"""

from __future__ import annotations

from typing import Any

import anyio

from ptcflow import SubAgent, SubAgentError, print_chain
from ptcflow.agent import run_or_raise, then
from ptcflow.runtime import LLMRequest, Step
from ptcflow.testing import ScriptedLLM

INBOX = {"alice": [{"id": 1, "urgent": True}, {"id": 2, "urgent": True}], "zed": []}
SENT: list[str] = []


def list_emails(user: str) -> list[dict[str, Any]]:
    """List a user's emails."""
    return INBOX[user]


def send(subject: str) -> bool:
    """Send a reply."""
    SENT.append(subject)
    return True


finder = SubAgent(
    prompt="Find urgent emails for {{user}}",
    signature="(user :string) -> {count :int, _ids [:int]}",
    tools=[list_emails],
    name="finder",
)
drafter = SubAgent(
    prompt="Draft a reply about {{count}} urgent emails",
    signature="(count :int) -> {subject :string}",
    name="drafter",
)
sender = SubAgent(
    prompt="Send {{subject}}",
    signature="(subject :string) -> {sent :bool}",
    tools=[send],
    name="sender",
)


def model(request: LLMRequest) -> str:
    """The scripted model of all three agents."""
    task = next(m.content for m in request.messages if m.role == "user")
    if task.startswith("Find"):
        return (
            '(let [u (filter :urgent (call "list_emails" {:user ctx/user}))]\n'
            '  (if (empty? u) (fail {:reason :not_found :message "no urgent email"})\n'
            "    (return {:count (count u) :_ids (map :id u)})))"
        )
    if task.startswith("Draft"):
        return '(return {:subject (str "Re: " ctx/count " urgent emails")})'
    return '(return {:sent (call "send" {:subject ctx/subject})})'


async def checked_chain(user: str, llm: ScriptedLLM) -> list[Step] | str:
    """The ``with`` pattern: the Steps of the chain, or what went wrong."""
    found = await finder.run(llm=llm, context={"user": user})
    if not found.ok:
        assert found.fail is not None
        return "nothing to do" if found.fail.reason == "not_found" else found.fail.message
    drafted = await drafter.run(llm=llm, context=found)
    if not drafted.ok:
        return f"drafting failed: {drafted.reason}"
    sent = await sender.run(llm=llm, context=drafted)
    return [found, drafted, sent] if sent.ok else f"sending failed: {sent.reason}"


async def raising_chain(user: str, llm: ScriptedLLM) -> Step:
    """The ``run!`` / ``then!`` pipe: raises ``SubAgentError`` at the first failure."""
    found = await run_or_raise(finder, llm=llm, context={"user": user})
    drafted = await then(found, drafter, llm=llm)
    return await then(drafted, sender, llm=llm)


async def main() -> tuple[list[Step] | str, str, str]:
    """Both chains for alice (who has urgent mail) and zed (who has none)."""
    llm = ScriptedLLM(model)
    alice = await checked_chain("alice", llm)
    zed = await checked_chain("zed", llm)
    last = await raising_chain("alice", llm)
    try:
        await raising_chain("zed", llm)
        raised = "no error"
    except SubAgentError as error:
        raised = str(error.step.fail.reason if error.step.fail else error)
    assert last.ok
    return alice, zed if isinstance(zed, str) else "?", raised


if __name__ == "__main__":
    steps, zed, raised = anyio.run(main)
    print("zed:", zed, "| raising chain for zed:", raised, "| sent:", SENT)
    if isinstance(steps, list):
        print_chain(steps)
