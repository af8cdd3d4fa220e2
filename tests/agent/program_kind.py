"""A stand-in for the runtime's program kind, for end-to-end SubAgent tests in PTC mode.

The runtime does not perform ``RunProgram`` yet (its program kind lands with the runtime
rewrite, on ``ctx.call_tool``). Until then these tests register this handler with
``Runtime(handlers={RunProgram: ...})``: it runs the program with
:func:`ptcflow.directives.perform_program`, each call through
:func:`ptcflow.tools.call_tool`, and returns the output, which the runtime publishes as the
directive's ``ai.tool.result`` (the PTC strategy reads it as the program's result).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ptcflow.directives import RunProgram, perform_program
from ptcflow.runtime import DirectiveContext, Runtime
from ptcflow.signals import Err, ErrorEnvelope, Ok, ProgramOutput
from ptcflow.tools import Tool, call_tool, for_agent

Handler = Callable[[RunProgram, DirectiveContext], Awaitable[ProgramOutput]]


def program_handler(tools: Any = None) -> Handler:
    """A ``RunProgram`` handler calling ``tools`` (anything ``for_agent`` accepts; default:
    the run's own tools)."""
    table: Mapping[str, Tool] | None = for_agent(tools) if tools is not None else None

    async def handle(directive: RunProgram, ctx: DirectiveContext) -> ProgramOutput:
        run_tools = table if table is not None else ctx.run.tools.tools

        async def call(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
            tool = run_tools.get(name)
            if tool is None:
                return Err(error=ErrorEnvelope.make("unknown_tool", f"no tool {name!r}"))
            return await call_tool(tool, f"{directive.id}/tool/{index}", args)

        return await perform_program(directive, call)

    return handle


def patched_runtime() -> type[Runtime]:
    """A Runtime class that registers the stand-in for every instance (for doc examples)."""

    class WithPrograms(Runtime):
        def __init__(self, **options: Any) -> None:
            handlers = dict(options.pop("handlers", None) or {})
            handlers.setdefault(RunProgram, program_handler())
            super().__init__(handlers=handlers, **options)

    return WithPrograms
