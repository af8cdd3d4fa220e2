"""The ReAct strategy: native tool calling.

Start at ``_strategy.py`` (:class:`ReAct`), then ``_state.py`` (:class:`ReActState`,
:class:`PendingCall`) and ``_tools.py`` (the tool calls of one model response).
"""

from __future__ import annotations

from ptcflow.strategies.react._state import PendingCall as PendingCall, ReActState as ReActState
from ptcflow.strategies.react._strategy import ReAct as ReAct

__all__ = ("PendingCall", "ReAct", "ReActState")
