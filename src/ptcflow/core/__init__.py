"""The sans-I/O run core: the one API every driver shares, and what strategies are.

Start here: ``_core.py`` (:class:`RunCore`) is the centre. It folds a run's signals into
its strategy and decides everything that needs no event loop; a driver calls its events
and carries out the work they hand out (``docs/runtime.md``, "Writing a driver"). Around
it: ``_flight.py`` (:class:`Flight`, the record of one directive), ``_terminals.py`` (which
signals end each directive), ``_step.py`` (:class:`Step`, how a run ended),
``_protocol.py`` (:class:`Strategy`, :class:`RunInfo`, :class:`Outcome`: what a strategy
is), ``_trace.py`` (the records a SubAgent's Step carries), ``_run_errors.py`` (the
errors the core itself gives).

Drivers (the local runtime, the Temporal workflow, a test's) and strategies import these
names from here, never from the private modules. The core imports nothing of the
runtime, the strategies or the agents.
"""

from __future__ import annotations

from ptcflow.core._core import RunCore as RunCore
from ptcflow.core._flight import Flight as Flight, cancelled as cancelled
from ptcflow.core._fold import Folds as Folds
from ptcflow.core._pause import (
    MAX_JOURNAL_BYTES as MAX_JOURNAL_BYTES,
    PAUSE_VERSION as PAUSE_VERSION,
    AlreadyDecidedError as AlreadyDecidedError,
    Approve as Approve,
    Decision as Decision,
    Deny as Deny,
    NotPausedError as NotPausedError,
    Parked as Parked,
    PausedRun as PausedRun,
    PauseInUseError as PauseInUseError,
    PauseMismatchError as PauseMismatchError,
    Rebuilt as Rebuilt,
    ResumeError as ResumeError,
    Supply as Supply,
    TamperedPauseError as TamperedPauseError,
    UnknownCallError as UnknownCallError,
    WrongDecisionError as WrongDecisionError,
    journal_lines as journal_lines,
    journal_of as journal_of,
    open_programs as open_programs,
    rebuild as rebuild,
)
from ptcflow.core._protocol import (
    Outcome as Outcome,
    RunInfo as RunInfo,
    Strategy as Strategy,
    Transition as Transition,
    run_info_of as run_info_of,
)
from ptcflow.core._step import (
    Step as Step,
    step_agent as step_agent,
    step_details as step_details,
    step_memory as step_memory,
    step_messages as step_messages,
    step_parts as step_parts,
    step_summary as step_summary,
)
from ptcflow.core._terminals import (
    TerminalTable as TerminalTable,
    journal_safe as journal_safe,
    tool_name_of as tool_name_of,
    tool_terminal as tool_terminal,
)
from ptcflow.core._trace import (
    ExecutionTrace as ExecutionTrace,
    ProgramTrace as ProgramTrace,
    PromptTrace as PromptTrace,
    StepFail as StepFail,
    TokenCounts as TokenCounts,
    ToolCallTrace as ToolCallTrace,
    Trace as Trace,
    TurnTrace as TurnTrace,
)

__all__ = (
    "MAX_JOURNAL_BYTES",
    "PAUSE_VERSION",
    "AlreadyDecidedError",
    "Approve",
    "Decision",
    "Deny",
    "ExecutionTrace",
    "Flight",
    "Folds",
    "NotPausedError",
    "Outcome",
    "Parked",
    "PauseInUseError",
    "PauseMismatchError",
    "PausedRun",
    "ProgramTrace",
    "PromptTrace",
    "Rebuilt",
    "ResumeError",
    "RunCore",
    "RunInfo",
    "Step",
    "StepFail",
    "Strategy",
    "Supply",
    "TamperedPauseError",
    "TerminalTable",
    "TokenCounts",
    "ToolCallTrace",
    "Trace",
    "Transition",
    "TurnTrace",
    "UnknownCallError",
    "WrongDecisionError",
    "cancelled",
    "journal_lines",
    "journal_of",
    "journal_safe",
    "open_programs",
    "rebuild",
    "run_info_of",
    "step_agent",
    "step_details",
    "step_memory",
    "step_messages",
    "step_parts",
    "step_summary",
    "tool_name_of",
    "tool_terminal",
)
