"""The :func:`tool` decorator: :meth:`Tool.from_function` as ``@tool`` or ``@tool(...)``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict, Unpack, overload

from ptcflow.signature import Signature
from ptcflow.tools._tool import Tool

__all__ = ("ToolOptions", "tool")


class ToolOptions(TypedDict, total=False):
    """The keyword options of :meth:`Tool.from_function` (which documents them)."""

    name: str | None
    description: str | None
    signature: str | Signature | None
    input_schema: Mapping[str, Any] | None
    output_schema: Mapping[str, Any] | None
    pass_input: bool
    timeout_ms: int | None
    max_retries: int | None
    blocking: bool | None
    requires_approval: bool | Callable[..., Any] | None
    deferred: bool | None
    approval_timeout: float | None


@overload
def tool(
    fn: None = None, **options: Unpack[ToolOptions]
) -> Callable[[Callable[..., Any]], Tool]: ...


@overload
def tool(fn: Callable[..., Any], **options: Unpack[ToolOptions]) -> Tool: ...


def tool(
    fn: Callable[..., Any] | None = None, **options: Unpack[ToolOptions]
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` from a function: ``@tool``, ``@tool(...)`` or ``tool(fn, ...)``.

    Takes the keyword options of :meth:`Tool.from_function` (which documents them). The
    tool stays callable like the function it wraps.

    Example:
        >>> @tool(name="add_numbers")
        ... def add(x: int, y: int) -> int:
        ...     '''Add two integers and return the sum.'''
        ...     return x + y
        >>> (add.name, add.description, add(2, 3))
        ('add_numbers', 'Add two integers and return the sum.', 5)
    """
    unknown = sorted(options.keys() - ToolOptions.__annotations__.keys())
    if unknown:  # the check a keyword-only signature makes, at the same moment
        raise TypeError(f"tool() got an unexpected keyword argument {unknown[0]!r}")

    def build(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(f, **options)

    return build if fn is None else build(fn)
