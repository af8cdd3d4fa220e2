"""Tools: Python functions a model can call.

Build a :class:`Tool` from a function with :func:`tool` (name, description, argument
docs and JSON Schema are inferred from the function), collect an agent's tools with
:func:`for_agent`, describe them to a model with :func:`render_tool_catalog` or
:func:`tool_definitions`, and run a model's :class:`ToolCall` with :func:`dispatch` (or
one call of a known tool, the fast way, with :func:`call_tool`).

Example:
    >>> import anyio
    >>> from ptcflow.tools import ToolCall, dispatch, for_agent, tool
    >>> @tool
    ... def add(x: int, y: int) -> int:
    ...     '''Add two integers and return the sum.'''
    ...     return x + y
    >>> tools = for_agent([add])
    >>> anyio.run(dispatch, tools, ToolCall(id="call_1", name="add", input={"x": 2, "y": 3}))
    ToolResult(id='call_1', output=5, is_error=False, name='add', warnings=(), effects=())
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

from ptcflow.tools._call import RunSync as RunSync, call_tool as call_tool
from ptcflow.tools._catalog import (
    describe_tool as describe_tool,
    render_tool_catalog as render_tool_catalog,
    render_tool_signature as render_tool_signature,
    schema_from_function as schema_from_function,
    tool_definitions as tool_definitions,
)
from ptcflow.tools._decorator import tool as tool
from ptcflow.tools._dispatch import dispatch as dispatch, dispatch_sync as dispatch_sync
from ptcflow.tools._docstrings import DocInfo as DocInfo, parse_docstring as parse_docstring
from ptcflow.tools._introspect import callable_name as callable_name
from ptcflow.tools._messages import (
    ToolCall as ToolCall,
    ToolContext as ToolContext,
    ToolDefinition as ToolDefinition,
    ToolResult as ToolResult,
)
from ptcflow.tools._registry import (
    RESERVED_TOOL_NAMES as RESERVED_TOOL_NAMES,
    ToolSource as ToolSource,
    find_by_name as find_by_name,
    for_agent as for_agent,
)
from ptcflow.tools._tool import TOOL_NAME_RE as TOOL_NAME_RE, Tool as Tool

__all__ = (
    "RESERVED_TOOL_NAMES",
    "TOOL_NAME_RE",
    "DocInfo",
    "RunSync",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolResult",
    "ToolSource",
    "call_tool",
    "callable_name",
    "describe_tool",
    "dispatch",
    "dispatch_sync",
    "find_by_name",
    "for_agent",
    "parse_docstring",
    "render_tool_catalog",
    "render_tool_signature",
    "schema_from_function",
    "tool",
    "tool_definitions",
)

# Names that moved out of this package, each with the module that now holds it. Reading one
# still works for one release, with a DeprecationWarning naming the new spelling (trio's
# ``__deprecated_attributes__``). The new home is named by a string and imported only when
# the old name is read: ``tools`` is a leaf, and ``ptcflow.mcp`` is built on top of it.
_MOVED: dict[str, str] = {"from_mcp_server": "ptcflow.mcp"}


def _moved_attribute(name: str) -> object:
    """Resolve a name that moved away (see ``_MOVED``), warning that it did."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ptcflow.tools.{name} is deprecated and will be removed in the next release: "
        f"use {home}.{name} instead (from {home} import {name})",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


# The module-level ``__getattr__`` is hidden from type checkers, so that they keep reporting
# unknown names of this module (the old spelling included) instead of typing them all Any.
if not TYPE_CHECKING:
    __getattr__ = _moved_attribute
