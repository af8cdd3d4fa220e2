"""The program host: run a ``RunProgram`` directive (PTC-Lisp in, ``ProgramOutput`` out).

:func:`perform_program` is the whole work of the directive given a tool router: a
runtime performs the directive by passing its own sub-call function (which validates the
arguments, applies the tool's timeout and retries, publishes ``ai.tool.started`` /
``ai.tool.result`` for ``call_id`` ``f"{directive.id}/tool/{index}"``, opens the
``execute_tool`` span) and publishing the returned output. What varies from one call to
the next besides the directive (the run's cache, a record to resume from, ...) travels as
one :class:`ProgramOptions`. :func:`plain_value` is the value boundary: a program's values
as plain JSON data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Final, Protocol

import msgspec

from ptcflow.directives import RunProgram
from ptcflow.errors import UsageError
from ptcflow.lisp import (
    SUSPEND,
    Keyword,
    LimitExceeded,
    Limits,
    LispResult,
    ToolCallRecord,
    from_python,
    kept_functions,
    pr_str,
    run,
)
from ptcflow.program._memory import ProgramCache, memory_in, memory_out, return_verdict
from ptcflow.signals import (
    Err,
    ErrorEnvelope,
    Ok,
    ProgramError,
    ProgramOutput,
    ProgramToolCall,
    normalize_result,
)

__all__ = ("ProgramOptions", "ProgramRouter", "perform_program", "plain_value")

_LIMITS: Final = Limits()  # a directive without overrides: one value (frozen), not one per program


class ProgramRouter(Protocol):
    """``await call(name, arguments, index) -> Ok | Err``: performs one tool call of a
    program (a runtime passes its ``ctx.call_tool(name, arguments, index=index)``)."""

    def __call__(
        self, name: str, arguments: dict[str, Any], index: int, /
    ) -> Awaitable[Ok[Any] | Err]:
        """Perform the call and return its envelope."""
        ...


class ProgramOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How :func:`perform_program` runs a directive, besides the directive and its router.

    One value where a runtime would otherwise thread five keywords through its layers (a
    runtime's program kind builds one per attempt; ``perform_program``'s keywords of the
    same names build one too).

    Attributes:
        cache: what the programs of one run share (:class:`ProgramCache`): pass the same
            one to each turn's program. ``None``: a cache for this program alone.
        replay: the ``tool_calls`` of an earlier output of the same directive: they are
            answered from it, by index, and the router performs only the calls it lacks
            (a durable worker resuming the program). Without a router nothing runs, and
            a call the record lacks raises.
        on_call: called with each call the router performed, as soon as it has its
            result (a durable worker heartbeats them; a retry passes them back as
            ``replay``).
        plain_results: the router returns ``Ok`` payloads that are plain JSON data
            already (as the runtime's ``ai.tool.result`` carries them): they are recorded
            as they are instead of being copied by :func:`plain_value`.
        untimed_tools: tools whose calls bound themselves (agents used as tools): waiting
            on them does not count against the program's time limit (see
            :func:`ptcflow.lisp.run`).
        on_print: called with each chunk of output as the program prints it (a
            runtime publishes ``ai.program.print``); it must not block.

    Example:
        >>> ProgramOptions(cache=ProgramCache(), plain_results=True).plain_results
        True
    """

    cache: ProgramCache | None = None
    replay: Sequence[ProgramToolCall] | None = None
    on_call: Callable[[ProgramToolCall], None] | None = None
    plain_results: bool = False
    untimed_tools: Collection[str] = ()
    on_print: Callable[[str], None] | None = None


async def perform_program(
    directive: RunProgram,
    call: ProgramRouter | None = None,
    *,
    options: ProgramOptions | None = None,
    replay: Sequence[ProgramToolCall] | None = None,
    on_call: Callable[[ProgramToolCall], None] | None = None,
    cache: ProgramCache | None = None,
    plain_results: bool = False,
    untimed_tools: Collection[str] = (),
) -> ProgramOutput:
    """Run ``directive``'s program and describe what it did. Blocks while tools run.

    Program errors never raise: they are in the output's ``error`` (with line and column).
    It needs no runtime: any async code can call it (on asyncio or trio), a durable
    worker's activity included.

    Args:
        directive: the program and what it depends on.
        call: performs each tool call (``await call(name, arguments, index)`` returning
            ``Ok`` or ``Err``); ``None`` only with ``replay``.
        options: the rest, as one :class:`ProgramOptions`; or pass its fields as the
            keywords below (not both).
        replay: see :class:`ProgramOptions` (as are the keywords after it).
        on_call: called with each call ``call`` performed.
        cache: what the programs of one run share.
        plain_results: ``call`` returns plain JSON data already.
        untimed_tools: tools whose waits do not count against the time limit.

    Returns:
        The :class:`~ptcflow.signals.ProgramOutput`.

    Raises:
        ReplayMismatch: the program asked for a call the record holds differently.
        UsageError: the directive's memory or functions are not what a ProgramOutput
            returned, or its limits are invalid; or ``options`` came with keywords.

    Example:
        >>> import anyio
        >>> async def add(name, args, index):
        ...     return Ok(payload=args["a"] + args["b"])
        >>> d = RunProgram(id="p1", source='(return (call "add" {:a 1 :b 2}))',
        ...                tool_names=("add",))
        >>> out = anyio.run(perform_program, d, add)
        >>> out.value, out.returned, out.tool_calls[0].result
        (3, True, Ok(payload=3, effects=()))
    """
    if options is None:
        options = ProgramOptions(
            cache=cache,
            replay=replay,
            on_call=on_call,
            plain_results=plain_results,
            untimed_tools=untimed_tools,
        )
    elif (
        cache is not None
        or replay is not None
        or on_call is not None
        or plain_results
        or (untimed_tools)
    ):
        raise UsageError(
            "perform_program(options=...) takes the options in one ProgramOptions: "
            "pass cache, replay, on_call, plain_results and untimed_tools in it, not as keywords"
        )
    cache = ProgramCache() if options.cache is None else options.cache  # one run's, at least
    replay, on_call, plain_results = options.replay, options.on_call, options.plain_results
    envelopes: dict[int, Ok[Any] | Err] = {}
    made: dict[int, tuple[Any, Any]] = {}  # index -> (arguments, as plain data): made once
    router = None
    if call is not None:
        perform = call

        async def route(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
            got: Any = await perform(name, args, index)
            if got is SUSPEND:  # the call waits for a person: the program stops after it
                return got  # type: ignore[return-value]
            result = got if isinstance(got, Ok | Err) else normalize_result(got)
            if isinstance(result, Ok) and not plain_results:
                result = Ok(payload=plain_value(result.payload), effects=result.effects)
            envelopes[index] = result
            if on_call is not None:
                plain = plain_value(args)
                made[index] = (args, plain)
                on_call(ProgramToolCall(index=index, name=name, args=plain, result=result))
            return result

        router = route
    records = None
    if replay is not None:
        records = [_record(c) for c in replay]
        envelopes.update({c.index: c.result for c in replay})
    start = time.perf_counter()
    result = await run(
        directive.source,
        ctx=directive.ctx,
        tool_names=directive.tool_names,
        memory=memory_in(directive.memory, cache),
        limits=Limits(**directive.limits) if directive.limits else _LIMITS,
        call=router,
        replay=records,
        resume=records is not None and router is not None,
        functions=tuple(directive.functions.values()),
        converted=cache.converted,
        untimed_tools=options.untimed_tools,
        on_print=options.on_print,
    )
    duration = (time.perf_counter() - start) * 1000
    value = plain_value(result.value)
    keep = result.error is None and not result.failed
    verdict = None
    if keep and result.returned:
        verdict = return_verdict(directive, value, cache)
        if verdict is not None:
            keep = False  # the run ends with this value: its memory is never read again
    too_large = False
    if keep:
        try:
            memory, dropped = memory_out(result.memory, cache, directive.memory_limit_bytes)
        except LimitExceeded:
            too_large = True
        else:
            functions, dropped_fns = kept_functions(
                directive.source, result.memory, directive.functions, forms=result.forms or None
            )
            dropped.update(dropped_fns)
    if not keep or too_large:
        # memory is transactional: a failed run keeps what it was given, and so does a
        # return that ends the run (nothing reads it after)
        memory, functions, dropped = dict(directive.memory), dict(directive.functions), {}
    size = sum(len(k) + len(v.encode()) for k, v in memory.items())
    size += sum(len(k) + len(v.encode()) for k, v in functions.items())
    if too_large and directive.memory_limit_bytes is not None:
        size = max(size, directive.memory_limit_bytes + 1)  # one value's text passes it
    return ProgramOutput(
        value=value,
        returned=result.returned,
        failed=result.failed,
        fail_value=plain_value(result.fail_value),
        prints=tuple(result.prints),
        error=_error(result),
        tool_calls=tuple(_tool_call(r, envelopes, made) for r in result.tool_calls),
        memory=memory,
        functions=functions,
        dropped=dropped,
        memory_bytes=size,
        duration_ms=round(duration, 3),
        return_ends_run=verdict is not None,
        return_warnings=verdict or (),
    )


def plain_value(value: Any) -> Any:
    """Return a program value as plain JSON data that survives the journal unchanged.

    Keywords become their names, tuples and sets lists, map keys strings (a non-string key
    becomes its PTC-Lisp text), non-finite floats ``"##Inf"``/``"##-Inf"``/``"##NaN"``.

    Example:
        >>> from ptcflow.lisp import Keyword
        >>> plain_value({"s": Keyword("done"), 1: (1.5, float("inf"))})
        {'s': 'done', '1': [1.5, '##Inf']}
    """
    t = type(value)
    if value is None or t is str or t is bool or t is int:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        return "##NaN" if math.isnan(value) else ("##Inf" if value > 0 else "##-Inf")
    if isinstance(value, Mapping):
        return {_key(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain_value(v) for v in value]
    if t is Keyword:
        return value.name
    if isinstance(value, msgspec.Struct):
        return plain_value(msgspec.to_builtins(value))
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if type(key) is Keyword:
        return key.name
    try:  # a tuple key (an exported vector) prints as a vector: [1 2]
        return pr_str(from_python(key, keywordize_keys=False), limit=1000)
    except TypeError:
        return str(key)


def _error(result: LispResult) -> ProgramError | None:
    err = result.error
    if err is None:
        return None
    return ProgramError(
        category=err.category,
        message=err.message,
        line=err.line,
        column=err.column,
        limit=getattr(err, "limit", None),
    )


def _tool_call(
    record: ToolCallRecord,
    envelopes: Mapping[int, Ok[Any] | Err],
    made: Mapping[int, tuple[Any, Any]],
) -> ProgramToolCall:
    result = envelopes.get(record.index)
    if result is None:  # no router answered it (a record without envelopes)
        if record.error is None:
            result = Ok(payload=plain_value(record.result))
        else:
            result = Err(error=ErrorEnvelope.make("tool_error", record.error))
    known = made.get(record.index)  # the router's record made them plain already
    return ProgramToolCall(
        index=record.index,
        name=record.name,
        args=known[1]
        if known is not None and known[0] is record.args
        else plain_value(record.args),
        result=result,
        duration_ms=round(record.duration_ms, 3),
    )


def _record(call: ProgramToolCall) -> ToolCallRecord:
    result = call.result
    if isinstance(result, Ok):
        return ToolCallRecord(
            name=call.name, args=call.args, result=result.payload, index=call.index
        )
    error = result.error
    return ToolCallRecord(
        name=call.name, args=call.args, error=f"{error.type}: {error.message}", index=call.index
    )
