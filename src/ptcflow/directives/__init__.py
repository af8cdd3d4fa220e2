"""Directives: the side effects a strategy asks for, as frozen tagged structs."""

from __future__ import annotations

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
from ptcflow.directives._program import (
    ProgramRouter as ProgramRouter,
    RunProgram as RunProgram,
    perform_program as perform_program,
    plain_value as plain_value,
)
from ptcflow.program._memory import ProgramCache as ProgramCache

__all__ = (
    "RESERVED_CONTEXT_KEY",
    "Directive",
    "EmitRequestError",
    "EmitToolError",
    "LLMEmbed",
    "LLMGenerate",
    "LLMStream",
    "ProgramCache",
    "ProgramRouter",
    "RunChild",
    "RunProgram",
    "ToolExec",
    "perform_program",
    "plain_value",
)
