"""The part of the strategy protocol that folds signals (all that replay needs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from ptcflow.core._protocol import RunInfo
from ptcflow.directives import Directive
from ptcflow.signals import Signal

__all__ = ("Folds",)

S = TypeVar("S")


class Folds(Protocol[S]):
    """Anything with a strategy's ``init`` and ``handle`` (a :class:`Strategy` has both)."""

    def init(self, run: RunInfo, /) -> tuple[S, Sequence[Directive]]:
        """Return the first state and directives."""
        ...

    def handle(self, state: S, signal: Signal, /) -> tuple[S, Sequence[Directive]]:
        """Fold one signal into the state."""
        ...
