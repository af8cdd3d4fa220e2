"""The offline demo (``ptcflow demo``): a SubAgent mission, then a ReAct agent, over order
data, on scripted models.

Its pieces are reusable in examples and tests: the tools (plain functions over
``ptcflow/data/orders.json``), the SubAgent and its scripted model, the scripted ReAct
analyst, the agent and the signal view.
"""

from __future__ import annotations

from ptcflow.demo._mission import (
    MISSION_TASK as MISSION_TASK,
    mission_model as mission_model,
    mission_turn as mission_turn,
    revenue_agent as revenue_agent,
    run_mission as run_mission,
)
from ptcflow.demo._model import (
    analyst as analyst,
    demo_model as demo_model,
    question_for as question_for,
)
from ptcflow.demo._run import (
    CUSTOMERS as CUSTOMERS,
    DemoReport as DemoReport,
    demo_agent as demo_agent,
    demo_tools as demo_tools,
    run_demo as run_demo,
)
from ptcflow.demo._tools import (
    convert_currency as convert_currency,
    load_orders as load_orders,
    load_rates as load_rates,
    search_orders as search_orders,
    total as total,
)
from ptcflow.demo._view import render_signal as render_signal

__all__ = (
    "CUSTOMERS",
    "MISSION_TASK",
    "DemoReport",
    "analyst",
    "convert_currency",
    "demo_agent",
    "demo_model",
    "demo_tools",
    "load_orders",
    "load_rates",
    "mission_model",
    "mission_turn",
    "question_for",
    "render_signal",
    "revenue_agent",
    "run_demo",
    "run_mission",
    "search_orders",
    "total",
)
