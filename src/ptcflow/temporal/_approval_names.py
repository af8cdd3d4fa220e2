"""The names a client and a ``ptcflow.run`` workflow share for calls that wait for a person
(no ``temporalio`` import: the client side imports this without the workflow code)."""

from __future__ import annotations

from typing import Final

__all__ = ("DECIDE_UPDATE", "PENDING_MEMO", "PENDING_QUERY")

PENDING_QUERY: Final = "ptcflow.pending"
"""The query listing a run's calls that wait for a decision."""
PENDING_MEMO: Final = "ptcflow.pending"
"""The memo key holding the same list (read without a worker)."""
DECIDE_UPDATE: Final = "ptcflow.decide"
"""The update that decides waiting calls: ``{call_id: Approve() | Deny(...) | Supply(...)}``."""
