"""Binding a call's named input to a Python function's parameters, decided once per tool."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from typing import Any, Final

from ptcflow.tools._introspect import ParamInfo

__all__ = ("Binding",)

_MISSING: Final[Any] = object()
_EMPTY_HINT: Final = inspect.Parameter.empty

# One entry per parameter that input can fill:
# (name, positional-only, required, default, drop a null, is the ToolContext parameter)
_Slot = tuple[str, bool, bool, Any, bool, bool]


class Binding:
    """How named input reaches a function: built once per tool, used on every call.

    Args:
        tool_name: the tool's name, for messages.
        params: the function's parameters, or ``None`` when they cannot be read (the
            input is then passed as keyword arguments unchanged).
        context_param: the parameter annotated ``ToolContext``, if any.
        pass_input: pass the whole input map as the first argument instead.
    """

    __slots__ = ("_accepts_extra", "_names", "_pass_input", "_slots", "_tool_name", "context")

    def __init__(
        self,
        tool_name: str,
        params: list[ParamInfo] | None,
        context_param: str | None,
        *,
        pass_input: bool,
    ) -> None:
        self._tool_name = tool_name
        self._pass_input = pass_input
        self.context = context_param
        self._slots: tuple[_Slot, ...] | None = None
        if params is not None:
            self._slots = tuple(
                (
                    p.name,
                    p.kind == "positional",
                    not p.has_default,
                    p.default,
                    _drop_none(p),
                    p.name == context_param,
                )
                for p in params
                if p.kind not in ("var_positional", "var_keyword")
            )
        self._names = frozenset(p.name for p in params or ())
        self._accepts_extra = params is None or any(p.kind == "var_keyword" for p in params)

    def direct_names(self) -> tuple[tuple[str, bool, bool], ...] | None:
        """The ``(name, required, drop a null)`` of each parameter input fills, when
        input can be passed as keyword arguments unchanged: no ``pass_input``, readable
        parameters, none positional-only. ``None`` otherwise (then only :meth:`bind` is
        exact)."""
        slots = self._slots
        if self._pass_input or slots is None or any(s[1] for s in slots):
            return None
        return tuple((s[0], s[2], s[4]) for s in slots if not s[5])

    def bind(
        self, values: Mapping[str, Any], context: object = None
    ) -> tuple[list[Any], dict[str, Any], list[str]]:
        """Map validated named input to ``(args, kwargs, notes)``.

        Omitted parameters keep their Python defaults; a ``null`` sent for a parameter
        whose hint does not admit ``None`` is dropped so the default applies; names the
        function does not accept are dropped (``notes`` says so) unless it takes
        ``**kwargs``. ``context`` fills the ``ToolContext`` parameter, if any.

        Raises:
            KeyError: a required parameter is missing (the key names it).
        """
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        notes: list[str] = []
        slots = self._slots
        if self._pass_input or slots is None:
            if self._pass_input:
                args.append(dict(values))
            else:
                kwargs.update((k, v) for k, v in values.items() if isinstance(k, str))
            if self.context is not None:
                kwargs[self.context] = context
            return args, kwargs, notes
        used = 0
        for name, positional, required, default, drop_none, is_context in slots:
            if is_context:
                value = context
            else:
                value = values.get(name, _MISSING)
                if value is not _MISSING:
                    used += 1
                if value is _MISSING or (value is None and drop_none):
                    if required:
                        raise KeyError(name)
                    if positional:
                        args.append(default)  # keep later positional-only values in place
                    continue
            if positional:
                args.append(value)
            else:
                kwargs[name] = value
        if used < len(values):
            for key, value in values.items():
                if key in self._names:
                    continue
                if self._accepts_extra and isinstance(key, str):
                    kwargs[key] = value
                else:
                    notes.append(f"{key}: ignored, {self._tool_name} takes no such argument")
        return args, kwargs, notes


def _drop_none(p: ParamInfo) -> bool:
    """True when ``None`` sent for a defaulted parameter should mean "use the default"."""
    return p.has_default and p.hint is not _EMPTY_HINT and not _hint_allows_none(p.hint)


def _hint_allows_none(hint: Any) -> bool:
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if hint is None or hint is type(None) or hint is Any:
        return True
    return type(None) in typing.get_args(hint)
