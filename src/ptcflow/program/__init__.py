"""The program host: runs a ``RunProgram`` directive (PTC-Lisp in, ``ProgramOutput`` out).

:func:`perform_program` runs the directive's program with a tool router (a runtime passes
its sub-call function; any async code may pass its own) and describes what it did;
:class:`ProgramOptions` carries the rest (the run's :class:`ProgramCache`, a record to
resume from, ...); :func:`plain_value` turns program values into plain JSON data. The
memory kept between turns is read in and written out here (:func:`memory_in`,
:func:`memory_out`), except after a ``return`` that ends the run
(:func:`return_ends_run`, the strategy's own answer). See docs/subagent.md, "The program
directive".

It sits above the directive data and the interpreter (:mod:`ptcflow.directives`,
:mod:`ptcflow.lisp`, which know nothing of it) and below the strategies and runtimes.
"""

from __future__ import annotations

from ptcflow.program._memory import (
    ProgramCache as ProgramCache,
    memory_in as memory_in,
    memory_out as memory_out,
    return_ends_run as return_ends_run,
)
from ptcflow.program._perform import (
    ProgramOptions as ProgramOptions,
    ProgramRouter as ProgramRouter,
    perform_program as perform_program,
    plain_value as plain_value,
)

__all__ = (
    "ProgramCache",
    "ProgramOptions",
    "ProgramRouter",
    "memory_in",
    "memory_out",
    "perform_program",
    "plain_value",
    "return_ends_run",
)
