"""The agents' low-level face: what another driver of agent runs (the Temporal workflow)
builds on, as :mod:`ptcflow.runtime.lowlevel` is for the runtime.

A mission's bookkeeping (:class:`Mission`, each run's :class:`Lineage`, the providers
that count a mission's turns: :class:`BudgetedLLM`, and :func:`attach_children`, which puts the children's Steps in a run's trace), the result an
agent call gives its caller (:func:`call_result`) and the context an agent run starts
from (:func:`resolve_context`). Users of agents need none of this: :mod:`ptcflow.agent`
is theirs.
"""

from __future__ import annotations

from ptcflow.agent._as_tool import call_result as call_result
from ptcflow.agent._mission import (
    BudgetedLLM as BudgetedLLM,
    Lineage as Lineage,
    Mission as Mission,
    attach_children as attach_children,
)
from ptcflow.agent._plan import resolve_context as resolve_context

__all__ = (
    "BudgetedLLM",
    "Lineage",
    "Mission",
    "attach_children",
    "call_result",
    "resolve_context",
)
