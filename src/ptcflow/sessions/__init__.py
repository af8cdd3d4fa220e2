"""Conversations that outlive a run: message history, sessions and their stores.

A run continues a conversation with ``history=`` (the messages so far, e.g. an earlier
``step.messages``) or ``session=`` (a :class:`Session`, loaded before the run and appended
to after it). Stores: :class:`MemoryStore` (the default), :class:`SQLiteStore` (a file),
:class:`PostgresStore` (a server shared by replicas). :class:`Compaction` shrinks what a
long conversation sends to the model. See docs/conversations.md.
"""

from __future__ import annotations

from ptcflow.sessions._compaction import (
    SUMMARY_PROMPT as SUMMARY_PROMPT,
    CompactionPlan as CompactionPlan,
    compacted_history as compacted_history,
    estimate_tokens as estimate_tokens,
    history_digest as history_digest,
    plan_compaction as plan_compaction,
    summary_message as summary_message,
)
from ptcflow.sessions._errors import (
    CorruptTurnError as CorruptTurnError,
    SessionConflictError as SessionConflictError,
    SessionError as SessionError,
    SessionReplayError as SessionReplayError,
    StoreUnavailableError as StoreUnavailableError,
)
from ptcflow.sessions._filters import remove_all_tools as remove_all_tools
from ptcflow.sessions._history import check_history as check_history
from ptcflow.sessions._postgres import PostgresStore as PostgresStore
from ptcflow.sessions._session import Session as Session, last_summary as last_summary
from ptcflow.sessions._sqlite import SQLiteStore as SQLiteStore
from ptcflow.sessions._store import (
    MemoryStore as MemoryStore,
    SessionStore as SessionStore,
    Turn as Turn,
    conversation_of as conversation_of,
    turn_journal as turn_journal,
)
from ptcflow.signals import Compaction as Compaction, Summary as Summary

__all__ = (
    "SUMMARY_PROMPT",
    "Compaction",
    "CompactionPlan",
    "CorruptTurnError",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "Session",
    "SessionConflictError",
    "SessionError",
    "SessionReplayError",
    "SessionStore",
    "StoreUnavailableError",
    "Summary",
    "Turn",
    "check_history",
    "compacted_history",
    "conversation_of",
    "estimate_tokens",
    "history_digest",
    "last_summary",
    "plan_compaction",
    "remove_all_tools",
    "summary_message",
    "turn_journal",
)
