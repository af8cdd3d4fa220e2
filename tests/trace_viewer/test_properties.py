"""Properties: the tree does not depend on the order signals arrive in; redaction's fast path
gives what ``sanitize`` gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from ptcflow.signals import read_journal, sanitize
from ptcflow.trace import Mission, Redactor

from .support import JOURNAL

SIGNALS = read_journal(JOURNAL)
SHAPE = sorted((n.id, n.kind, n.parent) for n in Mission.from_signals(SIGNALS).nodes.values())


@given(st.permutations(range(len(SIGNALS))))
def test_the_tree_is_the_same_whatever_order_the_signals_come_in(order: list[int]) -> None:
    mission = Mission.from_signals(SIGNALS[i] for i in order)
    assert sorted((n.id, n.kind, n.parent) for n in mission.nodes.values()) == SHAPE
    assert mission.ended


KEYS = st.sampled_from(["query", "api_key", "password", "user", "x", "session_token", "ok"])
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.text(min_size=4_000, max_size=4_002),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(KEYS | st.text(max_size=5), inner, max_size=5)
        | st.tuples(inner)
    ),
    max_leaves=30,
)


@given(VALUES)
def test_redaction_equals_sanitize(value: Any) -> None:
    assert repr(Redactor().value(value)) == repr(sanitize(value))
