"""The executor's counters: :class:`ExecutorStatistics` (a frozen snapshot) and the live
:class:`Counters` the runtime updates."""

from __future__ import annotations

import msgspec

__all__ = ("Counters", "ExecutorStatistics")


class ExecutorStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of an :class:`~ptcflow.runtime.Executor`'s counters.

    Attributes:
        started: directives accepted (valid or not).
        in_flight: directives accepted and not ended yet (running, or waiting for a limiter).
        max_in_flight: the most directives ever performed at once.
        succeeded: directives whose terminal result was ``Ok``.
        failed: directives whose terminal result was ``Err`` (any type).
        cancelled: failed with type ``cancelled``.
        timed_out: failed with type ``timeout``.
        retries: extra attempts made after retryable failures.
        runs_started: runs started on this executor (child runs included).
        runs_active: runs not finished yet.
        abandoned_threads: worker threads still running a sync tool call that was
            answered already (timed out or cancelled); they keep their slot of
            ``Limits.sync_tool_threads`` until the function returns.
        late_results: results that arrived after their call had been answered (a thread
            that finished after it was abandoned, work that ignored cancellation); dropped.

    Example:
        >>> ExecutorStatistics().in_flight
        0
    """

    started: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    timed_out: int = 0
    retries: int = 0
    runs_started: int = 0
    runs_active: int = 0
    abandoned_threads: int = 0
    late_results: int = 0


class Counters:
    """The live counters behind :class:`ExecutorStatistics` (updated by the runtime)."""

    __slots__ = (
        "cancelled",
        "failed",
        "in_flight",
        "late_results",
        "max_in_flight",
        "retries",
        "runs_active",
        "runs_started",
        "started",
        "succeeded",
        "timed_out",
    )

    def __init__(self) -> None:
        self.started = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.succeeded = 0
        self.failed = 0
        self.cancelled = 0
        self.timed_out = 0
        self.retries = 0
        self.runs_started = 0
        self.runs_active = 0
        self.late_results = 0

    def snapshot(self, *, abandoned_threads: int, late_threads: int) -> ExecutorStatistics:
        """The counters as a frozen :class:`ExecutorStatistics`."""
        return ExecutorStatistics(
            started=self.started,
            in_flight=self.in_flight,
            max_in_flight=self.max_in_flight,
            succeeded=self.succeeded,
            failed=self.failed,
            cancelled=self.cancelled,
            timed_out=self.timed_out,
            retries=self.retries,
            runs_started=self.runs_started,
            runs_active=self.runs_active,
            abandoned_threads=abandoned_threads,
            late_results=self.late_results + late_threads,
        )
