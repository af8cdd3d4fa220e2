"""``call_tool``: one call of one known tool, straight to an ``Ok``/``Err`` envelope.

It gives exactly what ``(await dispatch({tool.name: tool}, ToolCall(id=call_id,
name=tool.name, input=dict(arguments)), ...)).to_result()`` gives, for every input. The
common call (arguments valid as they are, a plain result) takes a short path planned when
the tool was built (:mod:`ptcflow.tools._plan`): no ``ToolCall``, no validation result, no
argument binding, no ``ToolResult``. Everything else (coercions, missing or extra
arguments, errors, ``Ok``/``Err`` returns, outputs the plan cannot vouch for) is handed to
the same code :func:`dispatch` runs, so the two cannot drift apart.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import anyio
import anyio.lowlevel
import anyio.to_thread
import msgspec

from ptcflow.signals import Err, ErrorEnvelope, Ok, json_safe
from ptcflow.tools._dispatch import (
    _MODE_SET,
    _failed,
    _finish,
    _prepare_tool,
    _Prepared,
    check_mode,
    dispatch,
)
from ptcflow.tools._messages import ToolCall, ToolContext, ToolResult
from ptcflow.tools._plan import ASYNC, INLINE
from ptcflow.tools._tool import Tool

__all__ = ("RunSync", "call_tool")


class RunSync(Protocol):
    """``await run_sync(fn, *args)``: call a sync function in a worker thread and return
    what it returns (what :func:`call_tool` takes as ``run_sync``; the Runtime passes its
    thread pool's)."""

    def __call__(self, fn: Callable[..., Any], /, *args: Any) -> Awaitable[Any]:
        """Call ``fn(*args)`` in a worker thread; the awaitable gives its result."""
        ...


# Values json_safe returns unchanged, checked by exact type.
_AS_IS: Final = (str, int, bool, type(None))
_ENVELOPES: Final = (Ok, Err, ErrorEnvelope)
_LENIENT: Final = frozenset(("enabled", "warn_only"))


async def call_tool(
    tool: Tool,
    call_id: str,
    arguments: Mapping[str, Any],
    *,
    context: ToolContext | None = None,
    limiter: anyio.CapacityLimiter | None = None,
    validation: str = "enabled",
    run_sync: RunSync | None = None,
) -> Ok[Any] | Err:
    """Run one call of a known tool and return its ``Ok``/``Err`` envelope.

    The fast way to do what :func:`dispatch` does for a single tool: the result is always
    exactly ``(await dispatch({tool.name: tool}, ToolCall(id=call_id, name=tool.name,
    input=dict(arguments)), context=context, limiter=limiter,
    validation=validation)).to_result()``. Arguments are validated and coerced by the
    tool's signature, a ``ToolContext`` parameter is filled from ``context`` (with
    ``call_id`` and ``tool_name`` set), async functions are awaited, sync ones run in a
    worker thread under ``limiter`` (inline when the tool says ``blocking=False``), and
    failures come back as ``Err`` (never raised). The common case, arguments already
    valid and a plain JSON value returned, skips all the intermediate objects.

    Blocks until the tool finishes. Cancellation is never caught: cancelling the caller
    cancels an async tool and propagates (a sync tool's thread runs to its end first).

    Args:
        tool: the tool to run (look it up first; unknown names are :func:`dispatch`'s job).
        call_id: the id of the call (``ToolContext.call_id`` of a tool that takes one).
        arguments: the named arguments, as the model sent them.
        context: facts for a ``ToolContext`` parameter (``None``: a default context).
        limiter: caps sync tools running in threads (anyio's default when ``None``).
        validation: ``"enabled"`` (default), ``"strict"``, ``"warn_only"`` or ``"disabled"``.
        run_sync: runs a sync tool in a worker thread, ``await run_sync(fn, *args)``
            (``None``: ``anyio.to_thread.run_sync`` under ``limiter``). The Runtime passes
            its own pool, which abandons a thread whose caller is cancelled.

    Returns:
        ``Ok(payload, effects)`` with the result as JSON data, or ``Err(error, effects)``.

    Raises:
        UsageError: ``validation`` is not a known mode.

    Example:
        >>> import anyio
        >>> from ptcflow.tools import tool
        >>> @tool
        ... async def add(x: int, y: int) -> int:
        ...     return x + y
        >>> anyio.run(call_tool, add, "call_1", {"x": 2, "y": 3})
        Ok(payload=5, effects=())
        >>> anyio.run(call_tool, add, "call_2", {"x": 2}).error.type
        'validation'
    """
    plan = tool._plan
    accepts = plan.accepts
    args: Sequence[Any] = ()
    typed = plan.typed
    built = None
    kwargs: dict[str, Any]
    if typed is not None and type(arguments) is dict and validation in _LENIENT:
        built = typed(arguments)  # every parameter a Python type, built and checked at once
    if built is not None:
        fast = True
        kwargs = built
        if plan.context is not None:
            base = context if context is not None else ToolContext()
            kwargs[plan.context] = msgspec.structs.replace(
                base, call_id=call_id, tool_name=tool.name
            )
    elif accepts is not None and type(arguments) is dict and accepts(arguments):
        if validation not in _MODE_SET:
            check_mode(validation)  # raises
        fast = True
        kwargs = arguments
        if plan.context is not None:
            base = context if context is not None else ToolContext()
            injected = msgspec.structs.replace(base, call_id=call_id, tool_name=tool.name)
            kwargs = {**arguments, plan.context: injected}
        elif plan.how is not ASYNC:
            kwargs = {**arguments}  # dispatch binds a copy before its first checkpoint
    else:
        fast = False
        call = ToolCall(id=call_id, name=tool.name, input=dict(arguments))
        if validation not in _MODE_SET:
            check_mode(validation)  # raises
        prepared = _prepare_tool(tool, call, context, validation)
        if isinstance(prepared, ToolResult):
            return prepared.to_result()
        args, kwargs = prepared.args, prepared.kwargs
    fn = plan.fn
    how = plan.how
    try:
        if how is ASYNC:
            output = await fn(*args, **kwargs)
        else:
            if how is INLINE:
                await anyio.lowlevel.checkpoint_if_cancelled()
                output = fn(*args, **kwargs)
            elif run_sync is not None:
                (output,) = await run_sync(_boxed, fn, args, kwargs)
            else:
                (output,) = await anyio.to_thread.run_sync(
                    _boxed, fn, args, kwargs, limiter=limiter
                )
            if inspect.isawaitable(output):
                output = await output
            if how is not INLINE:
                # A thread cannot be interrupted; when we were cancelled meanwhile, raise
                # now instead of returning a result nobody is waiting for.
                await anyio.lowlevel.checkpoint_if_cancelled()
    except Exception as exc:
        if fast and type(exc) is TypeError and _has_other_keys(arguments):
            # A key that equals a parameter name but is no str: Python refused the call
            # before the function ran; binding by name (dispatch's way) makes it work.
            return await _general(tool, call_id, arguments, context, limiter, validation)
        failed = _failed(_Prepared(tool, list(args), kwargs, ()), _call(tool, call_id), exc)
        return failed.to_result()
    types = tool._types
    if types is not None and types.output is not None and not isinstance(output, _ENVELOPES):
        # A typed return (a dataclass, a date...): its plain form is checked as dispatch does,
        # unless it is an instance pydantic validated when it was built.
        conv = types.output
        if conv.validated and type(output) is conv.hint and validation != "strict":
            try:
                return Ok(payload=conv.dump(output))
            except (TypeError, ValueError):
                pass  # _finish reports it
        try:
            output = conv.dump(output)
        except (TypeError, ValueError):
            pass  # _finish tries again and reports it
        else:
            sig = tool.signature
            if sig is not None and type(output) is not bool:
                checked = sig.validate_output(output, validation)
                if checked.ok and not checked.warnings:
                    return Ok(payload=output)  # to_builtins made plain data: no json_safe
            plain = _finish(
                _Prepared(tool, list(args), kwargs, ()),
                _call(tool, call_id),
                output,
                validation,
                plain=True,
            )
            return plain.to_result()
    kind = type(output)
    expected = plan.output
    if kind is expected:
        return Ok(payload=output if kind in _AS_IS else json_safe(output))
    if expected is None:
        if kind in _AS_IS:
            return Ok(payload=output)
        if not isinstance(output, _ENVELOPES):
            return Ok(payload=json_safe(output))
    elif (
        not isinstance(output, _ENVELOPES)
        and tool.signature is not None
        and tool.signature.validate_output(output, validation).ok
    ):
        return Ok(payload=json_safe(output))
    finished = _finish(
        _Prepared(tool, list(args), kwargs, ()), _call(tool, call_id), output, validation
    )
    return finished.to_result()


async def _general(
    tool: Tool,
    call_id: str,
    arguments: Mapping[str, Any],
    context: ToolContext | None,
    limiter: anyio.CapacityLimiter | None,
    validation: str,
) -> Ok[Any] | Err:
    """The long way, for the one case the short path has to give up after trying."""
    call = ToolCall(id=call_id, name=tool.name, input=dict(arguments))
    result = await dispatch(
        {tool.name: tool}, call, context=context, limiter=limiter, validation=validation
    )
    return result.to_result()


def _call(tool: Tool, call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name=tool.name)


def _boxed(fn: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any]:
    """Call a sync tool in a worker thread; boxed so an awaitable result is not refused."""
    return (fn(*args, **kwargs),)


def _has_other_keys(arguments: Mapping[Any, Any]) -> bool:
    return any(not isinstance(key, str) for key in arguments)
