"""``Mission.add`` gives what the fold gave before it was made faster (2026-11-28): the same nodes
(``to_json`` of each in ``walk`` order), roots, first and last times, and the same nodes
returned by each ``add``, in order, after every signal of varied recorded runs (the expected
outputs in ``data/fold/expected.json``, made by ``make_fold.py`` with the fold as it was
before; a fold changed on purpose regenerates them with ``python -m tests.trace_viewer.make_fold``
and the diff of that file is the change's review); any order, subset or mix of their signals
folds into a consistent tree."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.signals import Signal
from ptcflow.trace import Mission

from .make_fold import EXPECTED, OPTIONS, fold_record, journals

JOURNALS = journals()
EXPECTED_RECORDS: dict[str, Any] = json.loads(EXPECTED.read_bytes())


def test_the_expected_outputs_cover_every_journal_kind_of_node_and_status() -> None:
    assert set(EXPECTED_RECORDS) == {f"{j}/{o}" for j in JOURNALS for o in OPTIONS}
    nodes = [n for record in EXPECTED_RECORDS.values() for n in record["nodes"]]
    shown = {(n["k"], n["st"]) for n in nodes}
    for kind in ("turn", "program", "tool"):
        assert {(kind, "ok"), (kind, "error"), (kind, "cancelled")} <= shown, kind
    assert {("run", "ok"), ("run", "cancelled"), ("llm", "ok"), ("llm", "running")} <= shown
    assert any("pauses" in n.get("d", {}) for n in nodes)  # paused, then resumed
    assert any("approval" in n.get("d", {}) for n in nodes)


@pytest.mark.parametrize("key", sorted(EXPECTED_RECORDS))
def test_each_journal_folds_to_its_expected_outputs_signal_by_signal(key: str) -> None:
    journal, option = key.split("/")
    got = fold_record(Mission, JOURNALS[journal], **OPTIONS[option])
    want = EXPECTED_RECORDS[key]
    for n, (step, expected_step) in enumerate(zip(got["steps"], want["steps"], strict=True)):
        assert step == expected_step, f"{key}: signal {n} ({JOURNALS[journal][n].type})"
    assert json.loads(json.dumps(got)) == want


@st.composite
def mixes(draw: st.DrawFn) -> list[Signal]:
    """Signals of one or two journals: a subset in order, or any signals in any order
    (repeats included)."""
    names = draw(st.lists(st.sampled_from(sorted(JOURNALS)), min_size=1, max_size=2))
    pool = [JOURNALS[name][i] for name in names for i in range(len(JOURNALS[name]))]
    indices = st.integers(0, len(pool) - 1)
    if draw(st.booleans()):
        return [pool[i] for i in sorted(draw(st.sets(indices)))]
    return [pool[i] for i in draw(st.lists(indices, max_size=60))]


@settings(max_examples=150, deadline=None)
@given(mixes(), st.sampled_from(sorted(OPTIONS)))
def test_any_mix_of_signals_folds_into_a_consistent_tree(
    signals: list[Signal], option: str
) -> None:
    mission = Mission(**OPTIONS[option])
    for signal in signals:
        changed = mission.add(signal)
        assert len({id(n) for n in changed}) == len(changed)  # each changed node once
        assert all(mission.nodes[n.id] is n for n in changed)  # and in the tree
    again = Mission.from_signals(signals, **OPTIONS[option])  # the fold is deterministic
    assert [n.to_json() for n in again.walk()] == [n.to_json() for n in mission.walk()]
    walked = list(mission.walk())
    assert len(walked) == len(mission.nodes)  # every node reachable once from the roots
    for node in walked:
        if node.parent is None:
            assert node.id in mission.roots and node.depth == 0
        else:
            parent = mission.nodes[node.parent]
            assert parent.children.count(node.id) == 1
            assert node.depth == parent.depth + 1
    if mission.signals:
        assert mission.first_ms is not None and mission.last_ms is not None
        assert mission.first_ms <= mission.last_ms


def test_a_program_result_folded_twice_adds_its_recorded_calls_once() -> None:
    # found by the mixes above: the same ai.program.result twice (a journal read twice)
    # listed each recorded call twice under its program
    result = next(s for s in JOURNALS["handmade"] if s.type == "ai.program.result")
    once, twice = Mission.from_signals([result]), Mission.from_signals([result, result])
    assert [n.to_json() for n in twice.walk()] == [n.to_json() for n in once.walk()]
    program = twice.nodes[f"{result.run_id}|{result.call_id}"]
    assert len(program.children) == len(set(program.children)) == 1
