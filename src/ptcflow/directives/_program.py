"""``RunProgram``: run one PTC-Lisp program, routing its tool calls through the runtime.

The directive carries everything the program's run depends on, as plain data: the source,
the ``ctx`` values, the memory and functions kept from earlier turns, the callable tools
and the limits. Its terminal signal is ``ai.program.result`` carrying
``Ok(ProgramOutput)`` (the program ran, maybe into a program error the model must fix) or
``Err`` (cancelled, the directive's deadline, an internal crash).

:func:`perform_program` is the whole work of the directive given a tool router: a
runtime performs the directive by passing its own sub-call function (which validates the
arguments, applies the tool's timeout and retries, publishes ``ai.tool.started`` /
``ai.tool.result`` for ``call_id`` ``f"{directive.id}/tool/{index}"``, opens the
``execute_tool`` span) and publishing the returned output.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ptcflow.directives._base import Directive
from ptcflow.program._memory import (
    VALIDATION_MODES,
    ProgramCache,
    memory_in,
    memory_out,
    return_ends_run,
)
from ptcflow.signals import (
    Err,
    ErrorEnvelope,
    Ok,
    ProgramError,
    ProgramOutput,
    ProgramToolCall,
    normalize_result,
)

if TYPE_CHECKING:
    from ptcflow.lisp import LispResult, ToolCallRecord

__all__ = ("ProgramRouter", "RunProgram", "perform_program", "plain_value")


class ProgramRouter(Protocol):
    """``await call(name, arguments, index) -> Ok | Err``: performs one tool call of a
    program (a runtime passes its ``ctx.call_tool(name, arguments, index=index)``)."""

    def __call__(
        self, name: str, arguments: dict[str, Any], index: int, /
    ) -> Awaitable[Ok[Any] | Err]:
        """Perform the call and return its envelope."""
        ...


class RunProgram(Directive, frozen=True, kw_only=True, tag="run_program"):
    """Run one PTC-Lisp program. Signal: ``ai.program.result`` (terminal).

    Its tool calls are sub-calls of the directive: each goes through the runtime's tool
    machinery and publishes ``ai.tool.started`` / ``ai.tool.result`` with ``call_id``
    ``f"{id}/tool/{index}"`` and ``causation_id`` ``id``.

    Attributes:
        source: the program text (one program, already extracted from the response).
        ctx: the values read as ``ctx/key``: plain JSON data with string keys (the run's
            context, earlier results merged in, and ``fail`` after a failed turn).
        memory: values kept from earlier turns, ``{name: PTC-Lisp text}`` (as
            ``ProgramOutput.memory`` returned them).
        functions: functions kept from earlier turns, ``{name: source of its defn}``,
            evaluated before the program.
        tool_names: the tools the program may call (``return`` and ``fail`` are part of
            the language and not listed); any other name is an ``unknown_tool`` error
            found before anything runs.
        limits: overrides of :class:`ptcflow.lisp.Limits` fields, for example
            ``{"timeout_ms": 2000, "max_tool_calls": 10}``. Reaching one is a program
            error (``Ok`` with ``error``), not a failure of the directive.
        memory_limit_bytes: the most memory the output may keep (its ``memory_bytes``);
            a value whose text alone passes it is not written out: the output keeps the
            memory it was given and reports ``memory_bytes`` over the limit. ``None``: a
            value whose text passes 1,000,000 characters is dropped with the reason.
        return_signature: the signature whose output the value of ``(return v)`` must
            match (the agent's), or ``None``: any value.
        return_validation: the mode in which the strategy checks a returned value against
            ``return_signature`` (``enabled``, ``strict``, ``warn_only``, ``disabled``), or
            ``None``: not known. When it is set, a program whose ``return`` the strategy
            will accept (the run ends with it) does not write its memory: the output keeps
            the memory and functions it was given, and ``memory_limit_bytes`` does not
            apply to it. ``None`` (also a directive from an older journal): the memory is
            written after every program that succeeds.
    """

    source: str
    ctx: dict[str, Any] = msgspec.field(default_factory=dict)
    memory: dict[str, str] = msgspec.field(default_factory=dict)
    functions: dict[str, str] = msgspec.field(default_factory=dict)
    tool_names: tuple[str, ...] = ()
    limits: dict[str, Any] = msgspec.field(default_factory=dict)
    memory_limit_bytes: int | None = None
    return_signature: str | None = None
    return_validation: str | None = None

    def problems(self) -> list[str]:
        """Also checks the source and the limit names."""
        out = Directive.problems(self)  # by class, not super(): cheaper, once per directive
        if not self.source.strip():
            out.append("source must be a non-empty program")
        if self.memory_limit_bytes is not None and self.memory_limit_bytes < 1:
            out.append(f"memory_limit_bytes must be >= 1 or None, got {self.memory_limit_bytes}")
        mode = self.return_validation
        if mode is not None and mode.lstrip(":") not in VALIDATION_MODES:
            out.append(
                f"return_validation must be one of {sorted(VALIDATION_MODES)} or None, got {mode!r}"
            )
        if self.return_signature is not None:
            from ptcflow.signature import SignatureError, parse

            try:
                parse(self.return_signature)
            except SignatureError as exc:
                out.append(f"return_signature does not parse: {exc}")
        if self.limits:
            from ptcflow.lisp import Limits

            known = set(Limits.__struct_fields__)
            unknown = sorted(set(self.limits) - known)
            if unknown:
                out.append(f"limits has unknown fields {unknown}; known: {sorted(known)}")
        return out


async def perform_program(
    directive: RunProgram,
    call: ProgramRouter | None = None,
    *,
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
        replay: the ``tool_calls`` of an earlier output of the same directive: they are
            answered from it, by index, and ``call`` performs only the calls it lacks (a
            durable worker resuming the program). Without ``call`` nothing runs, and a
            call the record lacks raises.
        on_call: called with each call ``call`` performed, as soon as it has its result
            (a durable worker heartbeats them; a retry passes them back as ``replay``).
        cache: what the programs of one run share (:class:`ProgramCache`): pass the same
            one to each turn's program.
        plain_results: ``call`` returns ``Ok`` payloads that are plain JSON data already
            (as the runtime's ``ai.tool.result`` carries them): they are recorded as they
            are instead of being copied by :func:`plain_value`.
        untimed_tools: tools whose calls bound themselves (agents used as tools): waiting
            on them does not count against the program's time limit (see
            :func:`ptcflow.lisp.run`).

    Returns:
        The :class:`~ptcflow.signals.ProgramOutput`.

    Raises:
        ReplayMismatch: the program asked for a call the record holds differently.
        UsageError: the directive's memory or functions are not what a ProgramOutput
            returned, or its limits are invalid.

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
    from ptcflow.lisp import LimitExceeded, Limits, ToolCallRecord, kept_functions, run

    cache = ProgramCache() if cache is None else cache  # one run's, at least
    envelopes: dict[int, Ok[Any] | Err] = {}
    router = None
    if call is not None:
        perform = call

        async def route(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
            got: Any = await perform(name, args, index)
            result = got if isinstance(got, Ok | Err) else normalize_result(got)
            if isinstance(result, Ok) and not plain_results:
                result = Ok(payload=plain_value(result.payload), effects=result.effects)
            envelopes[index] = result
            if on_call is not None:
                on_call(
                    ProgramToolCall(index=index, name=name, args=plain_value(args), result=result)
                )
            return result

        router = route
    records = None
    if replay is not None:
        records = [_record(ToolCallRecord, c) for c in replay]
        envelopes.update({c.index: c.result for c in replay})
    start = time.perf_counter()
    result = await run(
        directive.source,
        ctx=directive.ctx,
        tool_names=directive.tool_names,
        memory=memory_in(directive.memory, cache),
        limits=Limits(**directive.limits),
        call=router,
        replay=records,
        resume=records is not None and router is not None,
        functions=tuple(directive.functions.values()),
        converted=None if cache is None else cache.converted,
        untimed_tools=untimed_tools,
    )
    duration = (time.perf_counter() - start) * 1000
    value = plain_value(result.value)
    keep = result.error is None and not result.failed
    if keep and result.returned and return_ends_run(directive, value, cache):
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
        tool_calls=tuple(_tool_call(r, envelopes) for r in result.tool_calls),
        memory=memory,
        functions=functions,
        dropped=dropped,
        memory_bytes=size,
        duration_ms=round(duration, 3),
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
    name = getattr(value, "name", None)
    if type(value).__name__ == "Keyword" and isinstance(name, str):
        return name
    if isinstance(value, msgspec.Struct):
        return plain_value(msgspec.to_builtins(value))
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    name = getattr(key, "name", None)
    if type(key).__name__ == "Keyword" and isinstance(name, str):
        return name
    from ptcflow.lisp import from_python, pr_str

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


def _tool_call(record: ToolCallRecord, envelopes: Mapping[int, Ok[Any] | Err]) -> ProgramToolCall:
    result = envelopes.get(record.index)
    if result is None:  # no router answered it (a record without envelopes)
        if record.error is None:
            result = Ok(payload=plain_value(record.result))
        else:
            result = Err(error=ErrorEnvelope.make("tool_error", record.error))
    return ProgramToolCall(
        index=record.index,
        name=record.name,
        args=plain_value(record.args),
        result=result,
        duration_ms=round(record.duration_ms, 3),
    )


def _record(cls: type[ToolCallRecord], call: ProgramToolCall) -> ToolCallRecord:
    result = call.result
    if isinstance(result, Ok):
        return cls(name=call.name, args=call.args, result=result.payload, index=call.index)
    error = result.error
    return cls(
        name=call.name, args=call.args, error=f"{error.type}: {error.message}", index=call.index
    )
