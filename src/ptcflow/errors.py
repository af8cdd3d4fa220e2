"""The exception tree of ptcflow, grouped by who each error is for.

::

    PtcflowError                  base of everything ptcflow raises on purpose
    ├── UsageError                you called ptcflow wrongly; raised at once, fix your code
    │   ├── ConfigError           a configuration value is invalid (limits, retry, models)
    │   └── SignatureError        a signature text does not parse   (ptcflow.signature)
    ├── ProgramError              a PTC-Lisp program is wrong; the model reads the message
    │                             (subclasses live in ptcflow.lisp)
    ├── RunError                  a run ended in failure; carries the ErrorEnvelope
    └── InternalError             a bug in ptcflow itself: please file an issue

Failures that happen *inside* a run (a tool raised, the model timed out) are not raised at
all: they travel as :class:`ptcflow.signals.ErrorEnvelope` values on signals and end the run
with a failed ``Step``. Only the synchronous helpers that must return a value (``run_sync``,
``Step.unwrap()``) turn a failed run into a :class:`RunError`.
"""

from __future__ import annotations

__all__ = (
    "ConfigError",
    "InternalError",
    "ProgramError",
    "PtcflowError",
    "RunError",
    "UsageError",
)


class PtcflowError(Exception):
    """Base class of every exception ptcflow raises on purpose."""


class UsageError(PtcflowError, ValueError):
    """ptcflow was called wrongly: the message says what, where, and how to fix it."""


class ConfigError(UsageError):
    """A configuration value (limits, retry policy, model registry) is invalid."""


class ProgramError(PtcflowError):
    """A program written by a model is wrong; the message is written for the model."""


class RunError(PtcflowError):
    """A run ended in failure.

    Args:
        message: a one-line summary.
        error: the run's :class:`ptcflow.signals.ErrorEnvelope`, when there is one.
    """

    def __init__(self, message: str, error: object | None = None) -> None:
        super().__init__(message)
        self.error = error


class InternalError(PtcflowError):
    """A bug in ptcflow itself. Please report it with the traceback."""
