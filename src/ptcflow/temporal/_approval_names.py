"""The names a client and a ``ptcflow.run`` workflow share for calls that wait for a person,
and where a decision goes (no ``temporalio`` import: the client side imports this without
the workflow code)."""

from __future__ import annotations

from typing import Final

from ptcflow.signals import PendingCall

__all__ = ("CHILD_WAITS_SIGNAL", "DECIDE_UPDATE", "PENDING_MEMO", "PENDING_QUERY", "route")

PENDING_QUERY: Final = "ptcflow.pending"
"""The query listing a run's calls that wait for a decision."""
PENDING_MEMO: Final = "ptcflow.pending"
"""The memo key holding the same list (read without a worker)."""
DECIDE_UPDATE: Final = "ptcflow.decide"
"""The update that decides waiting calls: ``{call_id: Approve() | Deny(...) | Supply(...)}``."""
CHILD_WAITS_SIGNAL: Final = "ptcflow.child_waits"
"""The signal a child workflow sends its parent when what waits in it changes."""


def route(run_id: str, call: PendingCall) -> tuple[str, str]:
    """Where the decision on ``call``, listed by run ``run_id``, goes: ``(the run that
    waits for it, the call's id there)``; a call of a child run is listed as
    ``"{path of call ids}/{id}"`` and its ``run_id`` is ``{run_id}/{path of call ids}``."""
    prefix = f"{run_id}/"
    if call.run_id.startswith(prefix):
        path = call.run_id[len(prefix) :] + "/"
        if call.call_id.startswith(path):
            return call.run_id, call.call_id[len(path) :]
    return run_id, call.call_id
