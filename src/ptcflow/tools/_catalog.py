"""Describing tools to a model: the prompt catalog and the native tool definitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ptcflow.signature import render_type
from ptcflow.tools._messages import ToolDefinition
from ptcflow.tools._tool import Tool

__all__ = (
    "render_tool_catalog",
    "render_tool_signature",
    "schema_from_function",
    "tool_definitions",
)

_SCHEMA_PRIMS: Final = {
    "string": ":string",
    "integer": ":int",
    "number": ":float",
    "boolean": ":bool",
}
_MAX_DEPTH: Final = 8


def _values(tools: Mapping[str, Tool] | Iterable[Tool]) -> list[Tool]:
    return list(tools.values()) if isinstance(tools, Mapping) else list(tools)


def render_tool_signature(tool: Tool) -> str:
    """Render one tool in signature syntax: ``search(query :string, limit :int?) -> [:string]``.

    Uses the tool's signature; a tool built from a JSON Schema alone is rendered from the
    schema. Firewalled output fields (``_name``) show as ``<Firewalled>``.

    Example:
        >>> def add(x: int, y: int) -> int: ...
        >>> render_tool_signature(Tool.from_function(add))
        'add(x :int, y :int) -> :int'
    """
    sig = tool.signature
    if sig is not None:
        params = ", ".join(f"{p.name} {render_type(p.type)}" for p in sig.params)
        output = render_type(sig.output, "prompt")
    else:
        params = _schema_params(tool.input_schema)
        output = _schema_type(tool.output_schema, 0) if tool.output_schema else ":any"
    return f"{tool.name}({params}) -> {output}"


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
        lines.extend(f"  {line}" for line in item.description.splitlines() if line.strip())
    return "\n".join(lines)


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


def _schema_params(schema: Mapping[str, Any], depth: int = 0) -> str:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ""
    required = schema.get("required")
    needed = set(required) if isinstance(required, Sequence) else set()
    return ", ".join(
        f"{name} {_schema_type(sub, depth + 1, optional=name not in needed)}"
        for name, sub in props.items()
    )


def _schema_type(schema: Any, depth: int, *, optional: bool = False) -> str:
    """Render a JSON Schema as a signature type, as closely as the syntax allows."""
    text = ":any"
    if isinstance(schema, Mapping) and depth <= _MAX_DEPTH:
        kind = schema.get("type")
        if isinstance(kind, list):
            optional = optional or "null" in kind
            rest = [k for k in kind if k != "null"]
            kind = rest[0] if len(rest) == 1 else None
        if kind in _SCHEMA_PRIMS:
            text = _SCHEMA_PRIMS[kind]
        elif kind == "array":
            text = f"[{_schema_type(schema.get('items'), depth + 1)}]"
        elif kind == "object":
            props = schema.get("properties")
            text = (
                "{" + _schema_params(schema, depth) + "}" if isinstance(props, Mapping) else ":map"
            )
            if text == "{}":
                text = ":map"
    return text + "?" if optional and text != ":any" else text
