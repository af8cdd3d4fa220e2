"""Registering an agent's tools: normalizing the accepted formats into named :class:`Tool`\\ s."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from ptcflow.errors import UsageError
from ptcflow.signature import Signature
from ptcflow.tools._tool import Tool

__all__ = ("RESERVED_TOOL_NAMES", "ToolSource", "find_by_name", "for_agent", "suggest_names")

#: Names kept for the system tools every agent has: ``return`` ends a run, ``fail`` fails it.
RESERVED_TOOL_NAMES: Final = frozenset({"return", "fail"})

_RESERVED_WHY: Final = {
    "return": "the system tool that ends a run with its answer",
    "fail": "the system tool that ends a run with a failure",
}


@runtime_checkable
class ToolSource(Protocol):
    """Anything that supplies tools: a sub-agent used as a tool, an MCP server, a toolkit.

    Implement one method; :func:`for_agent` calls it when the object is registered.

    Example:
        >>> class Toolkit:
        ...     def ptcflow_tools(self):
        ...         return [Tool.from_function(len, signature="(obj :any) -> :int")]
    """

    def ptcflow_tools(self) -> Iterable[Tool]:
        """Return the tools this object provides."""
        ...


ToolEntry = Any  # a function, Tool, (fn, signature) pair, ToolSource or {"name": entry} map


def _tool_from(entry: ToolEntry, name: str | None, where: str) -> list[Tool]:
    """Turn one entry into tools; ``name`` renames it (from a ``{"name": entry}`` mapping)."""
    if isinstance(entry, Tool):
        return [entry if name is None or name == entry.name else entry.replace(name=name)]
    if isinstance(entry, tuple):
        if len(entry) != 2 or not callable(entry[0]) or not isinstance(entry[1], str | Signature):
            raise UsageError(
                f"{where}: a tuple entry must be (function, signature), e.g. "
                f'(search, "(query :string) -> [:string]"), got {_short(entry)}'
            )
        return [Tool.from_function(entry[0], name=name, signature=entry[1])]
    if _is_source(entry):
        tools = list(entry.ptcflow_tools())
        bad = [t for t in tools if not isinstance(t, Tool)]
        if bad:
            raise UsageError(
                f"{where}: {type(entry).__name__}.ptcflow_tools() must yield Tool objects, "
                f"got {_short(bad[0])}"
            )
        if name is not None:
            if len(tools) != 1:
                raise UsageError(
                    f"{where}: {type(entry).__name__} provides {len(tools)} tools, so it "
                    f"cannot be registered under the single name {name!r}; list it without "
                    "a name instead"
                )
            tools = [tools[0].replace(name=name)]
        return tools
    if callable(entry):
        return [Tool.from_function(entry, name=name)]
    raise UsageError(
        f"{where}: cannot make a tool from {_short(entry)}; use a function, a Tool, a "
        "(function, signature) pair, a {name: function} mapping or a ToolSource"
    )


def _is_source(entry: object) -> bool:
    """Whether ``entry`` implements :class:`ToolSource` (cheaper than a Protocol isinstance)."""
    return not isinstance(entry, type) and callable(getattr(type(entry), "ptcflow_tools", None))


def _is_single(entries: object) -> bool:
    """True when one entry was passed where a list of entries was expected."""
    if type(entries) is list:
        return False
    if isinstance(entries, tuple):
        return len(entries) == 2 and callable(entries[0]) and isinstance(entries[1], str)
    return isinstance(entries, Tool) or _is_source(entries) or callable(entries)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def for_agent(
    entries: Iterable[ToolEntry]
    | Mapping[str, ToolEntry]
    | Callable[..., Any]
    | Tool
    | ToolSource
    | None,
) -> dict[str, Tool]:
    """Normalize an agent's tools into an ordered ``{name: Tool}`` map.

    Accepts a list (or a single mapping) mixing functions, :class:`Tool` objects,
    ``(function, "signature")`` pairs, ``{"name": entry}`` mappings (the key becomes the
    tool name) and :class:`ToolSource` objects.

    Args:
        entries: the tools as given by the user; ``None`` means no tools.

    Returns:
        The tools by name, in registration order.

    Raises:
        UsageError: an entry cannot become a tool, two tools share a name, or a tool uses a
            reserved name (``return``, ``fail``).

    Example:
        >>> def add(x: int, y: int) -> int:
        ...     return x + y
        >>> list(for_agent([add, {"plus": add}]))
        ['add', 'plus']
    """
    if entries is None:
        return {}
    listed: Iterable[ToolEntry]
    if isinstance(entries, Mapping) or _is_single(entries) or not isinstance(entries, Iterable):
        listed = [entries]
    else:
        listed = entries
    out: dict[str, Tool] = {}
    origin: dict[str, str] = {}
    for index, entry in enumerate(listed):
        if isinstance(entry, Mapping):
            pairs: list[tuple[Any, ToolEntry]] = list(entry.items())
        else:
            pairs = [(None, entry)]
        for key, value in pairs:
            where = f"tools[{index}]" + (f"[{key!r}]" if key is not None else "")
            if key is not None and not isinstance(key, str):
                raise UsageError(f"{where}: tool names must be strings, got {_short(key)}")
            for built in _tool_from(value, key, where):
                _register(out, origin, built, where)
    return out


def _register(out: dict[str, Tool], origin: dict[str, str], built: Tool, where: str) -> None:
    if built.name in RESERVED_TOOL_NAMES:
        raise UsageError(
            f"{where}: the tool name {built.name!r} is reserved for "
            f"{_RESERVED_WHY[built.name]}; rename your tool, e.g. name={built.name + '_tool'!r}"
        )
    if built.name in out:
        raise UsageError(
            f"{where}: duplicate tool name {built.name!r} (already registered by "
            f"{origin[built.name]}); give one of them another name, e.g. "
            f'{{"{built.name}_2": fn}} or tool(fn, name=...)'
        )
    out[built.name] = built
    origin[built.name] = where


def find_by_name(tools: Mapping[str, Tool] | Sequence[Tool], name: str) -> Tool | None:
    """Return the tool called ``name``, or ``None`` when there is none.

    Args:
        tools: a ``{name: Tool}`` map (from :func:`for_agent`) or a sequence of tools.
        name: the tool name to look up.

    Example:
        >>> find_by_name([], "search") is None
        True
    """
    if isinstance(tools, Mapping):
        found = tools.get(name)
        if found is not None and found.name == name:
            return found
        tools = list(tools.values())
    for candidate in tools:
        if candidate.name == name:
            return candidate
    return None


def suggest_names(name: str, names: Iterable[str]) -> list[str]:
    """Return up to three known names close to ``name`` (for "did you mean" messages)."""
    known = list(names)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    lowered = [k for k in known if k.lower() == name.lower() and k not in close]
    return lowered + close
