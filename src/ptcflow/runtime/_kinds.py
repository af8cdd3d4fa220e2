"""How each directive kind is performed: one :class:`Kind` record per directive class.

A kind says how to prepare a directive (at submit time and in its task), how to perform
one attempt, which terminal signal ends it, and which span describes it. The executor
supplies everything else (deadlines, retries, limits, the exactly-once terminal).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgspec

from ptcflow.directives import (
    RESERVED_CONTEXT_KEY,
    Directive,
    EmitRequestError,
    EmitToolError,
    LLMEmbed,
    LLMGenerate,
    LLMStream,
    RunChild,
    ToolExec,
)
from ptcflow.errors import ConfigError
from ptcflow.runtime._context import DirectiveContext
from ptcflow.runtime._provider import (
    EmbedRequest,
    LLMProvider,
    LLMRequest,
    ModelResolver,
    ProviderError,
)
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.signals import (
    EMBED_RESULT,
    INTERNAL,
    LLM_DELTA,
    LLM_RESPONSE,
    PROVIDER_ERROR,
    REQUEST_ERROR,
    TIMEOUT,
    TOOL_RESULT,
    TOOL_STARTED,
    TRANSIENT,
    UNKNOWN_TOOL,
    USAGE,
    VALIDATION,
    EmbedResponse,
    EmbedResultData,
    Err,
    ErrorEnvelope,
    LLMDeltaData,
    LLMResponse,
    LLMResponseData,
    Ok,
    RequestErrorData,
    StreamAssembler,
    ToolResultData,
    ToolStartedData,
    UsageData,
    normalize_result,
)

__all__ = ("Handler", "Kind", "builtin_kinds", "custom_kind", "is_resolver", "unknown_kind")


class Handler(Protocol):
    """A directive handler: ``async def handler(directive, ctx) -> result``.

    Called once per attempt with the directive and its :class:`DirectiveContext`. Return
    the result in any shape :func:`~ptcflow.signals.normalize_result` accepts (a value,
    ``Ok``/``Err``, an ``ErrorEnvelope``, an ``(ok, value)`` pair); an ``Err`` whose
    envelope is ``retryable`` is retried under the directive's ``max_retries``. The
    executor publishes the terminal ``ai.tool.result`` itself; a handler may publish
    intermediate signals with ``ctx.emit``. A raised exception ends the directive with an
    ``internal`` error (never retried); cancellation must be left to propagate.
    """

    def __call__(self, directive: Any, ctx: DirectiveContext, /) -> Awaitable[Any]:
        """Perform one attempt of ``directive``."""
        ...


def _noop_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    return None


def _noop_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    return None


class Kind:
    """The handler registration of one directive class (see the module docstring)."""

    __slots__ = (
        "close_span",
        "inline",
        "label",
        "open_span",
        "perform",
        "prepare",
        "prepare_sync",
        "retries",
        "terminal",
    )

    def __init__(
        self,
        label: str,
        *,
        terminal: Callable[[DirectiveContext, Any], None],
        perform: Callable[[DirectiveContext], Awaitable[Any]] | None = None,
        inline: Callable[[DirectiveContext], Any] | None = None,
        prepare_sync: Callable[[DirectiveContext], None] | None = None,
        prepare: Callable[[DirectiveContext], Any] | None = None,
        open_span: Callable[[DirectiveContext, Telemetry], None] = _noop_span,
        close_span: Callable[[DirectiveContext, Telemetry, Any, float], None] = _noop_close,
        retries: bool = True,
    ) -> None:
        self.label = label
        self.terminal = terminal
        self.perform: Callable[[DirectiveContext], Awaitable[Any]] = perform or _never
        self.inline = inline
        self.prepare_sync = prepare_sync
        self.prepare = prepare
        self.open_span = open_span
        self.close_span = close_span
        self.retries = retries


async def _never(ctx: DirectiveContext) -> Any:  # pragma: no cover - inline kinds only
    raise AssertionError("inline directive kinds are never performed in a task")


# -- shared terminal: ai.tool.result ---------------------------------------------------


def _tool_terminal(ctx: DirectiveContext, result: Any) -> None:
    d = ctx.directive
    name = getattr(d, "tool_name", None) or getattr(d, "agent", None) or _tag(type(d))
    run = ctx.run
    run.tool_calls += 1
    ms = 0.0
    if ctx.started_at:
        ms = round((run.clock() - ctx.started_at) * 1000.0, 3)
    ctx.emit(
        TOOL_RESULT,
        ToolResultData(tool_name=name, result=result, attempts=max(ctx.attempt, 1), duration_ms=ms),
    )


def _tag(cls: type[Any]) -> str:
    tag = getattr(cls, "__struct_config__", None)
    return str(tag.tag) if tag is not None and tag.tag else cls.__name__


def _tool_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    d = ctx.directive
    name = getattr(d, "tool_name", None) or getattr(d, "agent", None) or _tag(type(d))
    span = tel.start_span(
        f"execute_tool {name}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": d.id,
        },
        ctx.run.otel_context,
    )
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.run.otel_context)
    ctx.traceparent = tel.traceparent(span)
    if isinstance(d, ToolExec):
        tel.content(span, "gen_ai.tool.call.arguments", d.arguments)


def _tool_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    if result.ok:
        tel.content(ctx.span, "gen_ai.tool.call.result", result.payload)
    tel.end_span(ctx.span, result)
    tel.record("execute_tool", duration, error_type=None if result.ok else result.error.type)


# -- LLMGenerate / LLMStream -----------------------------------------------------------


def _resolve(ctx: DirectiveContext, model: str | None, alias: str | None) -> None:
    llm = ctx.run.llm
    if llm is None:
        ctx.data = _validation(
            f"{type(ctx.directive).__name__} {ctx.directive.id!r} needs a model, but the run "
            "has none: pass llm=... to Runtime(...) or rt.run(...)"
        )
        return
    try:
        if ctx.run.llm_is_resolver:
            provider, name = llm.resolve(model, alias)
        else:
            provider = llm
            name = model or alias or str(getattr(llm, "model", "") or "")
    except ConfigError as exc:
        ctx.data = _validation(str(exc))
        return
    ctx.data = (provider, name)


def _validation(message: str) -> Err:
    return Err(error=ErrorEnvelope.make(VALIDATION, message, retryable=False))


def is_resolver(llm: Any) -> bool:
    """True when ``llm`` is a model resolver rather than a provider (decided once per run)."""
    return isinstance(llm, ModelResolver) and not isinstance(llm, LLMProvider)


def _llm_prepare_sync(ctx: DirectiveContext) -> None:
    d = ctx.directive
    assert isinstance(d, LLMGenerate | LLMEmbed)
    _resolve(ctx, d.model, d.model_alias)


def _llm_prepare(ctx: DirectiveContext) -> Any:
    return ctx.data if isinstance(ctx.data, Err) else None


def _provider_name(provider: Any) -> str:
    return str(getattr(provider, "name", "") or type(provider).__name__)


def _classify(exc: Exception, provider: Any, ctx: DirectiveContext) -> Err:
    if isinstance(exc, ProviderError):
        ctx.retry_after = exc.retry_after
        return Err(error=exc.envelope)
    who = _provider_name(provider)
    if isinstance(exc, TimeoutError):
        kind, retryable = TIMEOUT, True
    elif isinstance(exc, ConnectionError):
        kind, retryable = TRANSIENT, True
    else:
        kind, retryable = PROVIDER_ERROR, False
    return Err(
        error=ErrorEnvelope.make(
            kind,
            f"provider {who!r} failed on attempt {ctx.attempt}: {type(exc).__name__}: {exc}",
            {"exception": type(exc).__name__, "provider": who},
            retryable=retryable,
        )
    )


def _request(ctx: DirectiveContext) -> tuple[Any, LLMRequest]:
    provider, model = ctx.data
    d = ctx.directive
    assert isinstance(d, LLMGenerate)
    req = LLMRequest(
        model=model,
        messages=d.messages,
        tools=d.tools,
        tool_choice=d.tool_choice,
        response_schema=d.response_schema,
        options=d.options,
    )
    return provider, req


async def _generate(ctx: DirectiveContext) -> Any:
    provider, req = _request(ctx)
    limiter = ctx.run.executor.provider_limiter(_provider_name(provider))
    try:
        if limiter is None:
            resp = await provider.generate(req)
        else:
            async with limiter:
                resp = await provider.generate(req)
    except Exception as exc:
        return _classify(exc, provider, ctx)
    return _check_response(resp, provider, req.model, LLMResponse)


def _check_response(resp: Any, provider: Any, model: str, cls: type[Any]) -> Any:
    if not isinstance(resp, cls):
        return Err(
            error=ErrorEnvelope.make(
                PROVIDER_ERROR,
                f"provider {_provider_name(provider)!r} returned {type(resp).__name__}, "
                f"expected {cls.__name__} (malformed provider output)",
                {"provider": _provider_name(provider)},
                retryable=False,
            )
        )
    if not resp.model and model:
        resp = msgspec.structs.replace(resp, model=model)
    return Ok(payload=resp)


async def _stream(ctx: DirectiveContext) -> Any:
    provider, req = _request(ctx)
    limiter = ctx.run.executor.provider_limiter(_provider_name(provider))
    if limiter is None:
        return await _consume(ctx, provider, req)
    async with limiter:
        return await _consume(ctx, provider, req)


async def _consume(ctx: DirectiveContext, provider: Any, req: LLMRequest) -> Any:
    assembler = StreamAssembler()
    chunks = provider.stream(req)
    try:
        async for chunk in chunks:
            ctx.no_retry = True  # deltas are visible now: a retry would repeat them
            assembler.add(chunk)
            ctx.emit(LLM_DELTA, LLMDeltaData(chunk=chunk))
    except Exception as exc:
        return _classify(exc, provider, ctx)
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    try:
        response = assembler.response()
    except ValueError as exc:
        return Err(
            error=ErrorEnvelope.make(
                PROVIDER_ERROR,
                f"provider {_provider_name(provider)!r} streamed a malformed response: {exc}",
                {"provider": _provider_name(provider)},
                retryable=False,
            )
        )
    return _check_response(response, provider, req.model, LLMResponse)


def _llm_terminal(ctx: DirectiveContext, result: Any) -> None:
    run = ctx.run
    run.turns += 1
    if result.ok:
        resp: LLMResponse = result.payload
        run.usage = run.usage + resp.usage
        ctx.emit(USAGE, UsageData(usage=resp.usage, model=resp.model))
    ctx.emit(LLM_RESPONSE, LLMResponseData(result=result, attempts=max(ctx.attempt, 1)))


def _model_attrs(ctx: DirectiveContext, operation: str) -> tuple[str, str, dict[str, Any]]:
    provider, model = ctx.data if isinstance(ctx.data, tuple) else (None, "")
    pname = _provider_name(provider) if provider is not None else ""
    attrs: dict[str, Any] = {"gen_ai.operation.name": operation}
    if pname:
        attrs["gen_ai.provider.name"] = pname
    if model:
        attrs["gen_ai.request.model"] = model
    return pname, model, attrs


def _llm_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    op = "embeddings" if isinstance(ctx.directive, LLMEmbed) else "chat"
    _, model, attrs = _model_attrs(ctx, op)
    span = tel.start_span(f"{op} {model}".strip(), attrs, ctx.run.otel_context)
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.run.otel_context)
    ctx.traceparent = tel.traceparent(span)
    d = ctx.directive
    if isinstance(d, LLMGenerate):
        tel.content(span, "gen_ai.input.messages", d.messages)
    elif isinstance(d, LLMEmbed):
        tel.content(span, "gen_ai.embeddings.input", d.inputs)


def _llm_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    op = "embeddings" if isinstance(ctx.directive, LLMEmbed) else "chat"
    pname, model, _ = _model_attrs(ctx, op)
    usage = result.payload.usage if result.ok else None
    attrs: dict[str, Any] = {}
    if result.ok:
        resp = result.payload
        attrs["gen_ai.usage.input_tokens"] = usage.input_tokens if usage else 0
        attrs["gen_ai.usage.output_tokens"] = usage.output_tokens if usage else 0
        attrs["gen_ai.response.model"] = resp.model or None
        if isinstance(resp, LLMResponse):
            attrs["gen_ai.response.finish_reasons"] = (resp.finish_reason,)
            tel.content(ctx.span, "gen_ai.output.messages", (resp.as_message(),))
    tel.end_span(ctx.span, result, **attrs)
    tel.record(
        op,
        duration,
        provider=pname,
        model=model,
        usage=usage,
        error_type=None if result.ok else result.error.type,
    )


# -- LLMEmbed --------------------------------------------------------------------------


async def _embed(ctx: DirectiveContext) -> Any:
    provider, model = ctx.data
    d = ctx.directive
    assert isinstance(d, LLMEmbed)
    req = EmbedRequest(model=model, inputs=d.inputs)
    limiter = ctx.run.executor.provider_limiter(_provider_name(provider))
    try:
        if limiter is None:
            resp = await provider.embed(req)
        else:
            async with limiter:
                resp = await provider.embed(req)
    except Exception as exc:
        return _classify(exc, provider, ctx)
    return _check_response(resp, provider, model, EmbedResponse)


def _embed_terminal(ctx: DirectiveContext, result: Any) -> None:
    if result.ok:
        ctx.run.usage = ctx.run.usage + result.payload.usage
    ctx.emit(EMBED_RESULT, EmbedResultData(result=result, attempts=max(ctx.attempt, 1)))


# -- ToolExec --------------------------------------------------------------------------


def _tool_prepare_sync(ctx: DirectiveContext) -> None:
    d = ctx.directive
    assert isinstance(d, ToolExec)
    run = ctx.run
    if run.tools.wants_context(d.tool_name):
        try:
            ctx.snapshot = run.snapshot()
        except Exception as exc:
            ctx.data = Err(
                error=ErrorEnvelope.make(
                    INTERNAL,
                    f"strategy {run.name!r} raised {type(exc).__name__} in snapshot() while "
                    f"preparing the context of tool call {d.id!r}: {exc}",
                    {"strategy": run.name, "exception": type(exc).__name__},
                    retryable=False,
                )
            )
    tool = run.tools.get(d.tool_name)
    if tool is not None:
        # A tool's own options win over the directive's: its author knows whether a
        # retry is safe and how long one call may take.
        if tool.max_retries is not None:
            ctx.max_retries = tool.max_retries
        if tool.timeout_ms is not None:
            at = ctx.attempt_ms
            ctx.attempt_ms = tool.timeout_ms if at is None else min(at, tool.timeout_ms)


def _tool_prepare(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, ToolExec)
    ctx.emit(TOOL_STARTED, ToolStartedData(tool_name=d.tool_name, arguments=d.arguments))
    return ctx.data if isinstance(ctx.data, Err) else None


async def _tool_perform(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, ToolExec)
    run = ctx.run
    ex = run.executor
    metadata = d.context
    if RESERVED_CONTEXT_KEY in metadata:
        metadata = {k: v for k, v in metadata.items() if k != RESERVED_CONTEXT_KEY}
    limiter = ex.tool_limiter(d.tool_name)
    if limiter is None:
        return await run.tools.call(
            d.tool_name,
            d.arguments,
            call_id=d.id,
            run_id=run.run_id,
            state=ctx.snapshot,
            metadata=metadata,
            limiter=ex.thread_limiter,
        )
    async with limiter:
        return await run.tools.call(
            d.tool_name,
            d.arguments,
            call_id=d.id,
            run_id=run.run_id,
            state=ctx.snapshot,
            metadata=metadata,
            limiter=ex.thread_limiter,
        )


# -- RunChild --------------------------------------------------------------------------


def _child_prepare(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, RunChild)
    ctx.emit(TOOL_STARTED, ToolStartedData(tool_name=d.agent, arguments=d.input))
    if d.agent not in ctx.run.agents:
        known = ", ".join(ctx.run.agents) or "none"
        return Err(
            error=ErrorEnvelope.make(
                UNKNOWN_TOOL,
                f"RunChild {d.id!r} names agent {d.agent!r}, which this run does not have; "
                f"agents: {known} (pass agents={{name: strategy}} to rt.run)",
                {"agent": d.agent, "available": list(ctx.run.agents)},
            )
        )
    return None


async def _child_perform(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, RunChild)
    step = await ctx.run.run_child(ctx, ctx.run.agents[d.agent], d.input)
    if step.ok:
        return Ok(payload=step.value)
    assert step.error is not None
    return Err(error=step.error)


# -- inline kinds ----------------------------------------------------------------------


def _emit_tool_error(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, EmitToolError)
    return Err(error=d.error)


def _emit_request_error(ctx: DirectiveContext) -> Any:
    d = ctx.directive
    assert isinstance(d, EmitRequestError)
    return Err(error=d.error)


def _request_error_terminal(ctx: DirectiveContext, result: Any) -> None:
    d = ctx.directive
    reason = d.reason if isinstance(d, EmitRequestError) else ""
    error = result.error if not result.ok else ErrorEnvelope.make("internal", "unexpected Ok")
    ctx.emit(REQUEST_ERROR, RequestErrorData(error=error, reason=reason))


def builtin_kinds() -> dict[type[Any], Kind]:
    """Return a fresh table of the built-in directive kinds."""
    llm = {
        "terminal": _llm_terminal,
        "prepare_sync": _llm_prepare_sync,
        "prepare": _llm_prepare,
        "open_span": _llm_span,
        "close_span": _llm_close,
    }
    return {
        LLMGenerate: Kind("LLMGenerate", perform=_generate, **llm),  # type: ignore[arg-type]
        LLMStream: Kind("LLMStream", perform=_stream, **llm),  # type: ignore[arg-type]
        LLMEmbed: Kind(
            "LLMEmbed",
            perform=_embed,
            terminal=_embed_terminal,
            prepare_sync=_llm_prepare_sync,
            prepare=_llm_prepare,
            open_span=_llm_span,
            close_span=_llm_close,
        ),
        ToolExec: Kind(
            "ToolExec",
            perform=_tool_perform,
            terminal=_tool_terminal,
            prepare_sync=_tool_prepare_sync,
            prepare=_tool_prepare,
            open_span=_tool_span,
            close_span=_tool_close,
        ),
        RunChild: Kind(
            "RunChild",
            perform=_child_perform,
            terminal=_tool_terminal,
            prepare=_child_prepare,
            open_span=_tool_span,
            close_span=_tool_close,
            retries=False,
        ),
        EmitToolError: Kind("EmitToolError", inline=_emit_tool_error, terminal=_tool_terminal),
        EmitRequestError: Kind(
            "EmitRequestError", inline=_emit_request_error, terminal=_request_error_terminal
        ),
    }


def custom_kind(cls: type[Directive], handler: Handler) -> Kind:
    """Wrap a user handler ``async def handler(directive, ctx) -> result`` as a kind."""

    async def perform(ctx: DirectiveContext) -> Any:
        return normalize_result(await handler(ctx.directive, ctx))

    label = getattr(handler, "__qualname__", repr(handler))
    return Kind(
        f"{cls.__name__} ({label})",
        perform=perform,
        terminal=_tool_terminal,
        open_span=_tool_span,
        close_span=_tool_close,
    )


def unknown_kind(cls: type[Any]) -> Kind:
    """The kind of a directive class nobody registered a handler for."""

    def inline(ctx: DirectiveContext) -> Any:
        return _validation(
            f"no handler is registered for directive kind {cls.__name__} "
            f"(id {ctx.directive.id!r}); register one with "
            f"Runtime(handlers={{{cls.__name__}: handler}})"
        )

    return Kind(cls.__name__, inline=inline, terminal=_tool_terminal)
