"""Workflows recorded by an earlier ptcflow replay with the current code.

``tests/temporal/histories/*.json`` are histories recorded on a dev server (see
``histories/record.py``, which re-records them): a ReAct run with a tool call, a SubAgent
whose programs call a tool, a SubAgent calling an agent as a tool (child workflows), and
runs that continued as new with checkpoints naming classes by import path. A worker of the
current version must make the same decisions on each of them, as it would for a run that
was in flight when it was deployed. No server needed: the SDK's Replayer.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory

from ptcflow.temporal import check_determinism

pytestmark = pytest.mark.anyio

HISTORIES = Path(__file__).parent / "histories"
CASES = sorted(p.stem for p in HISTORIES.glob("*.json"))


def _load(case: str) -> list[WorkflowHistory]:
    saved = json.loads((HISTORIES / f"{case}.json").read_text())
    return [WorkflowHistory.from_json(h["workflow_id"], h["history"]) for h in saved["histories"]]


def _paths(case: str) -> set[str]:
    """The import paths the case's payloads name (``"path": "module:Class"``)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            data, meta = node.get("data"), node.get("metadata")
            if isinstance(data, str) and isinstance(meta, dict):
                raw = base64.b64decode(data)
                if base64.b64decode(meta.get("encoding", "")) == b"binary/zlib":
                    inner = Payload()
                    inner.ParseFromString(zlib.decompress(raw))
                    raw = inner.data
                found.update(re.findall(r'"path":"([^"]+)"', raw.decode("utf-8", "replace")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads((HISTORIES / f"{case}.json").read_text()))
    return found


def test_the_recorded_cases_are_all_there() -> None:
    assert CASES == [
        "agent_as_tool",
        "continued_react",
        "continued_subagent",
        "react_tool",
        "subagent_program",
    ]
    # checkpoints carry strategy states by class path (continue-as-new)
    assert "ptcflow.strategies._ptc_state:PtcState" in _paths("continued_subagent")
    assert "ptcflow.strategies._react_state:ReActState" in _paths("continued_react")
    assert "ptcflow.directives._program:RunProgram" in _paths("subagent_program")
    assert "ptcflow.strategies._ptc:PTC" in _paths("agent_as_tool")


@pytest.mark.parametrize("case", CASES)
async def test_a_recorded_history_replays_with_the_current_code(case: str) -> None:
    histories = _load(case)
    expected = {"agent_as_tool": 4, "continued_subagent": 3, "continued_react": 2}.get(case, 1)
    assert len(histories) == expected
    assert await check_determinism(histories) == expected
