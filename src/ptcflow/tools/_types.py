"""Typed tool functions: which parameters get built into Python values, and whether the
return value is turned back into plain data. Decided once, when the tool is built."""

from __future__ import annotations

import inspect
import typing
from typing import Any, Final

from ptcflow.signature import Converter, needs_conversion
from ptcflow.signature._pytypes import ConversionError
from ptcflow.tools._introspect import ParamInfo

__all__ = ("ConversionError", "ToolTypes", "tool_types")

_EMPTY: Final = inspect.Parameter.empty


class ToolTypes:
    """The converters of one tool.

    Attributes:
        inputs: ``(parameter name, converter)`` for each parameter whose hint is not plain
            data (a dataclass, a Struct, a pydantic model, a date, an enum...).
        output: the converter of the return value, or ``None`` when it is plain.
    """

    __slots__ = ("inputs", "output")

    def __init__(self, inputs: tuple[tuple[str, Converter], ...], output: Converter | None) -> None:
        self.inputs = inputs
        self.output = output

    def load(self, kwargs: dict[str, Any]) -> None:
        """Replace the plain values of typed parameters in ``kwargs`` by typed values.

        Raises:
            ConversionError: a value does not fit its parameter's type (the path says
                where, from the parameter name).
        """
        for name, conv in self.inputs:
            if name in kwargs:
                value = kwargs[name]
                if value is not None or not _admits_none(conv):
                    kwargs[name] = conv.load(value, name)

    def dump(self, value: Any) -> Any:
        """The plain form of a returned value (as it is when no converter is needed)."""
        out = self.output
        return value if out is None else out.dump(value)

    def __repr__(self) -> str:
        return f"ToolTypes(inputs={[n for n, _ in self.inputs]}, output={self.output!r})"


def _admits_none(conv: Converter) -> bool:
    return type(None) in typing.get_args(conv.hint)


def tool_types(
    params: list[ParamInfo] | None,
    context: str | None,
    output_hint: Any,
    *,
    pass_input: bool,
) -> ToolTypes | None:
    """The converters of a tool (``None`` when every hint is plain data).

    Args:
        params: the function's parameters (``None``: unreadable, nothing is converted).
        context: the ``ToolContext`` parameter (never converted).
        output_hint: the payload's return hint (``Ok[T]`` already unwrapped to ``T``).
        pass_input: the function takes the whole input map: parameters are not converted.
    """
    inputs: list[tuple[str, Converter]] = []
    if params is not None and not pass_input:
        for p in params:
            if p.kind in ("var_positional", "var_keyword") or p.name == context:
                continue
            if p.hint is not _EMPTY and needs_conversion(p.hint):
                inputs.append((p.name, Converter(p.hint)))
    output = None
    if output_hint is not _EMPTY and needs_conversion(output_hint):
        output = Converter(output_hint)
    if not inputs and output is None:
        return None
    return ToolTypes(tuple(inputs), output)
