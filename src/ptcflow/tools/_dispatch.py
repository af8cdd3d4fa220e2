"""Running a :class:`ToolCall` against a set of tools and answering with a :class:`ToolResult`.

Three phases, so the async and sync entry points share all logic:

1. ``_prepare`` (sync): find the tool, validate and coerce the input, map it to arguments;
2. the call itself: awaited, run in a worker thread, or called directly (``dispatch_sync``);
3. ``_finish`` (sync): unwrap ``Ok``/``Err`` returns, validate the output, build the result.

Failures never raise: they become ``ToolResult(is_error=True, output=ErrorEnvelope)``.
Cancellation is never caught (only ``Exception`` is).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Final

import anyio
import anyio.lowlevel
import anyio.to_thread
import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals import Err, ErrorEnvelope, Ok, error_from_exception
from ptcflow.signature import ConversionError
from ptcflow.tools._catalog import render_tool_signature
from ptcflow.tools._messages import ToolCall, ToolContext, ToolResult
from ptcflow.tools._registry import find_by_name, for_agent, suggest_names
from ptcflow.tools._tool import Tool

__all__ = ("dispatch", "dispatch_sync")

_MAX_LISTED: Final = 20
_MODES: Final = ("enabled", "warn_only", "disabled", "strict")
_MODE_SET: Final = frozenset(_MODES)

Tools = Mapping[str, Tool] | Sequence[Tool]
ToolsGiven = Mapping[str, Any] | Sequence[Any] | Any
"""What ``dispatch`` accepts: what ``Runtime(tools=...)`` accepts (see ``for_agent``)."""


def _as_tools(tools: ToolsGiven) -> Tools:
    """``tools`` as ``Tool`` objects: as given when they already are, else ``for_agent``."""
    if type(tools) is dict:
        if all(type(t) is Tool for t in tools.values()):
            return tools
    elif isinstance(tools, list | tuple) and all(type(t) is Tool for t in tools):
        return tools
    return for_agent(tools)


class _Prepared(msgspec.Struct, frozen=True, gc=False):
    tool: Tool
    args: list[Any]
    kwargs: dict[str, Any]
    warnings: tuple[str, ...]


def check_mode(mode: str) -> str:
    """Return ``mode`` when it is a validation mode, else raise :class:`UsageError`."""
    if mode not in _MODE_SET:
        raise UsageError(
            f"unknown validation mode {mode!r}: use one of {', '.join(map(repr, _MODES))}"
        )
    return mode


def _error(call: ToolCall, kind: str, message: str, details: dict[str, Any]) -> ToolResult:
    return ToolResult(
        id=call.id,
        name=call.name,
        output=ErrorEnvelope.make(kind, message, details, retryable=False),
        is_error=True,
    )


def _unknown_tool(tools: Tools, call: ToolCall) -> ToolResult:
    names = list(tools) if isinstance(tools, Mapping) else [t.name for t in tools]
    suggestions = suggest_names(call.name, names)
    listed = ", ".join(names[:_MAX_LISTED]) + (", ..." if len(names) > _MAX_LISTED else "")
    message = f"unknown tool {call.name!r}; available tools: {listed or '(none)'}"
    if suggestions:
        message += f". Did you mean {suggestions[0]!r}?"
    return _error(
        call,
        "unknown_tool",
        message,
        {"tool": call.name, "available": names, "suggestions": suggestions},
    )


def _prepare(
    given: ToolsGiven, call: ToolCall, context: ToolContext | None, validation: str
) -> _Prepared | ToolResult:
    found = given.get(call.name) if type(given) is dict else None
    if type(found) is Tool and found.name == call.name:  # a {name: Tool} map: as fast as before
        return _prepare_tool(found, call, context, validation)
    tools = _as_tools(given)
    found = tools.get(call.name) if type(tools) is dict else None
    if found is None or found.name != call.name:
        found = find_by_name(tools, call.name) if isinstance(call.name, str) else None
    if found is None:
        return _unknown_tool(tools, call)
    return _prepare_tool(found, call, context, validation)


def _prepare_tool(
    found: Tool, call: ToolCall, context: ToolContext | None, validation: str
) -> _Prepared | ToolResult:
    """Validate the call's input for ``found`` and bind it to the function's parameters."""
    raw: Any = call.input if call.input is not None else {}
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return _error(
            call,
            "validation",
            f"tool {found.name!r} takes a map of named arguments (a JSON object), "
            f"got {type(raw).__name__}",
            {"tool": found.name, "where": "input"},
        )
    warnings: list[str] = []
    values: Mapping[str, Any] = raw
    types = found._types
    if types is not None and types.covers_input and validation != "disabled":
        # Every parameter is built by its Python type, which checks it: one check, not two.
        if validation == "strict":
            extra = [k for k in raw if k not in types.names]
            if extra:
                errors = [f"{k}: unexpected argument" for k in extra]
                return _error(
                    call,
                    "validation",
                    f"invalid arguments for tool {found.name!r}: "
                    + "; ".join(errors)
                    + f" (expected {render_tool_signature(found)})",
                    {"tool": found.name, "where": "input", "errors": errors},
                )
    elif found.signature is not None:
        checked = found.signature.validate_input(raw, validation)
        if not checked.ok:
            return _error(
                call,
                "validation",
                f"invalid arguments for tool {found.name!r}: "
                + "; ".join(checked.errors)
                + f" (expected {render_tool_signature(found)})",
                {
                    "tool": found.name,
                    "where": "input",
                    "errors": checked.errors,
                    "warnings": checked.warnings,
                },
            )
        warnings.extend(checked.warnings)
        values = checked.value
    ctx = None
    if found.context_param is not None:
        base = context if context is not None else ToolContext()
        ctx = msgspec.structs.replace(base, call_id=call.id, tool_name=found.name)
    try:
        args, kwargs, notes = found.arguments(values, ctx)
    except KeyError as exc:
        missing = exc.args[0]
        return _error(
            call,
            "validation",
            f"invalid arguments for tool {found.name!r}: {missing}: missing required argument "
            f"(expected {render_tool_signature(found)})",
            {"tool": found.name, "where": "input", "errors": [f"{missing}: missing"]},
        )
    warnings.extend(notes)
    if types is not None and types.inputs:
        try:
            types.load(kwargs)
        except ConversionError as exc:
            return _error(
                call,
                "validation",
                f"invalid arguments for tool {found.name!r}: {exc} "
                f"(expected {render_tool_signature(found)})",
                {"tool": found.name, "where": "input", "errors": [str(exc)]},
            )
    return _Prepared(found, args, kwargs, tuple(warnings))


def _finish(
    prepared: _Prepared, call: ToolCall, output: Any, validation: str, *, plain: bool = False
) -> ToolResult:
    tool = prepared.tool
    effects: tuple[Any, ...] = ()
    if isinstance(output, Ok):
        output, effects = output.payload, tuple(output.effects)
        plain = False
    elif isinstance(output, Err | ErrorEnvelope):
        error = output.error if isinstance(output, Err) else output
        effects = tuple(output.effects) if isinstance(output, Err) else ()
        return ToolResult(
            id=call.id,
            name=tool.name,
            output=error,
            is_error=True,
            warnings=prepared.warnings,
            effects=effects,
        )
    warnings = prepared.warnings
    types = tool._types
    if not plain and types is not None and types.output is not None:
        try:
            output = types.output.dump(output)
        except (TypeError, ValueError) as exc:
            return _bad_output(tool, call, warnings, [f"cannot make plain data of it: {exc}"])
    if tool.signature is not None and tool.output_schema is not None:
        checked = tool.signature.validate_output(output, validation)
        if not checked.ok:
            return ToolResult(
                id=call.id,
                name=tool.name,
                output=ErrorEnvelope.make(
                    "validation",
                    f"tool {tool.name!r} returned a value that does not match its declared "
                    f"output: " + "; ".join(checked.errors),
                    {"tool": tool.name, "where": "output", "errors": checked.errors},
                    retryable=False,
                ),
                is_error=True,
                warnings=warnings,
            )
        warnings = (*warnings, *checked.warnings)
    return ToolResult(id=call.id, name=tool.name, output=output, warnings=warnings, effects=effects)


def _bad_output(
    tool: Tool, call: ToolCall, warnings: tuple[str, ...], errors: list[str]
) -> ToolResult:
    return ToolResult(
        id=call.id,
        name=tool.name,
        output=ErrorEnvelope.make(
            "validation",
            f"tool {tool.name!r} returned a value that does not match its declared output: "
            + "; ".join(errors),
            {"tool": tool.name, "where": "output", "errors": errors},
            retryable=False,
        ),
        is_error=True,
        warnings=warnings,
    )


def _failed(prepared: _Prepared, call: ToolCall, exc: Exception) -> ToolResult:
    envelope = error_from_exception(exc)
    envelope = ErrorEnvelope.make(
        envelope.type,
        f"tool {prepared.tool.name!r} raised {envelope.message}",
        {**envelope.details, "tool": prepared.tool.name},
        retryable=envelope.retryable,
    )
    return ToolResult(
        id=call.id,
        name=prepared.tool.name,
        output=envelope,
        is_error=True,
        warnings=prepared.warnings,
    )


async def dispatch(
    tools: ToolsGiven,
    call: ToolCall,
    *,
    context: ToolContext | None = None,
    limiter: anyio.CapacityLimiter | None = None,
    validation: str = "enabled",
) -> ToolResult:
    """Run the tool a call names and return its result; never raises for tool failures.

    Finds the tool (unknown -> ``unknown_tool`` error listing the available names),
    validates and coerces the input by the tool's signature (errors -> ``validation``,
    not retryable; coercions are kept in ``ToolResult.warnings``), maps the named input
    to the function's parameters (or passes the map when ``pass_input``), injects a
    :class:`ToolContext` parameter, then awaits async functions or runs sync ones in a
    worker thread under ``limiter`` (inline when the tool says ``blocking=False``). An
    exception from the function becomes an error result (``tool_error``, not retryable;
    ``TimeoutError`` gives a retryable ``timeout``). The output is validated against the
    declared output type, if any.

    Blocks until the tool finishes; cancelling the caller cancels an async tool and
    propagates (a sync tool's thread runs to its end first; its result is dropped).

    Args:
        tools: the tools, as ``Runtime(tools=...)`` takes them: plain functions,
            :class:`Tool` objects, ``{name: function}`` maps, tool sources, or a
            ``{name: Tool}`` map (see :func:`~ptcflow.tools.for_agent`).
        call: the call to run; ``ToolResult.id`` echoes ``call.id``.
        context: facts to inject into a ``ToolContext`` parameter (``call_id`` and
            ``tool_name`` are filled in from the call).
        limiter: caps how many sync tools run in threads at once (anyio's default
            limiter when ``None``).
        validation: ``"enabled"`` (default), ``"strict"`` (extra arguments rejected),
            ``"warn_only"`` or ``"disabled"``.

    Returns:
        The result; ``is_error=True`` with an ``ErrorEnvelope`` output on failure.

    Raises:
        UsageError: ``validation`` is not a known mode, or an entry of ``tools`` cannot
            become a tool (programming errors).

    Example:
        >>> import anyio
        >>> def add(x: int, y: int) -> int:
        ...     return x + y
        >>> call = ToolCall(id="call_1", name="add", input={"x": 2, "y": "3"})
        >>> result = anyio.run(dispatch, [add], call)
        >>> (result.id, result.output, result.is_error, result.warnings)
        ('call_1', 5, False, ('y: coerced string "3" to int',))
    """
    if validation not in _MODE_SET:
        check_mode(validation)  # raises
    prepared = _prepare(tools, call, context, validation)
    if isinstance(prepared, ToolResult):
        return prepared
    tool = prepared.tool
    try:
        if tool.is_async:
            output = await tool.fn(*prepared.args, **prepared.kwargs)
        elif not tool.blocking:
            await anyio.lowlevel.checkpoint_if_cancelled()
            output = tool.fn(*prepared.args, **prepared.kwargs)
            if inspect.isawaitable(output):
                output = await output
        else:
            (output,) = await anyio.to_thread.run_sync(_boxed, prepared, limiter=limiter)
            if inspect.isawaitable(output):
                output = await output
            # A thread cannot be interrupted; when we were cancelled meanwhile, raise now
            # instead of returning a result nobody is waiting for.
            await anyio.lowlevel.checkpoint_if_cancelled()
    except Exception as exc:
        return _failed(prepared, call, exc)
    return _finish(prepared, call, output, validation)


def dispatch_sync(
    tools: ToolsGiven,
    call: ToolCall,
    *,
    context: ToolContext | None = None,
    validation: str = "enabled",
) -> ToolResult:
    """Run a call from synchronous code: like :func:`dispatch`, without an event loop.

    Sync tools are called directly in this thread; async tools run in a fresh event loop
    (``anyio.run``), so do not call this from inside async code: use :func:`dispatch`.

    Raises:
        UsageError: ``validation`` is unknown, or an async tool is called while an event
            loop runs in this thread.

    Example:
        >>> def shout(text: str) -> str:
        ...     return text.upper()
        >>> dispatch_sync([shout], ToolCall(id="1", name="shout", input={"text": "hi"})).output
        'HI'
    """
    if validation not in _MODE_SET:
        check_mode(validation)  # raises
    prepared = _prepare(tools, call, context, validation)
    if isinstance(prepared, ToolResult):
        return prepared
    tool = prepared.tool
    try:
        output = None if tool.is_async else tool.fn(*prepared.args, **prepared.kwargs)
    except Exception as exc:
        return _failed(prepared, call, exc)
    if tool.is_async or inspect.isawaitable(output):
        awaited = _Awaited(prepared, output)
        try:
            anyio.run(awaited.run)
        except RuntimeError as exc:
            if awaited.started:
                raise
            if inspect.iscoroutine(output):
                output.close()
            raise UsageError(
                f"dispatch_sync() cannot run the async tool {tool.name!r} inside a running "
                "event loop; use 'await dispatch(...)' in async code"
            ) from exc
        if awaited.error is not None:
            return _failed(prepared, call, awaited.error)
        output = awaited.value
    return _finish(prepared, call, output, validation)


def _boxed(prepared: _Prepared) -> tuple[Any]:
    """Call a sync tool in a worker thread; boxed so an awaitable result is not refused."""
    return (prepared.tool.fn(*prepared.args, **prepared.kwargs),)


class _Awaited:
    """Runs an async tool (or awaits a sync tool's awaitable) under ``anyio.run``,
    keeping the tool's own exception apart from a failure to start the loop."""

    __slots__ = ("awaitable", "error", "prepared", "started", "value")

    def __init__(self, prepared: _Prepared, awaitable: Any) -> None:
        self.prepared = prepared
        self.awaitable = awaitable
        self.started = False
        self.value: Any = None
        self.error: Exception | None = None

    async def run(self) -> None:
        self.started = True
        prepared = self.prepared
        try:
            if self.awaitable is None:
                self.value = await prepared.tool.fn(*prepared.args, **prepared.kwargs)
            else:
                self.value = await self.awaitable
        except Exception as exc:
            self.error = exc
