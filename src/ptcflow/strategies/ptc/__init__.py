"""The PTC strategy: the SubAgent loop of one PTC-Lisp program per turn.

Start at ``_strategy.py`` (:class:`PTC`: the model's side of a turn and the transitions
table), then ``_turns.py`` (the program's result: the next turn or the end), ``_state.py``
(:class:`PtcState`, :class:`PtcTurn`), ``_prompt.py`` (the system prompt and the data
inventory), ``_feedback.py`` (what the model is told after a turn), ``_preview.py``
(values as PTC-Lisp text, bounded) and ``_outcome.py`` (the outcome and the turn trace).
The agent, trace and testing packages import these names from here.
"""

from __future__ import annotations

from ptcflow.strategies._subagent import (
    check_fail as check_fail,
    check_return as check_return,
)
from ptcflow.strategies.ptc._feedback import PromptLimit as PromptLimit
from ptcflow.strategies.ptc._preview import clj as clj, preview as preview
from ptcflow.strategies.ptc._prompt import (
    ToolInfo as ToolInfo,
    example_call as example_call,
    example_value as example_value,
    static_prompt as static_prompt,
)
from ptcflow.strategies.ptc._state import PtcState as PtcState, PtcTurn as PtcTurn
from ptcflow.strategies.ptc._strategy import PTC as PTC

__all__ = (
    "PTC",
    "PromptLimit",
    "PtcState",
    "PtcTurn",
    "ToolInfo",
    "check_fail",
    "check_return",
    "clj",
    "example_call",
    "example_value",
    "preview",
    "static_prompt",
)
