"""The local runtime's low-level face: for people who write drivers and directive kinds.

What :mod:`ptcflow.runtime` builds on, as ``trio.lowlevel`` is for trio: a run of the
local driver (:class:`LocalRun`, which holds a :class:`~ptcflow.core.RunCore`), the
record each directive is performed with (:class:`DirectiveContext`), the machinery that
performs it (:class:`Performer`, :class:`Executor`, the :class:`Kind` of each directive
class, a custom kind's :class:`Handler`), the run's tools (:class:`Toolbox`) and the loop
that drives a run (:func:`drive`). A driver of its own (a durable workflow, a test's)
starts from :mod:`ptcflow.core` instead; ``docs/runtime.md``, "Writing a driver", says
how. Users of the runtime need none of this: :class:`~ptcflow.runtime.Runtime` is theirs.

These names are public and documented, but they change more often than the user-facing
face: pin the version you build on.
"""

from __future__ import annotations

from ptcflow.runtime._answering import answering_agent as answering_agent
from ptcflow.runtime._approvals import EXPIRED as EXPIRED
from ptcflow.runtime._child import invalid_child_arguments as invalid_child_arguments
from ptcflow.runtime._driver import (
    CANCEL_GRACE_S as CANCEL_GRACE_S,
    drive as drive,
    wait_done as wait_done,
)
from ptcflow.runtime._entry import in_event_loop as in_event_loop
from ptcflow.runtime._executor import Executor as Executor
from ptcflow.runtime._guards import check as check_guards, guard_error as guard_error
from ptcflow.runtime._perform import Performer as Performer
from ptcflow.runtime._plan import plan_of as plan_of, typed_finish as typed_finish
from ptcflow.runtime._run import (
    DirectiveContext as DirectiveContext,
    LocalRun as LocalRun,
    ModelChoice as ModelChoice,
)
from ptcflow.runtime._session_turn import (
    session_turn as session_turn,
)
from ptcflow.runtime._telemetry import (
    attach as attach,
    current_context as current_context,
    detach as detach,
)
from ptcflow.runtime._toolbox import Toolbox as Toolbox
from ptcflow.runtime.kinds._base import Handler as Handler, Kind as Kind

__all__ = (
    "CANCEL_GRACE_S",
    "EXPIRED",
    "DirectiveContext",
    "Executor",
    "Handler",
    "Kind",
    "LocalRun",
    "ModelChoice",
    "Performer",
    "Toolbox",
    "answering_agent",
    "attach",
    "check_guards",
    "current_context",
    "detach",
    "drive",
    "guard_error",
    "in_event_loop",
    "invalid_child_arguments",
    "plan_of",
    "session_turn",
    "typed_finish",
    "wait_done",
)
