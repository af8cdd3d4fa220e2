"""Strategies: pure, deterministic agent state machines, and ReAct.

A strategy turns signals into directives (see :class:`Strategy`). :class:`ReAct` is the
native tool-calling loop; :func:`replay` rebuilds a run's final state from its journal.
"""

from __future__ import annotations

from ptcflow.strategies._protocol import (
    Outcome as Outcome,
    RunInfo as RunInfo,
    Strategy as Strategy,
    Transition as Transition,
)
from ptcflow.strategies._react import ReAct as ReAct
from ptcflow.strategies._react_state import (
    PendingCall as PendingCall,
    ReActState as ReActState,
)
from ptcflow.strategies._replay import replay as replay

__all__ = (
    "Outcome",
    "PendingCall",
    "ReAct",
    "ReActState",
    "RunInfo",
    "Strategy",
    "Transition",
    "replay",
)
