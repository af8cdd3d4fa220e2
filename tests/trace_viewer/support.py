"""What the viewer's tests share: the recorded mission and what it must contain."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ptcflow.trace import Mission

JOURNAL = Path(__file__).parent / "data" / "mission.jsonl"

# The recorded mission (make_mission.py): a planner (1 turn: a program calling the analysts),
# 3 analysts (3 turns each: fetch_sales and counter, then writer, then the answer), 3
# counters (emea's takes 2 turns: a program error, then a return; the others 1) and 3
# writers (1 turn each); each counter program calls orders once.
RUNS = {"planner": 1, "analyst": 3, "counter": 3, "writer": 3}
KINDS = {"run": 10, "turn": 1 + 3 * 3 + 4 + 3, "llm": 1 + 9 + 4 + 3, "program": 5, "tool": 16}
# tools: 3 analyst calls by the planner's program + 3 x (fetch_sales, counter, writer) + 4 orders


def kinds(mission: Mission) -> Counter[str]:
    """How many nodes of each kind the mission has."""
    return Counter(node.kind for node in mission.nodes.values())


def agents(mission: Mission) -> Counter[str]:
    """How many runs each agent made."""
    return Counter(node.name for node in mission.runs())
