"""Directives: the side effects a strategy asks for, as frozen tagged structs (data only).

Running a ``RunProgram`` is the program host's work: :mod:`ptcflow.program`
(``perform_program``, ``plain_value``, ``ProgramCache``, ``ProgramRouter``). Those four
names still resolve here for one release, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from typing import Any, Final

from ptcflow.directives._base import (
    RESERVED_CONTEXT_KEY as RESERVED_CONTEXT_KEY,
    Directive as Directive,
    EmitRequestError as EmitRequestError,
    EmitToolError as EmitToolError,
    LLMEmbed as LLMEmbed,
    LLMGenerate as LLMGenerate,
    LLMStream as LLMStream,
    RunChild as RunChild,
    ToolExec as ToolExec,
)
from ptcflow.directives._program import RunProgram as RunProgram

__all__ = (
    "RESERVED_CONTEXT_KEY",
    "Directive",
    "EmitRequestError",
    "EmitToolError",
    "LLMEmbed",
    "LLMGenerate",
    "LLMStream",
    "RunChild",
    "RunProgram",
    "ToolExec",
)

_MOVED: Final = frozenset(("ProgramCache", "ProgramRouter", "perform_program", "plain_value"))
"""Names that moved to :mod:`ptcflow.program` (kept here, warning, for one release)."""


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(
            f"ptcflow.directives.{name} moved to ptcflow.program.{name}; import it from "
            "there (the old name goes away in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        import ptcflow.program

        return getattr(ptcflow.program, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
