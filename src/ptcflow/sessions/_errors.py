"""What a session or its store raises."""

from __future__ import annotations

from ptcflow.errors import PtcflowError

__all__ = (
    "CorruptTurnError",
    "SessionConflictError",
    "SessionError",
    "SessionReplayError",
    "StoreUnavailableError",
)


class SessionError(PtcflowError):
    """Base of the errors a session or its store raises.

    Attributes:
        session_id: the session concerned.
    """

    def __init__(self, message: str, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.step: object | None = None
        """The run's :class:`~ptcflow.runtime.Step` when the error ends a session's run
        (the run finished; storing its turn failed)."""


class SessionConflictError(SessionError):
    """Another run appended turn ``turn`` of the session first (in another process, or
    through another store object): this run's turn was not stored. Load the session again
    and retry the run.

    Attributes:
        turn: the turn number both runs wanted.
    """

    def __init__(self, message: str, session_id: str, turn: int) -> None:
        super().__init__(message, session_id)
        self.turn = turn


class CorruptTurnError(SessionError):
    """A stored turn cannot be read (bad bytes, a wrong shape, or a turn missing before
    later ones). Nothing is deleted: fork the session before ``turn`` to go on.

    Attributes:
        turn: the turn that cannot be read.
    """

    def __init__(self, message: str, session_id: str, turn: int) -> None:
        super().__init__(message, session_id)
        self.turn = turn


class StoreUnavailableError(SessionError):
    """The store could not be reached (the database went away, a connection broke). What
    was stored before stays stored; the operation can be retried once the store is back.

    Attributes:
        retryable: always true.
    """

    retryable = True


class SessionReplayError(SessionError):
    """Replaying a session (:func:`ptcflow.runtime.replay_session`) did not give what
    turn ``turn`` stored: the agent replayed is not the one that ran (its prompt,
    signature or options changed), or the turn has no journal to replay. Nothing stored
    is changed.

    Attributes:
        turn: the first turn that replays differently.
        run_id: the run that wrote it.
        step: the replayed Step of that turn, when one was rebuilt.
    """

    def __init__(self, message: str, session_id: str, turn: int, run_id: str) -> None:
        super().__init__(message, session_id)
        self.turn = turn
        self.run_id = run_id
