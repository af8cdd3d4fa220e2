"""Typed tool functions: which parameters get built into Python values, and whether the
return value is turned back into plain data. Decided once, when the tool is built."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, Final

from ptcflow.signature import ConversionError, Converter, needs_conversion
from ptcflow.tools._introspect import ParamInfo

__all__ = ("ConversionError", "ToolTypes", "tool_types")

_EMPTY: Final = inspect.Parameter.empty


class ToolTypes:
    """The converters of one tool.

    Attributes:
        inputs: ``(parameter name, converter)`` for each parameter whose hint is not plain
            data (a dataclass, a Struct, a pydantic model, a date, an enum...).
        output: the converter of the return value, or ``None`` when it is plain.
        covers_input: every parameter the signature declares is built by a converter,
            which checks (and leniently coerces) it: the signature's own input check is
            skipped (the converter's errors name the same paths).
        names: the converted parameters' names.
    """

    __slots__ = ("covers_input", "inputs", "names", "output")

    def __init__(
        self,
        inputs: tuple[tuple[str, Converter], ...],
        output: Converter | None,
        covers_input: bool = False,
    ) -> None:
        self.inputs = inputs
        self.output = output
        self.covers_input = covers_input
        self.names = frozenset(name for name, _ in inputs)

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

    def fast_load(
        self, direct: tuple[tuple[str, bool, bool], ...] | None
    ) -> Callable[[dict[str, Any]], dict[str, Any] | None] | None:
        """For :func:`call_tool`: a function that turns the model's arguments into the
        keyword arguments of the call in one step, or says ``None`` (then the general path
        runs, and reports what is wrong). Only when every parameter is converted and the
        arguments can be passed by name (``direct``: see ``Binding.direct_names``)."""
        if not self.covers_input or direct is None:
            return None
        names = frozenset(name for name, _, _ in direct)
        required = tuple(name for name, needed, _ in direct if needed)
        inputs = self.inputs
        count = len(names)

        def load(arguments: dict[str, Any]) -> dict[str, Any] | None:
            if len(arguments) > count:
                return None
            for name in required:
                if name not in arguments:
                    return None
            kwargs: dict[str, Any] = {}
            for name, conv in inputs:
                if name in arguments:
                    value = arguments[name]
                    if value is None:
                        return None  # a default or a nullable type: the general path
                    try:
                        kwargs[name] = conv.load(value, name)
                    except ConversionError:
                        return None
            return kwargs if len(kwargs) == len(arguments) else None

        return load

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
    declared: frozenset[str] | None = None,
) -> ToolTypes | None:
    """The converters of a tool (``None`` when every hint is plain data).

    Args:
        params: the function's parameters (``None``: unreadable, nothing is converted).
        context: the ``ToolContext`` parameter (never converted).
        output_hint: the payload's return hint (``Ok[T]`` already unwrapped to ``T``).
        pass_input: the function takes the whole input map: parameters are not converted.
        declared: the names of the signature's parameters (``None``: no signature).
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
    extra = params is not None and any(p.kind == "var_keyword" for p in params)
    covers = declared is not None and not extra and declared == {n for n, _ in inputs}
    return ToolTypes(tuple(inputs), output, covers)
