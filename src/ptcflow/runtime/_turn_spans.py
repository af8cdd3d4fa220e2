"""A span per turn, for strategies whose directive ``iteration`` numbers their turns.

A strategy says so with a class attribute (``turn_spans = True``, as the SubAgent's do):
data the runtime reads once per run, not a telemetry call (the strategy stays pure, DD-12).
With tracing on, the directives of iteration *n* then nest under a span ``turn {n}``
(itself under the run's ``invoke_agent`` span), opened with the turn's first directive and
ended once none of its directives is in flight and a later turn has started (or with the
run), so each turn's span covers its own directives' spans.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptcflow.runtime._telemetry import Telemetry

__all__ = ("end_turns", "turn_answered", "turn_context")

Turns = dict[int, list[Any]]
"""``{iteration: [span, otel context, directives not answered yet, telemetry]}``."""


def turn_context(
    tel: Telemetry | None, turns: Turns, iteration: int, *, agent: str, run_id: str, parent: Any
) -> Any:
    """The OTel context of turn ``iteration`` of run ``run_id`` of ``agent`` (its span
    opened under ``parent``, the run's context, with the turn's first directive), counting
    one more directive in it."""
    entry = turns.get(iteration)
    if entry is None:
        assert tel is not None
        span = tel.start_span(
            f"turn {iteration}",
            {
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": run_id,
                "ptcflow.turn": iteration,
            },
            parent,
        )
        entry = turns[iteration] = [span, tel.context_of(span, parent), 0, tel]
    entry[2] += 1
    return entry[1]


def turn_answered(turns: Turns, iteration: int) -> None:
    """A directive of turn ``iteration`` was answered: end the turns that are over (nothing
    of theirs in flight, and a later turn has started)."""
    entry = turns.get(iteration)
    if entry is None:
        return
    entry[2] -= 1
    latest = max(turns)
    for n in [n for n, (_, _, left, _) in turns.items() if left <= 0 and n < latest]:
        span, _, _, tel = turns.pop(n)
        tel.end_plain(span)


def end_turns(turns: Turns) -> None:
    """End every turn span still open (the run is over)."""
    for span, _, _, tel in turns.values():
        tel.end_plain(span)
    turns.clear()
