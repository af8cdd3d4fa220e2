"""Run ptcflow agents on Temporal: the same strategies as durable workflows across machines.

``async with TemporalRuntime(tools=[add]) as rt: step = await rt.run(ReAct(), "2 + 3?")``
runs the strategy as a ``ptcflow.run`` workflow whose body drives the same run core as the
local Runtime; each side-effect directive is an activity performed by a ``ptcflow worker``
with the local executor's code; ``RunChild`` directives, and calls of agents used as tools
(a mission), are child workflows. Needs
``ptcflow[temporal]``. See docs/temporal.md.
"""

from __future__ import annotations

from ptcflow.temporal._client import (
    TemporalRunHandle as TemporalRunHandle,
    TemporalRuntime as TemporalRuntime,
)
from ptcflow.temporal._command import (
    add_worker_command as add_worker_command,
    run_worker_command as run_worker_command,
)
from ptcflow.temporal._connect import (
    TemporalUnavailable as TemporalUnavailable,
    connect as connect,
    file_storage as file_storage,
)
from ptcflow.temporal._devserver import (
    DevServer as DevServer,
    temporal_executable as temporal_executable,
)
from ptcflow.temporal._options import TemporalOptions as TemporalOptions
from ptcflow.temporal._replay import (
    NondeterministicRun as NondeterministicRun,
    check_determinism as check_determinism,
)
from ptcflow.temporal._worker import open_worker as open_worker, workflow_runner as workflow_runner

__all__ = (
    "DevServer",
    "NondeterministicRun",
    "TemporalOptions",
    "TemporalRunHandle",
    "TemporalRuntime",
    "TemporalUnavailable",
    "add_worker_command",
    "check_determinism",
    "connect",
    "file_storage",
    "open_worker",
    "run_worker_command",
    "temporal_executable",
    "workflow_runner",
)
