"""Conversations that outlive a run: message history, sessions and their stores.

A run continues a conversation with ``history=`` (the messages so far, e.g. an earlier
``step.messages``) or ``session=`` (a :class:`Session`, loaded before the run and appended
to after it). Stores: :class:`MemoryStore` (the default), :class:`SQLiteStore` (a file),
:class:`PostgresStore` (a server shared by replicas). See docs/conversations.md.
"""

from __future__ import annotations

from ptcflow.sessions._errors import (
    CorruptTurnError as CorruptTurnError,
    SessionConflictError as SessionConflictError,
    SessionError as SessionError,
    StoreUnavailableError as StoreUnavailableError,
)
from ptcflow.sessions._filters import remove_all_tools as remove_all_tools
from ptcflow.sessions._history import check_history as check_history
from ptcflow.sessions._postgres import PostgresStore as PostgresStore
from ptcflow.sessions._session import Session as Session
from ptcflow.sessions._sqlite import SQLiteStore as SQLiteStore
from ptcflow.sessions._store import (
    MemoryStore as MemoryStore,
    SessionStore as SessionStore,
    Turn as Turn,
)

__all__ = (
    "CorruptTurnError",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "Session",
    "SessionConflictError",
    "SessionError",
    "SessionStore",
    "StoreUnavailableError",
    "Turn",
    "check_history",
    "remove_all_tools",
)
