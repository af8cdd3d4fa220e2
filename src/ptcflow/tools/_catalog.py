"""Describing tools to a model: the prompt catalog and the native tool definitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ptcflow.signature import format_notes, render_type
from ptcflow.tools._infer import schema_type
from ptcflow.tools._messages import ToolDefinition
from ptcflow.tools._tool import Tool

__all__ = (
    "describe_tool",
    "render_tool_catalog",
    "render_tool_signature",
    "schema_from_function",
    "tool_definitions",
)


def _values(tools: Mapping[str, Tool] | Iterable[Tool]) -> list[Tool]:
    return list(tools.values()) if isinstance(tools, Mapping) else list(tools)


def render_tool_signature(tool: Tool) -> str:
    """Render one tool in signature syntax: ``search(query :string, limit :int?) -> [:string]``.

    Uses the tool's signature (for a tool built from a JSON Schema, the one derived from
    it). Firewalled output fields (``_name``) show as ``<Firewalled>``.

    Example:
        >>> def add(x: int, y: int) -> int: ...
        >>> render_tool_signature(Tool.from_function(add))
        'add(x :int, y :int) -> :int'
    """
    sig = tool.signature
    if sig is None:  # a schema without "properties": show what is known about the output
        return f"{tool.name}() -> {render_type(schema_type(tool.output_schema), 'prompt')}"
    params = ", ".join(f"{p.name} {render_type(p.type)}" for p in sig.params)
    return f"{tool.name}({params}) -> {render_type(sig.output, 'prompt')}"


def render_tool_catalog(
    tools: Mapping[str, Tool] | Iterable[Tool], *, title: str = "Tools you can call"
) -> str:
    """Render the prompt block that lists tools, shared by every strategy.

    Each tool is one line in signature syntax followed by its description, indented::

        ## Tools you can call

        - search(query :string, limit :int) -> [{id :int, title :string}]
          Search for items matching query.

    Args:
        tools: the tools (a ``{name: Tool}`` map or any iterable of tools).
        title: the heading; ``"Tools for planning (do not call)"`` for a planning catalog.

    Returns:
        The block, or ``""`` when there are no tools (so the prompt has no empty section).

    Example:
        >>> def add(x: int, y: int) -> int:
        ...     '''Add two integers.'''
        ...     return x + y
        >>> print(render_tool_catalog([Tool.from_function(add)]))
        ## Tools you can call
        <BLANKLINE>
        - add(x :int, y :int) -> :int
          Add two integers.
    """
    listed = _values(tools)
    if not listed:
        return ""
    lines = [f"## {title}", ""]
    for item in listed:
        lines.append(f"- {render_tool_signature(item)}")
        lines.extend(f"  {line}" for line in describe_tool(item).splitlines() if line.strip())
    return "\n".join(lines)


def describe_tool(tool: Tool) -> str:
    """The tool's description for a prompt, followed by one line per argument or result
    field whose JSON form the signature does not say: a date, a UUID, a decimal, bytes,
    an enum's values (read from the JSON Schemas).

    Example:
        >>> import datetime
        >>> def book(day: datetime.date) -> str:
        ...     "Book a day."
        >>> print(describe_tool(Tool.from_function(book)))
        Book a day.
        day: an ISO 8601 date string, e.g. "2026-05-01"
    """
    notes = format_notes(tool.input_schema)
    notes += format_notes(tool.output_schema, "result")
    if not notes:
        return tool.description
    return "\n".join([tool.description, *notes]) if tool.description else "\n".join(notes)


def tool_definitions(tools: Mapping[str, Tool] | Iterable[Tool]) -> list[ToolDefinition]:
    """Return the :class:`ToolDefinition` of each tool, in order, for native tool calling.

    Example:
        >>> def add(x: int, y: int) -> int: ...
        >>> [d.name for d in tool_definitions([Tool.from_function(add)])]
        ['add']
    """
    return [item.definition for item in _values(tools)]


def schema_from_function(fn: Callable[..., Any]) -> dict[str, Any]:
    """Describe a function for a downstream system without building an agent around it.

    Returns ``{"name", "input_schema"}`` plus ``"output_schema"`` and ``"description"``
    when the function declares them, inferred exactly as :func:`tool` does.

    Example:
        >>> def search(query: str, limit: int) -> list[str]: ...
        >>> schema_from_function(search)["output_schema"]
        {'type': 'array', 'items': {'type': 'string'}}
    """
    definition = Tool.from_function(fn).definition
    out: dict[str, Any] = {"name": definition.name, "input_schema": definition.input_schema}
    if definition.output_schema is not None:
        out["output_schema"] = definition.output_schema
    if definition.description:
        out["description"] = definition.description
    return out
