"""The sans-I/O run core: the one API every driver shares."""

from __future__ import annotations

from ptcflow.core._fold import Folds as Folds

__all__ = ("Folds",)
