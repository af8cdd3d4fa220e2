"""Which runs a journal holds, and the signals of one of them (a run and its child runs)."""

from __future__ import annotations

from collections.abc import Iterable

from ptcflow.errors import UsageError
from ptcflow.signals._signal import Signal

__all__ = ("JournalError", "journal_runs", "select_run")


class JournalError(UsageError):
    """A journal cannot be read as asked: the message names the line and the problem, or
    the runs it holds."""


def select_run(
    signals: list[Signal], *, run_id: str | None, all_runs: bool, where: str
) -> list[Signal]:
    """The signals of run ``run_id`` (with its child runs), every signal with
    ``all_runs``, or all of them when they belong to one run.

    Raises:
        JournalError: ``run_id`` is not among them, or they belong to several runs and
            neither ``run_id`` nor ``all_runs`` says which (the message lists them).
    """
    if all_runs:
        return signals
    runs = journal_runs(signals)
    if run_id is None:
        if len(runs) > 1:
            raise JournalError(
                f"{where} holds {len(runs)} runs ({_listed(runs)}); pass run_id=... to read "
                "one of them, or all_runs=True to read every signal"
            )
        return signals
    members = _family(signals, run_id)
    if not members:
        raise JournalError(
            f"{where} has no run {run_id!r}; the runs in it: {_listed(runs) or 'none'}"
        )
    return [s for s in signals if s.run_id in members]


def journal_runs(signals: Iterable[Signal]) -> list[str]:
    """The ids of the top-level runs among ``signals`` (runs whose parent is not among
    them), in order of first appearance.

    Example:
        >>> from ptcflow.signals import Signal
        >>> journal_runs([Signal.create("ai.usage", run_id="a"), Signal.create("ai.usage",
        ...     run_id="b", parent_run_id="a"), Signal.create("ai.usage", run_id="c")])
        ['a', 'c']
    """
    order: dict[str, None] = {}
    parents: dict[str, str] = {}
    for signal in signals:
        if signal.run_id:
            order.setdefault(signal.run_id, None)
            if signal.parent_run_id:
                parents.setdefault(signal.run_id, signal.parent_run_id)
    return [run for run in order if parents.get(run) not in order]


def _family(signals: list[Signal], run_id: str) -> set[str]:
    """``run_id`` and every run descending from it (empty when it is not there)."""
    children: dict[str, set[str]] = {}
    present: set[str] = set()
    for signal in signals:
        if signal.run_id:
            present.add(signal.run_id)
            if signal.parent_run_id:
                children.setdefault(signal.parent_run_id, set()).add(signal.run_id)
    if run_id not in present:
        return set()
    family, todo = {run_id}, [run_id]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in family:
                family.add(child)
                todo.append(child)
    return family


def _listed(runs: list[str], limit: int = 10) -> str:
    shown = ", ".join(repr(r) for r in runs[:limit])
    return shown + (f", ... ({len(runs) - limit} more)" if len(runs) > limit else "")
