"""The JSON-mode strategy: one structured answer per turn, tools called natively.

Start at ``_strategy.py`` (:class:`JsonAgent`, :class:`JsonState`: the ReAct loop wrapped
to check a JSON answer), then ``_trace.py`` (:class:`JsonCall`, the turn trace).
"""

from __future__ import annotations

from ptcflow.strategies.json_agent._strategy import JsonAgent as JsonAgent, JsonState as JsonState
from ptcflow.strategies.json_agent._trace import JsonCall as JsonCall

__all__ = ("JsonAgent", "JsonCall", "JsonState")
