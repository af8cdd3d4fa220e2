"""See a run: the mission tree of a journal or a live signal stream, as text, as OpenTelemetry
spans, and as a self-contained HTML page (``ptcflow trace show|export|open``)."""

from __future__ import annotations

from ptcflow.trace._mission import Mission as Mission
from ptcflow.trace._node import KINDS as KINDS, STATUSES as STATUSES, Node as Node
from ptcflow.trace._redact import HIDDEN as HIDDEN, Redactor as Redactor

__all__ = ("HIDDEN", "KINDS", "STATUSES", "Mission", "Node", "Redactor")
