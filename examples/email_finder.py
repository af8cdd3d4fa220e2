"""The spec's email finder, used as a tool: firewalled ids reach the caller's program only.

    .venv/bin/python examples/email_finder.py

``email_finder`` returns ``{count, _ids}``. An assistant calls it as a tool and archives the
urgent emails by id: its program reads ``_ids``, its model only ever sees ``<Firewalled>``.
The model is scripted (``ScriptedLLM``), so the example runs offline.
"""

from __future__ import annotations

from typing import Any

import anyio

from ptcflow import SubAgent, print_trace
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.testing import ScriptedLLM

EMAILS = [
    {"id": 1, "subject": "Urgent: invoice overdue", "urgent": True},
    {"id": 2, "subject": "Lunch on Friday?", "urgent": False},
    {"id": 3, "subject": "Urgent: site down", "urgent": True},
]
ARCHIVED: list[int] = []


def list_emails(user: str) -> list[dict[str, Any]]:
    """List the newest emails of a user."""
    return EMAILS


def archive(ids: list[int]) -> int:
    """Archive emails by id; returns how many were archived."""
    ARCHIVED.extend(ids)
    return len(ids)


email_finder = SubAgent(
    prompt="Find urgent emails for {{user}}",
    signature="(user :string) -> {count :int, _ids [:int]}",
    tools=[list_emails],
    name="email_finder",
    description="Finds a user's urgent emails.",
)

assistant = SubAgent(
    prompt="Archive the urgent emails of {{user}}",
    signature="(user :string) -> {archived :int}",
    tools=[email_finder.as_tool(), archive],
    name="assistant",
)


def model(request: LLMRequest) -> str:
    """The scripted model: answers each agent by its task and turn."""
    task = next(m.content for m in request.messages if m.role == "user")
    if task.startswith("Find urgent"):
        return (
            '(let [urgent (filter :urgent (call "list_emails" {:user ctx/user}))]\n'
            "  (return {:count (count urgent) :_ids (map :id urgent)}))"
        )
    if len(request.messages) < 3:  # the assistant's first turn: look
        return '(def found (call "email_finder" {:user ctx/user}))\nfound'
    return '(return {:archived (call "archive" {:ids (:_ids found)})})'


async def main() -> tuple[Step, list[LLMRequest]]:
    """Run the assistant; return its Step and the model requests."""
    llm = ScriptedLLM(model)
    async with Runtime(llm=llm) as rt:
        step = await rt.run(assistant, context={"user": "alice"})
    return step, list(llm.requests)


if __name__ == "__main__":
    step, requests = anyio.run(main)
    print(step.value, "archived ids:", ARCHIVED)
    seen = requests[-1].messages[-1].content
    print("the assistant's model saw:", [ln for ln in seen.splitlines() if "email_finder" in ln])
    print_trace(step)
