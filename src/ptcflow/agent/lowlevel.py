"""The agents' low-level face: what another driver of agent runs (the Temporal workflow)
builds on, as :mod:`ptcflow.runtime.lowlevel` is for the runtime.

A mission's bookkeeping (:class:`Mission`, each run's :class:`Lineage`, the providers
that count a mission's turns: :class:`BudgetedLLM`, and :func:`attach_children`, which puts the children's Steps in a run's trace), the result an
agent call gives its caller (:func:`call_result`), a handoff's history, limit and
result (:func:`filtered_history`, :func:`past_max_handoffs`, :func:`handoff_result`) and the context an agent run starts
from (:func:`resolve_context`). Users of agents need none of this: :mod:`ptcflow.agent`
is theirs.
"""

from __future__ import annotations

from ptcflow.agent._as_tool import call_result as call_result
from ptcflow.agent._handoff import (
    HandoffCall as HandoffCall,
    filtered_history as filtered_history,
    handoff_result as handoff_result,
    past_max_handoffs as past_max_handoffs,
    transfer_note as transfer_note,
    unknown_agent as unknown_agent,
)
from ptcflow.agent._mission import (
    BudgetedLLM as BudgetedLLM,
    Lineage as Lineage,
    Mission as Mission,
    attach_children as attach_children,
)
from ptcflow.agent._plan import resolve_context as resolve_context

__all__ = (
    "BudgetedLLM",
    "HandoffCall",
    "Lineage",
    "Mission",
    "attach_children",
    "call_result",
    "filtered_history",
    "handoff_result",
    "past_max_handoffs",
    "resolve_context",
    "transfer_note",
    "unknown_agent",
)
