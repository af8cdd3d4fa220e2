"""Directives: the side effects a strategy asks for, as frozen tagged structs (data only).

Running a ``RunProgram`` is the program host's work: :mod:`ptcflow.program`
(``perform_program``, ``plain_value``, ``ProgramCache``, ``ProgramRouter``). Those four
names still resolve here for one release, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Final

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

# Names that moved to the program host, each read from there for one release with a
# DeprecationWarning naming the new spelling (as ``ptcflow.tools`` does for its moved name).
# The host is named by a string and imported only when an old name is read: ``directives``
# is data, and ``ptcflow.program`` is built on top of it.
_MOVED: Final = frozenset(("ProgramCache", "ProgramRouter", "perform_program", "plain_value"))


def _moved_attribute(name: str) -> object:
    """Resolve a name that moved to :mod:`ptcflow.program`, warning that it did."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ptcflow.directives.{name} moved to ptcflow.program.{name}; import it from "
        "there (the old name goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("ptcflow.program"), name)


# The module-level ``__getattr__`` is hidden from type checkers, so that they keep reporting
# unknown names of this module (the old spelling included) instead of typing them all Any.
if not TYPE_CHECKING:
    __getattr__ = _moved_attribute
