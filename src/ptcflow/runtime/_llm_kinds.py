"""The model directive kinds: ``LLMGenerate``, ``LLMStream`` and ``LLMEmbed``."""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.directives import LLMEmbed, LLMGenerate, LLMStream
from ptcflow.errors import ConfigError
from ptcflow.runtime._context import ZERO_USAGE, DirectiveContext
from ptcflow.runtime._kind import Kind, validation
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
    LLM_DELTA,
    LLM_RESPONSE,
    PROVIDER_ERROR,
    TIMEOUT,
    TRANSIENT,
    USAGE,
    EmbedResponse,
    EmbedResultData,
    Err,
    ErrorEnvelope,
    LLMDeltaData,
    LLMResponse,
    LLMResponseData,
    Ok,
    StreamAssembler,
    UsageData,
)

__all__ = ("is_resolver", "llm_kinds", "model_of")


def _llm_prepare_sync(ctx: DirectiveContext) -> None:
    """Resolve the provider and model name of an LLM directive into ``ctx.data`` (an
    ``Err`` when that fails: the attempt returns it without calling anything)."""
    run = ctx.run
    llm = run.llm
    d: Any = ctx.directive  # LLMGenerate | LLMStream | LLMEmbed
    if llm is None:
        ctx.data = validation(
            f"{type(d).__name__} {d.id!r} needs a model, but the run "
            "has none: pass llm=... to Runtime(...) or rt.run(...)"
        )
        return
    try:
        if run.llm_is_resolver:
            provider, name = llm.resolve(d.model, d.model_alias)
        else:
            provider = llm
            name = d.model or d.model_alias or run.llm_model
    except ConfigError as exc:
        ctx.data = validation(str(exc))
        return
    ctx.data = (provider, name)


def model_of(llm: Any) -> str:
    """The model name a provider reports (``llm.model``), or ``""``."""
    return str(getattr(llm, "model", "") or "")


def is_resolver(llm: Any) -> bool:
    """True when ``llm`` is a model resolver rather than a provider (decided once per run)."""
    return isinstance(llm, ModelResolver) and not isinstance(llm, LLMProvider)


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


def _llm_request(ctx: DirectiveContext, model: str) -> LLMRequest:
    """The request of an ``LLMGenerate`` / ``LLMStream`` for the resolved ``model``."""
    d: Any = ctx.directive  # LLMGenerate | LLMStream
    return LLMRequest(
        model=model,
        messages=d.messages,
        tools=d.tools,
        tool_choice=d.tool_choice,
        response_schema=d.response_schema,
        options=d.options,
    )


def _request(ctx: DirectiveContext) -> tuple[Any, LLMRequest]:
    provider, model = ctx.data
    return provider, _llm_request(ctx, model)


def _generate_call(ctx: DirectiveContext) -> Any:
    """One attempt's work: the provider's awaitable (under its limiter when it has one),
    or the ``Err`` of a model that could not be resolved (see _llm_prepare_sync)."""
    data = ctx.data
    if isinstance(data, Err):
        return data
    provider, model = data
    request = _llm_request(ctx, model)
    ex = ctx.run.executor
    if ex.provider_limited:
        limiter = ex.provider_limiter(_provider_name(provider))
        if limiter is not None:
            return _limited(limiter, provider.generate, request)
    return provider.generate(request)


async def _limited(limiter: Any, generate: Any, request: LLMRequest) -> Any:
    async with limiter:
        return await generate(request)


def _generate_settle(ctx: DirectiveContext, resp: Any) -> Any:
    if type(resp) is LLMResponse and resp.model:  # the common case, without a call
        return Ok(payload=resp)
    provider, model = ctx.data
    return _check_response(resp, provider, model, LLMResponse)


def _generate_fail(ctx: DirectiveContext, exc: Exception) -> Any:
    return _classify(exc, ctx.data[0], ctx)


async def _generate(ctx: DirectiveContext) -> Any:
    """One attempt of ``LLMGenerate`` in one coroutine: call, then settle or fail."""
    work = _generate_call(ctx)
    if type(work) is Err:
        return work
    try:
        resp = await work
    except Exception as exc:
        return _generate_fail(ctx, exc)
    return _generate_settle(ctx, resp)


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
    if isinstance(ctx.data, Err):  # the model could not be resolved
        return ctx.data
    provider, req = _request(ctx)
    ex = ctx.run.executor
    limiter = ex.provider_limiter(_provider_name(provider)) if ex.provider_limited else None
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
    if not isinstance(result, Err):
        resp: LLMResponse = result.payload
        u = run.usage
        run.usage = resp.usage if u is ZERO_USAGE else u + resp.usage
        run.emit(USAGE, UsageData(usage=resp.usage, model=resp.model), ctx)
    run.emit(LLM_RESPONSE, LLMResponseData(result=result, attempts=ctx.attempt or 1), ctx)


def _model_of(ctx: DirectiveContext) -> tuple[str, str]:
    provider, model = ctx.data if isinstance(ctx.data, tuple) else (None, "")
    return (_provider_name(provider) if provider is not None else ""), model


def _llm_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    d = ctx.directive
    op = "embeddings" if isinstance(d, LLMEmbed) else "chat"
    pname, model = _model_of(ctx)
    attrs: dict[str, Any] = {"gen_ai.operation.name": op}
    if pname:
        attrs["gen_ai.provider.name"] = pname
    if model:
        attrs["gen_ai.request.model"] = model
    span = tel.start_span(f"{op} {model}" if model else op, attrs, ctx.run.otel_context)
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.run.otel_context)
    ctx.traceparent = tel.traceparent(span)
    if tel.capture_content:
        if isinstance(d, LLMGenerate):
            tel.content(span, "gen_ai.input.messages", d.messages)
        elif isinstance(d, LLMEmbed):
            tel.content(span, "gen_ai.embeddings.input", d.inputs)


def _llm_close(ctx: DirectiveContext, tel: Telemetry, result: Any, duration: float) -> None:
    op = "embeddings" if isinstance(ctx.directive, LLMEmbed) else "chat"
    pname, model = _model_of(ctx)
    usage = None
    attrs: dict[str, Any] | None = None
    if result.ok:
        resp = result.payload
        usage = resp.usage
        attrs = {
            "gen_ai.usage.input_tokens": usage.input_tokens if usage else 0,
            "gen_ai.usage.output_tokens": usage.output_tokens if usage else 0,
        }
        if resp.model:
            attrs["gen_ai.response.model"] = resp.model
        if isinstance(resp, LLMResponse):
            attrs["gen_ai.response.finish_reasons"] = (resp.finish_reason,)
            if tel.capture_content:
                tel.content(ctx.span, "gen_ai.output.messages", resp)
    tel.end_span(ctx.span, result, attrs)
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
    if isinstance(ctx.data, Err):  # the model could not be resolved
        return ctx.data
    provider, model = ctx.data
    d = ctx.directive
    assert isinstance(d, LLMEmbed)
    req = EmbedRequest(model=model, inputs=d.inputs)
    ex = ctx.run.executor
    limiter = ex.provider_limiter(_provider_name(provider)) if ex.provider_limited else None
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
        u = ctx.run.usage
        ctx.run.usage = result.payload.usage if u is ZERO_USAGE else u + result.payload.usage
    ctx.emit(EMBED_RESULT, EmbedResultData(result=result, attempts=max(ctx.attempt, 1)))


def llm_kinds() -> dict[type[Any], Kind]:
    """The kinds of the model directives."""
    common: dict[str, Any] = {
        "prepare_sync": _llm_prepare_sync,
        "open_span": _llm_span,
        "close_span": _llm_close,
    }
    return {
        LLMGenerate: Kind(
            "LLMGenerate",
            perform=_generate,
            call=_generate_call,
            settle=_generate_settle,
            fail=_generate_fail,
            terminal=_llm_terminal,
            **common,
        ),
        LLMStream: Kind("LLMStream", perform=_stream, terminal=_llm_terminal, **common),
        LLMEmbed: Kind("LLMEmbed", perform=_embed, terminal=_embed_terminal, **common),
    }
