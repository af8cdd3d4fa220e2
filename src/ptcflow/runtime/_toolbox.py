"""The tools of a run, as the executor sees them: specs for the strategy, a way to call one.

Until :mod:`ptcflow.tools` lands, this module accepts plain callables (a mapping of name
to function, or a sequence of functions named by ``__name__``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from ptcflow.errors import UsageError
from ptcflow.signals import (
    UNKNOWN_TOOL,
    Err,
    ErrorEnvelope,
    Ok,
    ToolSpec,
    error_from_exception,
    normalize_result,
)

__all__ = ("Toolbox",)


class Toolbox:
    """A run's tools by name, with their :class:`~ptcflow.signals.ToolSpec`s."""

    __slots__ = ("_async", "_ctx", "_fns", "specs")

    def __init__(self, fns: dict[str, Callable[..., Any]], specs: tuple[ToolSpec, ...]) -> None:
        self._fns = fns
        self.specs = specs
        self._ctx = frozenset(n for n, f in fns.items() if _takes_context(f))
        self._async = frozenset(n for n, f in fns.items() if inspect.iscoroutinefunction(f))

    @classmethod
    def build(cls, tools: Any) -> Toolbox:
        """Normalize ``tools`` (``None``, a mapping, a sequence of callables)."""
        if tools is None:
            return EMPTY
        if isinstance(tools, Toolbox):
            return tools
        fns: dict[str, Callable[..., Any]] = {}
        items: Sequence[tuple[str, Any]]
        if isinstance(tools, Mapping):
            items = list(tools.items())
        elif isinstance(tools, Sequence) and not isinstance(tools, str):
            items = [(getattr(fn, "__name__", ""), fn) for fn in tools]
        else:
            raise UsageError(f"tools must be a mapping or a sequence of functions, got {tools!r}")
        for name, fn in items:
            if not callable(fn) or not name:
                raise UsageError(f"tool {name!r} must be a named callable, got {fn!r}")
            if name in fns:
                raise UsageError(f"two tools are named {name!r}; tool names must be unique")
            fns[name] = fn
        specs = tuple(
            ToolSpec(name=n, description=(inspect.getdoc(f) or "").split("\n\n")[0])
            for n, f in fns.items()
        )
        return cls(fns, specs)

    def __len__(self) -> int:
        return len(self._fns)

    def names(self) -> list[str]:
        """Return the tool names, in registration order."""
        return list(self._fns)

    def wants_context(self, name: str) -> bool:
        """True when the tool takes a context (the runtime then snapshots the strategy)."""
        return name in self._ctx

    def _is_async(self, name: str) -> bool:
        return name in self._async

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str,
        run_id: str,
        context: Mapping[str, Any] | None,
        limiter: anyio.CapacityLimiter,
    ) -> Ok[Any] | Err:
        """Run tool ``name``; never raises except for cancellation."""
        fn = self._fns.get(name)
        if fn is None:
            known = ", ".join(self._fns) or "none"
            return Err(
                error=ErrorEnvelope.make(
                    UNKNOWN_TOOL,
                    f"unknown tool {name!r}; available tools: {known}",
                    {"tool": name, "available": list(self._fns)},
                )
            )
        kwargs = dict(arguments)
        if context is not None and self.wants_context(name):
            kwargs["context"] = dict(context)
        try:
            if name in self._async:
                value = await fn(**kwargs)
            else:
                value = await anyio.to_thread.run_sync(
                    functools.partial(fn, **kwargs), limiter=limiter, abandon_on_cancel=True
                )
        except Exception as exc:
            return Err(error=error_from_exception(exc))
        return normalize_result(value)


def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        return "context" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


EMPTY = Toolbox({}, ())
