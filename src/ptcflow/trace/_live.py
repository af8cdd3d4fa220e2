"""A live mission for a browser: the signals of one run and its child runs, each as a
server-sent event carrying the signal and the mission nodes it changed."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ptcflow.signals import (
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_PAUSED,
    REQUEST_RESUMED,
    Secrets,
    Signal,
    sanitize,
)
from ptcflow.trace._mission import Mission

__all__ = ("LiveMission", "sse_event")

_ENDS = (REQUEST_COMPLETED, REQUEST_FAILED, REQUEST_PAUSED)


def sse_event(event: str, data: Any, *, id: str | None = None) -> bytes:
    """One server-sent event: ``event: {event}`` and ``data:`` (JSON on one line).

    Example:
        >>> sse_event("end", {"status": "ok"})
        b'event: end\\ndata: {"status":"ok"}\\n\\n'
    """
    head = f"id: {id}\n" if id is not None else ""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{head}event: {event}\ndata: {text}\n\n".encode()


class LiveMission:
    """Follow run ``run_id`` (with its child runs) among the signals of a bus.

    :meth:`feed` takes every signal a subscription delivers and returns the event to send
    for the ones of this mission (``None`` for the others): ``event: signal`` with data
    ``{"signal": {...}, "nodes": [...]}``: the signal's fields with its ``data`` redacted
    (``sanitize``: values under secret-looking keys hidden, sizes bounded; known
    ``secrets`` scrubbed) and the mission nodes it changed, in the page's compact form.

    Args:
        run_id: the mission's top-level run.
        secrets: secret values scrubbed from what is sent.

    Example:
        >>> from ptcflow.signals import RequestStartedData
        >>> live = LiveMission("m1")
        >>> live.feed(Signal.create("ai.usage", run_id="other")) is None
        True
        >>> b"event: signal" in live.feed(Signal.create("ai.request.started",
        ...     RequestStartedData(input="hi", agent="bot"), run_id="m1", seq=1))
        True
    """

    __slots__ = ("_prefix", "done", "mission", "run_id", "secrets", "sent")

    def __init__(self, run_id: str, *, secrets: Secrets | None = None) -> None:
        self.run_id = run_id
        self.secrets = secrets if secrets else None
        self.mission = Mission(secrets=secrets)
        self.done = False
        self.sent = 0
        self._prefix = run_id + "/"

    def owns(self, signal: Signal) -> bool:
        """True for a signal of the mission's run or of one of its child runs."""
        run = signal.run_id or ""
        return run == self.run_id or run.startswith(self._prefix)

    def feed(self, signal: Signal) -> bytes | None:
        """The event for ``signal``, or ``None`` when it is not the mission's. Sets
        :attr:`done` once the top-level run has ended, or paused (it waits for a person's
        decision; ``ai.request.resumed`` clears it, the run goes on in the same tree)."""
        if not self.owns(signal):
            return None
        changed = self.mission.add(signal)
        if signal.run_id == self.run_id:
            if signal.type in _ENDS:
                self.done = True
            elif signal.type == REQUEST_RESUMED:
                self.done = False
        envelope = msgspec.to_builtins(signal)
        envelope["data"] = sanitize(envelope.get("data"))
        if self.secrets is not None:
            envelope = self.secrets.scrub_value(envelope)
        self.sent += 1
        payload = {"signal": envelope, "nodes": [node.to_json() for node in changed]}
        return sse_event("signal", payload, id=str(self.sent))

    def status(self) -> str:
        """``running``, or how the top-level run ended (``ok``, ``error``, ``cancelled``),
        or ``paused`` (it waits for decisions on its calls)."""
        root = self.mission.nodes.get(self.run_id)
        return "running" if root is None else root.status
