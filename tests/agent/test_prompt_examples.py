"""Every example the system prompt shows the model actually runs.

A model copies what the prompt shows; an example that does not run teaches it a mistake.
The examples are: every snippet of the PTC-Lisp section's prose (forms, host-data keys,
Java methods), every snippet of a builtin's meaning that calls that builtin (``(sum-by
:amount orders)``; the usage patterns before ``--`` are not code), each tool's example
call (its arguments must pass the tool's signature), the example ``return`` (it must match
the agent's output signature) and the output-format program.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from ptcflow import SubAgent, preview_prompt
from ptcflow.lisp import run, run_sync
from ptcflow.program import plain_value
from ptcflow.signals import Err, Ok
from ptcflow.strategies._subagent import check_return
from ptcflow.tools import call_tool

from .test_prompt_golden import list_emails, mark_read, send_email

ROWS = [
    {
        "id": 1,
        "amount": 2.5,
        "status": "paid",
        "age": 20,
        "tags": ["x"],
        "user": {"id": 7},
        "active": True,
    },
    {"id": 2, "amount": 4.0, "status": "a", "age": 12, "tags": [], "user": {"id": 8}},
]
CTX = {"rows": ROWS, "m": {"id": 1}, "r": {"user_id": 7, "content": "c"}, "s": "order 42"}
BINDINGS = "[rows ctx/rows orders ctx/rows m ctx/m r ctx/r s ctx/s]"

AGENTS = {
    "agent": SubAgent(
        prompt="Find urgent emails for {{user}}",
        signature="(user :string) -> {count :int, _ids [:int]}",
        tools=[list_emails, mark_read],
        tool_catalog=[send_email],
    ),
    "judgment": SubAgent(
        prompt="Is {{amount}} suspicious?",
        signature="(amount :float) -> {suspicious :bool, reason :string}",
        max_turns=1,
    ),
}
CONTEXTS = {"agent": {"user": "alice@example.com"}, "judgment": {"amount": 9400.0}}


def snippets(text: str) -> list[str]:
    """The balanced ``(...)`` forms in ``text``, outermost only."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start : i + 1])
    return out


def section(system: str, title: str) -> str:
    return system.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def language_examples(system: str) -> list[str]:
    found: list[str] = []
    for line in section(system, "PTC-Lisp").splitlines():
        if " -- " in line:  # a builtin: usage -- meaning
            usage, meaning = line.split(" -- ", 1)
            name = usage[1:].split(" ", 1)[0].rstrip(")")
            found += [s for s in snippets(meaning) if s.startswith(f"({name} ")]
        elif not line.startswith("(pmap f coll)"):  # that line is a usage pattern
            found += [s for s in snippets(line) if s != "(...)"]  # #(...) names the form
    return found


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_language_example_runs(name: str) -> None:
    system = preview_prompt(AGENTS[name], context=CONTEXTS[name]).system
    examples = language_examples(system)
    assert len(examples) >= 12, examples
    for example in examples:
        # a predicate (where ...) is applied to a row: its work must run too
        program = f"(let {BINDINGS} (let [v {example}] (if (fn? v) (v (first rows)) v)))"
        result = run_sync(program, ctx=CTX)
        assert result.error is None, (example, result.error)
    assert {"(:user_id r)", "(:user-id r)", '(get r "user_id")'} <= set(examples)
    assert all(
        run_sync(f"(let {BINDINGS} {e})", ctx=CTX).value == 7 for e in examples if " r)" in e
    )


@pytest.mark.anyio
async def test_tool_examples_the_return_and_the_output_program_run() -> None:
    agent = AGENTS["agent"]
    system = preview_prompt(agent, context=CONTEXTS["agent"]).system
    tools = section(system, "Tools you can call")
    calls = re.findall(r"^  Example: (.*)$", tools, re.MULTILINE)
    assert len(calls) == 4  # two tools, return, fail
    expected = section(system, "Expected output")
    (returned,) = snippets(expected.split("Return it with", 1)[1])
    program = section(system, "Output format").split("```clojure\n", 1)[1].split("\n```")[0]
    performed: list[tuple[str, Any]] = []

    async def call(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
        result = await call_tool(agent.tools[name], f"example/{index}", args)
        performed.append((name, result))
        return result

    for source in [*calls, returned, program]:
        result = await run(source, tool_names=list(agent.tools), call=call)
        assert result.error is None, (source, result.error)
        if result.returned:
            problem, _ = check_return(agent.parsed_signature, plain_value(result.value), "enabled")
            assert problem is None, (source, problem)
        if result.failed:
            assert set(plain_value(result.fail_value)) >= {"reason", "message"}
    assert all(isinstance(r, Ok) for _, r in performed), performed
    assert [n for n, _ in performed] == ["list_emails", "mark_read", "list_emails"]


def test_the_prompt_is_still_short() -> None:
    system = preview_prompt(AGENTS["agent"], context=CONTEXTS["agent"]).system
    static = system.split("## Data", 1)[0]
    assert len(static) < 6_500, len(static)  # about 1,600 tokens of rules and reference
