"""Strategies: pure, deterministic agent state machines, and ReAct.

A strategy turns signals into directives (see :class:`Strategy`). :class:`ReAct` is the
native tool-calling loop; :class:`PTC` is the SubAgent loop (the model writes PTC-Lisp
programs); :func:`replay` rebuilds a run's final state from its journal.
"""

from __future__ import annotations

from ptcflow.core import (
    ExecutionTrace as ExecutionTrace,
    Outcome as Outcome,
    ProgramTrace as ProgramTrace,
    PromptTrace as PromptTrace,
    RunInfo as RunInfo,
    StepFail as StepFail,
    Strategy as Strategy,
    TokenCounts as TokenCounts,
    ToolCallTrace as ToolCallTrace,
    Trace as Trace,
    Transition as Transition,
    TurnTrace as TurnTrace,
)
from ptcflow.strategies._replay import replay as replay
from ptcflow.strategies.json_agent import (
    JsonAgent as JsonAgent,
    JsonCall as JsonCall,
    JsonState as JsonState,
)
from ptcflow.strategies.ptc import (
    PTC as PTC,
    PromptLimit as PromptLimit,
    PtcState as PtcState,
    PtcTurn as PtcTurn,
    ToolInfo as ToolInfo,
)
from ptcflow.strategies.react import (
    PendingCall as PendingCall,
    ReAct as ReAct,
    ReActState as ReActState,
)

__all__ = (
    "PTC",
    "ExecutionTrace",
    "JsonAgent",
    "JsonCall",
    "JsonState",
    "Outcome",
    "PendingCall",
    "ProgramTrace",
    "PromptLimit",
    "PromptTrace",
    "PtcState",
    "PtcTurn",
    "ReAct",
    "ReActState",
    "RunInfo",
    "StepFail",
    "Strategy",
    "TokenCounts",
    "ToolCallTrace",
    "ToolInfo",
    "Trace",
    "Transition",
    "TurnTrace",
    "replay",
)
