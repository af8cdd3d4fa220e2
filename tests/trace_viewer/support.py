"""What the viewer's tests share: the recorded mission and what it must contain."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ptcflow.trace import Mission

JOURNAL = Path(__file__).parent / "data" / "mission.jsonl"

# The recorded mission (make_mission.py): 1 planner, 3 analysts, 3 counters (2 turns each:
# a program error, then a return), 3 writers; each analyst calls fetch_sales, counter and
# writer; each counter program calls orders once.
RUNS = {"planner": 1, "analyst": 3, "counter": 3, "writer": 3}
KINDS = {"run": 10, "turn": 2 + 3 * 3 + 3 * 2 + 3, "llm": 2 + 9 + 6 + 3, "program": 6, "tool": 18}
# tools: 3 analyst calls by the planner + 3 x (fetch_sales, counter, writer) + 6 orders


def kinds(mission: Mission) -> Counter[str]:
    """How many nodes of each kind the mission has."""
    return Counter(node.kind for node in mission.nodes.values())


def agents(mission: Mission) -> Counter[str]:
    """How many runs each agent made."""
    return Counter(node.name for node in mission.runs())
