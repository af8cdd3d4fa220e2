"""Compaction: the input tokens of each turn of a 50-turn conversation, with and without.

Budget (issue 26): under compaction, a long conversation's input tokens per turn stay
bounded; without it they grow with every turn. One session per column, the same questions
and answers, on the scripted model (``ptcflow.testing.ScriptedLLM``, whose reported input
tokens are about one per 4 characters plus one per message):

* ``none``: the whole history every turn (the baseline, measured in the same run);
* ``keep_last``: ``Compaction(max_messages=20, keep_last=10)``;
* ``summarize``: ``Compaction(max_messages=20, keep_last=10, summarize=True)``, whose
  summarizing calls count in the turn that makes them.

    python bench/compaction.py              # 50 turns, a row every 5
    python bench/compaction.py --turns 200 --every 20
    python bench/compaction.py --json out.json

Every third turn asks a tool first (a call and its result in the history), so the cuts
have tool-call pairs to keep together. The process exits non-zero when a compacted column's
last 10 turns average more than its first window's largest turn (it did not stay bounded).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

import anyio

from ptcflow import Session
from ptcflow.runtime import Runtime
from ptcflow.sessions import Compaction
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

_ANSWER = (
    "Your order {n} ships on Tuesday from the Lyon warehouse; the tracking number follows "
    "by email, and the courier calls an hour before delivery."
)
_SUMMARY = (
    "The user is tracking several orders; each ships on Tuesday from the Lyon warehouse, "
    "tracking by email, the courier calls ahead. Stock was checked for some of them."
)


def lookup(order: int) -> str:
    """The stock of an order's item."""
    return f"order {order}: 3 in stock at Lyon, 0 at Paris"


def _reply(request: Any) -> Any:
    """The scripted model: a summary for a summarizing call, a tool call on every third
    question, else an answer."""
    first = request.messages[0].content if request.messages else ""
    if first.startswith("You summarize"):
        return _SUMMARY
    last = request.messages[-1]
    if last.role == "user":
        n = int(last.content.split("#")[1].split(":")[0])
        if n % 3 == 0:
            return ScriptedLLM.tool_call("lookup", order=n)
        return _ANSWER.format(n=n)
    return _ANSWER.format(n="(checked)")


COLUMNS: dict[str, Compaction | None] = {
    "none": None,
    "keep_last": Compaction(max_messages=20, keep_last=10),
    "summarize": Compaction(max_messages=20, keep_last=10, summarize=True),
}


async def _conversation(compaction: Compaction | None, turns: int) -> list[dict[str, int]]:
    llm = ScriptedLLM(_reply)
    session = Session("bench", compaction=compaction)
    react = ReAct(system_prompt="You answer questions about orders. Be brief.")
    rows = []
    async with Runtime(llm=llm, tools=[lookup]) as rt:
        for n in range(1, turns + 1):
            before = llm.calls
            step = await rt.run(react, f"Question #{n}: where is order {n}?", session=session)
            assert step.ok, step
            rows.append(
                {
                    "input_tokens": step.usage.input_tokens,
                    "calls": llm.calls - before,
                    "stored": len(step.messages),
                }
            )
    return rows


async def _main(turns: int) -> dict[str, list[dict[str, int]]]:
    return {name: await _conversation(c, turns) for name, c in COLUMNS.items()}


def main() -> int:
    """Run the bench and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--every", type=int, default=5, help="print a row every N turns")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    result = anyio.run(_main, args.turns)
    names = list(COLUMNS)
    print(f"input tokens per turn of a {args.turns}-turn conversation (scripted model)\n")
    print("| turn | stored messages | " + " | ".join(names) + " | summarize / none |")
    print("|---:|---:|" + "---:|" * len(names) + "---:|")
    for i in range(args.turns):
        if (i + 1) % args.every and i not in (0, args.turns - 1):
            continue
        cells = [str(result[name][i]["input_tokens"]) for name in names]
        ratio = result["summarize"][i]["input_tokens"] / result["none"][i]["input_tokens"]
        stored = result["none"][i]["stored"]
        print(f"| {i + 1} | {stored} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    print()
    failed = False
    window = 10
    for name in names:
        tokens = [row["input_tokens"] for row in result[name]]
        tail = statistics.mean(tokens[-window:])
        extra = sum(row["calls"] for row in result[name]) - sum(
            row["calls"] for row in result["none"]
        )
        line = (
            f"{name:>9}: max {max(tokens)}, mean of the last {window} turns {tail:.0f}, "
            f"total {sum(tokens)} ({sum(tokens) / sum(r['input_tokens'] for r in result['none']):.2f}x none)"
        )
        if extra:
            line += f", {extra} summarizing calls"
        print(line)
        if COLUMNS[name] is not None and args.turns >= 30:
            bound = max(tokens[:30])
            if tail > bound:
                print(f"  NOT BOUNDED: the last {window} turns average {tail:.0f} > {bound}")
                failed = True
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
