"""``Recording``: wrap a strategy to see everything it was given and everything it asked for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

from ptcflow.directives import Directive
from ptcflow.signals import Signal
from ptcflow.strategies import Outcome, RunInfo

__all__ = ("Recording",)

S = TypeVar("S")


class _Strategy(Protocol[S]):
    """:class:`~ptcflow.strategies.Strategy` with a read-only ``name`` (frozen configs)."""

    @property
    def name(self) -> str: ...
    def init(self, run: RunInfo, /) -> tuple[S, Sequence[Directive]]: ...
    def handle(self, state: S, signal: Signal, /) -> tuple[S, Sequence[Directive]]: ...
    def outcome(self, state: S, /) -> Outcome | None: ...
    def snapshot(self, state: S, /) -> Any: ...


class Recording(Generic[S]):
    """A strategy wrapper that records its run: the :class:`RunInfo`, every signal handled,
    every directive emitted, and the latest state.

    It behaves exactly like the wrapped strategy, so it can be run on a real Runtime; after
    the run, compare ``replay(recording.strategy, journal, tools=recording.run.tools)``
    with :attr:`state`, or check that each directive got its terminal signal.

    Args:
        strategy: the strategy to wrap.

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> rec = Recording(ReAct())
        >>> _ = rec.init(RunInfo(run_id="r1", input="hi"))
        >>> [d.id for d in rec.directives], rec.state.status
        (['r1/llm/1'], 'awaiting_llm')
    """

    def __init__(self, strategy: _Strategy[S]) -> None:
        self.strategy = strategy
        self.run: RunInfo | None = None
        """The run info ``init`` was called with."""
        self.signals: list[Signal] = []
        """Every signal passed to ``handle``, in order."""
        self.directives: list[Directive] = []
        """Every directive emitted by ``init`` and ``handle``, in order."""
        self._state: S | None = None

    @property
    def name(self) -> str:
        """The wrapped strategy's name."""
        return self.strategy.name

    @property
    def state(self) -> S:
        """The latest state (raises ``LookupError`` before ``init``)."""
        if self._state is None:
            raise LookupError("Recording.state: the strategy has not been initialised yet")
        return self._state

    def init(self, run: RunInfo) -> tuple[S, Sequence[Directive]]:
        """Record ``run`` and delegate."""
        self.run = run
        self._state, directives = self.strategy.init(run)
        self.directives.extend(directives)
        return self._state, directives

    def handle(self, state: S, signal: Signal) -> tuple[S, Sequence[Directive]]:
        """Record ``signal`` and what it produced, and delegate."""
        self.signals.append(signal)
        self._state, directives = self.strategy.handle(state, signal)
        self.directives.extend(directives)
        return self._state, directives

    def outcome(self, state: S) -> Outcome | None:
        """Delegate."""
        return self.strategy.outcome(state)

    def snapshot(self, state: S) -> Any:
        """Delegate."""
        return self.strategy.snapshot(state)
