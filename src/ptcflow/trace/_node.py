"""One bar of the mission tree: a run, a turn, a model call, a program or a tool call."""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

__all__ = ("KINDS", "STATUSES", "Node")

Kind = Literal["run", "turn", "llm", "program", "tool"]
Status = Literal["running", "ok", "error", "cancelled", "waiting", "paused"]

KINDS: Final = ("run", "turn", "llm", "program", "tool")
"""The kinds of node, outermost first."""
STATUSES: Final = ("running", "ok", "error", "cancelled", "waiting", "paused")
"""A node's status: still going, succeeded, failed (or answered with an error), cancelled;
a call (a program, a turn) that waits for a person's decision, a run paused until then."""


class Node(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One bar of the waterfall, as folded from the signals so far (updated in place).

    Attributes:
        id: unique in the mission: the run id for a run, ``"{run_id}|turn/{n}"`` for a
            turn, ``"{run_id}|{call_id}"`` for a call (model call, program, tool).
        kind: ``run``, ``turn``, ``llm``, ``program`` or ``tool``.
        name: the agent (runs), ``turn N``, the model, ``program N`` or the tool's name.
        run_id: the run it belongs to (a run: itself).
        parent: the enclosing node's id (``None`` for a top-level run). A child run's
            parent is the tool call that started it.
        call_id: the directive id for calls.
        depth: nesting level (a top-level run is 0).
        start_ms: Unix milliseconds when it started (see :mod:`ptcflow.trace` for how
            starts that no signal reports are inferred).
        end_ms: when it ended (``None`` while running; a paused run: when it paused).
        status: ``running``, ``ok``, ``error`` or ``cancelled``; ``waiting`` for a call
            that waits for a person's decision (and what holds it), ``paused`` for a run
            that stopped until then (``docs/approvals.md``).
        attempts: attempts the directive took (``> 1``: it was retried).
        input_tokens: model tokens read (a run: its total).
        output_tokens: model tokens written (a run: its total).
        cache_read_tokens: input tokens of a model call read from the prompt cache;
            ``cache_write_tokens`` written to it.
        model: the model of a model call.
        error: ``"type: message"`` (or a program error's description) when it failed.
        children: ids of the nodes inside it, in order of appearance.
        detail: what the page's detail panel shows, as JSON-safe data (already redacted).
    """

    id: str
    kind: Kind
    name: str
    run_id: str
    parent: str | None = None
    call_id: str | None = None
    depth: int = 0
    start_ms: float = 0.0
    end_ms: float | None = None
    status: Status = "running"
    attempts: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model: str = ""
    error: str | None = None
    children: list[str] = []
    detail: dict[str, Any] = {}

    @property
    def duration_ms(self) -> float | None:
        """``end_ms - start_ms`` once it ended."""
        return None if self.end_ms is None else max(0.0, self.end_ms - self.start_ms)

    def to_json(self) -> dict[str, Any]:
        """The compact form the page reads (short keys, defaults left out).

        Example:
            >>> Node(id="r1", kind="run", name="planner", run_id="r1").to_json()
            {'id': 'r1', 'k': 'run', 'n': 'planner', 'r': 'r1', 'st': 'running', 's': 0.0}
        """
        out: dict[str, Any] = {
            "id": self.id,
            "k": self.kind,
            "n": self.name,
            "r": self.run_id,
            "st": self.status,
            "s": self.start_ms,
        }
        if self.parent is not None:
            out["p"] = self.parent
        if self.end_ms is not None:
            out["e"] = self.end_ms
        if self.attempts != 1:
            out["a"] = self.attempts
        if self.input_tokens or self.output_tokens:
            out["ti"], out["to"] = self.input_tokens, self.output_tokens
        if self.model:
            out["m"] = self.model
        if self.error is not None:
            out["err"] = self.error
        if self.detail:
            out["d"] = self.detail
        return out
