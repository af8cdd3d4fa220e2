"""Reading a Python callable: its name, docstring, parameters and colour (sync or async).

Handles plain functions, bound methods, ``functools.partial`` objects and callable objects
(instances with ``__call__``), sync or async.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, Final

import msgspec

from ptcflow.errors import UsageError
from ptcflow.tools._messages import ToolContext

__all__ = (
    "ParamInfo",
    "callable_doc",
    "callable_name",
    "context_param",
    "inspect_callable",
    "inspect_params",
    "is_async_callable",
)

_EMPTY = inspect.Parameter.empty
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


class ParamInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One parameter of a tool function.

    Attributes:
        name: the parameter name.
        hint: its resolved annotation (``inspect.Parameter.empty`` when unannotated).
        has_default: whether the caller may leave it out.
        default: the default value (``inspect.Parameter.empty`` when there is none).
        kind: ``"positional"`` (positional-only), ``"keyword"`` (may be passed by name),
            ``"var_positional"`` (``*args``) or ``"var_keyword"`` (``**kwargs``).
    """

    name: str
    hint: Any
    has_default: bool
    kind: str
    default: Any = _EMPTY


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "keyword",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def _target(fn: Callable[..., Any]) -> Any:
    """The object that carries the name and docstring: the function under partials/methods."""
    seen = 0
    obj: Any = fn
    while seen < 32:
        seen += 1
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif inspect.ismethod(obj):
            obj = obj.__func__
        else:
            break
    return obj


_FALLBACK_NAMES: Final[dict[str, Any]] = {"ToolContext": ToolContext}


def callable_name(fn: Callable[..., Any]) -> str:
    """Return the default tool name of ``fn``: its ``__qualname__``, cleaned for models.

    Enclosing functions (``outer.<locals>.``) are dropped, remaining dots become ``_``
    (``Calendar.book`` -> ``Calendar_book``), and characters providers reject are replaced,
    so the name matches ``[A-Za-z0-9_-]{1,64}``. A callable object without a name of its own
    is named after its class.

    Example:
        >>> def outer():
        ...     def search(q: str) -> str: ...
        ...     return search
        >>> callable_name(outer())
        'search'
    """
    target = _target(fn)
    if inspect.isfunction(target) or inspect.isbuiltin(target) or inspect.isclass(target):
        qualname = str(getattr(target, "__qualname__", target.__name__))
    else:
        qualname = type(target).__qualname__
    if "<locals>." in qualname:
        qualname = qualname.rsplit("<locals>.", 1)[1]
    name = _NAME_CHARS.sub("_", qualname.replace(".", "_")).strip("_")
    if not name or name == "lambda":
        name = "lambda_tool" if "<lambda>" in qualname else (name or "tool")
    return name[:64]


def callable_doc(fn: Callable[..., Any]) -> str | None:
    """Return the docstring of ``fn`` (of its class for a callable object without one)."""
    target = _target(fn)
    if inspect.isfunction(target) or inspect.isbuiltin(target) or inspect.isclass(target):
        return inspect.getdoc(target)
    call = getattr(type(target), "__call__", None)  # noqa: B004 - we want the class attribute
    return inspect.getdoc(call) if call is not None and call.__doc__ else inspect.getdoc(target)


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Return True when calling ``fn`` returns an awaitable (``async def``, also partials)."""
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return True
    if inspect.isfunction(target) or inspect.ismethod(target):
        return False
    call = getattr(type(target), "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def _resolve_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolve annotations (also string annotations) of the callable's underlying function."""
    target = _target(fn)
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = getattr(type(target), "__call__", target)  # noqa: B004
    try:
        try:
            return typing.get_type_hints(target, include_extras=True)
        except NameError:
            # ``from __future__ import annotations`` with ToolContext imported inside a
            # function: the name is not in the module globals, so supply it.
            return typing.get_type_hints(target, localns=_FALLBACK_NAMES, include_extras=True)
    except Exception as exc:
        raise UsageError(
            f"cannot resolve the type hints of {callable_name(fn)!r}: {exc}. Define the types "
            'it mentions at module level, or pass an explicit signature="(x :int) -> :any".'
        ) from exc


def inspect_params(fn: Callable[..., Any]) -> list[ParamInfo]:
    """Return the parameters a caller must supply, with resolved type hints.

    Parameters bound by a ``functools.partial`` and ``self`` of bound methods are omitted.

    Raises:
        UsageError: when ``fn`` is not callable or its hints cannot be resolved.
    """
    return inspect_callable(fn)[0]


def inspect_callable(fn: Callable[..., Any]) -> tuple[list[ParamInfo], Any]:
    """Return the parameters of ``fn`` and its resolved return hint, in one pass.

    Raises:
        UsageError: when ``fn`` is not callable or its hints cannot be resolved.
    """
    if not callable(fn):
        raise UsageError(f"a tool needs a callable, got {type(fn).__name__}: {fn!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"cannot read the parameters of {fn!r}: {exc}. Wrap it in a def with named, "
            "typed parameters."
        ) from exc
    hints = _resolve_hints(fn)
    out = [
        ParamInfo(
            name=param.name,
            hint=hints.get(param.name, param.annotation),
            has_default=param.default is not _EMPTY,
            kind=_KINDS[param.kind],
            default=param.default,
        )
        for param in sig.parameters.values()
    ]
    return out, hints.get("return", sig.return_annotation)


def _is_context_hint(hint: Any) -> bool:
    if hint is ToolContext or (inspect.isclass(hint) and issubclass(hint, ToolContext)):
        return True
    if typing.get_origin(hint) is typing.Annotated:
        return _is_context_hint(typing.get_args(hint)[0])
    args = typing.get_args(hint)
    return bool(args) and any(_is_context_hint(a) for a in args if a is not type(None))


def context_param(params: list[ParamInfo]) -> str | None:
    """Return the name of the parameter annotated with :class:`ToolContext`, if any.

    Raises:
        UsageError: when several parameters ask for the context.
    """
    names = [p.name for p in params if _is_context_hint(p.hint)]
    if len(names) > 1:
        raise UsageError(
            f"parameters {names} are all annotated with ToolContext; a tool receives one "
            "context, so keep a single ToolContext parameter."
        )
    return names[0] if names else None
