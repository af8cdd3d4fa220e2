"""Rebuild a strategy's state from the signals of a run (its journal)."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter
from typing import TypeVar

from ptcflow.core import Folds, run_info_of
from ptcflow.errors import UsageError
from ptcflow.signals import REQUEST_STARTED, Signal, ToolSpec

__all__ = ("replay",)

S = TypeVar("S")
_SEQ = attrgetter("seq")


def replay(
    strategy: Folds[S],
    signals: Iterable[Signal],
    *,
    tools: tuple[ToolSpec, ...] | None = None,
    run_id: str | None = None,
) -> S:
    """Feed a run's signals to ``strategy`` and return the state it ends in.

    The first ``ai.request.started`` signal starts the run: the strategy is initialised
    from a :class:`RunInfo` built from it (``run_id``, ``request_id``, ``parent_run_id``,
    ``data.input``). Every later signal of the same run is folded through
    ``strategy.handle`` in ``seq`` order, exactly as the runtime fed them, so the result
    equals the live run's final state (the history, its compaction and a summarizing
    model call included: the summary is read from the journal, no model is called). Signals of other runs (child agents) are skipped.
    The directives the strategy returns are discarded: nothing is performed again.

    Args:
        strategy: the strategy the run used, configured the same way.
        signals: the journal of the run (any order; sorted by ``seq`` here).
        tools: the tool specs the run had; defaults to ``data.tools`` of the start signal
            when it records them, else none.
        run_id: the run to replay when the signals hold several top-level runs.

    Returns:
        The final state.

    Raises:
        UsageError: the signals hold no ``ai.request.started`` (of ``run_id``), or they
            hold several top-level runs and ``run_id`` does not say which (the message
            lists them).

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> from ptcflow.signals import RequestStartedData
        >>> start = Signal.create("ai.request.started", RequestStartedData(input="hi"),
        ...                       run_id="r1", seq=1)
        >>> replay(ReAct(), [start]).status
        'awaiting_llm'
    """
    ordered = list(signals)
    starts = [s for s in ordered if s.type == REQUEST_STARTED]
    if run_id is not None:
        starts = [s for s in starts if s.run_id == run_id]
    else:
        runs = {s.run_id for s in starts}
        starts = [s for s in starts if s.parent_run_id is None or s.parent_run_id not in runs]
        top = list(dict.fromkeys(s.run_id for s in starts))  # a busy run is asked twice
        if len(top) > 1:
            listed = ", ".join(repr(run) for run in top[:10])
            raise UsageError(
                f"replay() got the signals of {len(top)} runs ({listed}); pass "
                "run_id=... to say which one to replay"
            )
    if not starts:
        which = f" of run {run_id!r}" if run_id is not None else ""
        raise UsageError(
            f"replay() needs the ai.request.started signal{which} to initialise the "
            "strategy; pass the whole journal of the run (read it with the journal reader)"
        )
    start = starts[0]
    if tools is None:
        recorded = getattr(start.data, "tools", None)
        tools = tuple(recorded) if recorded else ()
    run = run_info_of(start, tools)
    state, _ = strategy.init(run)
    run_id = start.run_id
    later = [s for s in ordered if s.run_id == run_id and s is not start]
    later.sort(key=_SEQ)  # stable: signals with equal seq keep their journal order
    handle = strategy.handle
    for signal in later:
        state, _ = handle(state, signal)
    return state
