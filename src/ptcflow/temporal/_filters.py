"""Handoffs' input filters of your own on Temporal: run on a worker, as a tool is.

A filter is user code, and a workflow runs only deterministic, sandboxed code; so the
workflow sends the conversation to an activity, whose worker imports the filter by its
path (as it imports a tool's function) and calls it: :func:`run_input_filter` is that
activity's tool. The built-in ``ptcflow.sessions.remove_all_tools`` is pure and runs in
the workflow itself.
"""

from __future__ import annotations

from typing import Any

from ptcflow.errors import UsageError
from ptcflow.signals import Message
from ptcflow.temporal._refs import load

__all__ = ("FILTER_TOOL", "run_input_filter")

FILTER_TOOL = "ptcflow_input_filter"
"""The name of the tool call that runs a handoff's input filter on a worker."""


def run_input_filter(filter: str, messages: list[Message]) -> list[Message]:
    """Run the input filter at import path ``filter`` on ``messages`` (on a worker).

    Raises:
        UsageError: the filter returned something that is not a list of messages.
    """
    fn: Any = load(filter)
    out = fn(tuple(messages))
    if isinstance(out, str | bytes | dict) or out is None:
        raise UsageError(f"it returned {type(out).__name__}, not a list of messages")
    kept = list(out)
    for m in kept:
        if not isinstance(m, Message):
            raise UsageError(f"it returned a {type(m).__name__} among the messages")
    return kept
