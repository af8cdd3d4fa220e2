"""The model directive kinds: ``LLMGenerate``, ``LLMStream`` and ``LLMEmbed``."""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.directives import LLMEmbed, LLMGenerate, LLMStream
from ptcflow.errors import ConfigError
from ptcflow.providers import (
    FALLBACK_OBSERVER,
    LLM_FALLBACK,
    EmbedRequest,
    FallbackModel,
    LLMRequest,
    ProviderError,
    fallback_error_type as error_type,
)
from ptcflow.runtime._run import DirectiveContext, ModelChoice
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.runtime._usage import cost_attributes
from ptcflow.runtime.kinds._base import Kind, validation
from ptcflow.signals import (
    LLM_DELTA,
    PROVIDER_ERROR,
    TIMEOUT,
    TRANSIENT,
    EmbedResponse,
    Err,
    ErrorEnvelope,
    LLMChunk,
    LLMDeltaData,
    LLMResponse,
    Ok,
    StreamAssembler,
)

__all__ = ("llm_kinds",)


def _llm_prepare_sync(ctx: DirectiveContext) -> None:
    """Resolve the provider and model name of an LLM directive into ``ctx.model``
    (``ctx.refused`` when that fails: the attempt returns it without calling anything)."""
    source = ctx.run.llm
    d: Any = ctx.directive  # LLMGenerate | LLMStream | LLMEmbed
    if source is None:
        ctx.refused = validation(
            f"{type(d).__name__} {d.id!r} needs a model, but the run "
            "has none: pass llm=... to Runtime(...) or rt.run(...)"
        )
        return
    try:
        provider, name = source.resolve(d.model, d.model_alias)
    except ConfigError as exc:
        ctx.refused = validation(str(exc))
        return
    ctx.model = ModelChoice(provider, name)
    if type(source.given) is FallbackModel and (
        type(provider) is not FallbackModel or type(d) is not LLMGenerate
    ):  # a fallback the kind does not drive itself: it reports to the observer
        FALLBACK_OBSERVER.set(_fallback_observer(ctx))
    elif FALLBACK_OBSERVER.get() is not None:
        FALLBACK_OBSERVER.set(None)


def _fallback_observer(ctx: DirectiveContext) -> Any:
    """Reports each attempt of a :class:`~ptcflow.providers.FallbackModel` of ``ctx``'s
    call (one the kind does not drive itself: a stream, a wrapped fallback)."""

    def observe(model: str, outcome: str, exc: BaseException | None) -> None:
        _report_attempt(ctx, model, outcome, exc)

    return observe


def _report_attempt(
    ctx: DirectiveContext, model: str, outcome: str, exc: BaseException | None
) -> None:
    """One attempt of a fallback: an ``ai.llm.fallback`` signal, and a ``chat`` span when
    it failed."""
    kind = error_type(exc) if exc is not None else ""
    message = f"{type(exc).__name__}: {exc}" if exc is not None else ""
    ctx.run.emit(
        ctx,
        LLM_FALLBACK,
        {"model": model, "outcome": outcome, "error_type": kind, "message": message[:500]},
    )
    tel = ctx.run.executor.telemetry
    if tel is not None and tel.tracing and outcome == "failed":
        span = tel.start_span(
            f"chat {model}",
            {"gen_ai.operation.name": "chat", "ptcflow.fallback.model": model},
            ctx.otel_context,
        )
        error = ErrorEnvelope.make(kind or PROVIDER_ERROR, message or "failed")
        tel.end_span(span, Err(error=error), None)


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


def _limiter(ctx: DirectiveContext, provider: Any) -> Any:
    """The provider's concurrency limiter (``None``: it has none)."""
    return ctx.run.executor.provider_limiter(_provider_name(provider))


def _generate_call(ctx: DirectiveContext) -> Any:
    """One attempt's work: the provider's ``generate``, or the ``Err`` of a model that
    could not be resolved (or of a request no rate limit could carry).

    The production controls are folded in here rather than wrapped around the provider:
    the rate limit's buckets are taken synchronously (a coroutine only when the call must
    wait), and a :class:`~ptcflow.providers.FallbackModel` is driven by the kind (its
    first model's ``generate`` is the work; :func:`_llm_fail` goes on with the next)."""
    if ctx.refused is not None:
        return ctx.refused
    choice = ctx.model  # resolved: its work started
    assert choice is not None
    provider = choice.provider
    request = _llm_request(ctx, choice.name)
    run = ctx.run
    wait = 0.0
    if run.rate is not None:
        plan = run.rate.plan(provider, choice.name)
        if plan is not None:
            taken = plan.take(request)
            if type(taken) is Err:
                return taken
            tokens, wait = taken
            ctx.reserved = (plan, tokens)
    target = provider
    if type(provider) is FallbackModel:
        if provider.primary is not None and request.model:  # no circuit open: the first
            target = provider.primary
            ctx.fallback = (provider, provider.entries, 0, request)
        else:
            target, request = _fallback_first(ctx, provider, request)
    limiter = _limiter(ctx, provider) if run.executor.provider_limited else None
    if limiter is None and not wait:
        return target.generate(request)
    return _held(ctx, wait, limiter, target, request)


async def _held(
    ctx: DirectiveContext, wait: float, limiter: Any, provider: Any, request: LLMRequest
) -> Any:
    """``provider.generate(request)`` after the rate limit's wait, under the provider's
    concurrency limiter (when it has one)."""
    if wait:
        plan, tokens = ctx.reserved
        await plan.hold(wait, tokens)
    if limiter is None:
        return await provider.generate(request)
    async with limiter:
        return await provider.generate(request)


def _fallback_first(
    ctx: DirectiveContext, fallback: FallbackModel, request: LLMRequest
) -> tuple[Any, LLMRequest]:
    """The first model of ``fallback`` to try (the skipped ones reported)."""
    order, provider, model, skipped = fallback.first(request.model)
    for label in skipped:
        _report_attempt(ctx, label, "skipped", None)
    ctx.fallback = (fallback, order, 0, request)
    if model != request.model:
        return provider, msgspec.structs.replace(request, model=model)
    return provider, request


def _routed(fallback: FallbackModel, entry: Any, request: LLMRequest) -> tuple[Any, LLMRequest]:
    provider, model = fallback.route(entry, request.model)
    if model != request.model:
        request = msgspec.structs.replace(request, model=model)
    return provider, request


def _fallback_next(ctx: DirectiveContext, exc: Exception) -> Any:
    """The model of ``ctx``'s fallback at hand failed with ``exc``: the next model's work,
    or ``None`` when the failure is the call's (not a kind to fall back on, or the last
    model)."""
    fallback, order, i, request = ctx.fallback
    entry = order[i]
    go_on = fallback.failed(entry, exc)
    _report_attempt(ctx, entry.label, "failed", exc)
    if not go_on or i + 1 >= len(order):
        return None
    ctx.fallback = (fallback, order, i + 1, request)
    provider, sent = _routed(fallback, order[i + 1], request)
    limiter = _limiter(ctx, fallback) if ctx.run.executor.provider_limited else None
    if limiter is None:
        return provider.generate(sent)
    return _limited(limiter, provider.generate, sent)


async def _limited(limiter: Any, fn: Any, *args: Any) -> Any:
    """``await fn(*args)`` under ``limiter`` (the call starts once a slot is free)."""
    async with limiter:
        return await fn(*args)


def _generate_settle(ctx: DirectiveContext, response: Any) -> Any:
    choice = ctx.model  # resolved: its work started
    assert choice is not None
    fallback = ctx.fallback
    if fallback is not None:
        model, order, i, _ = fallback
        if i or order[i].streak:  # a run of failures is over
            model.answered(order[i])
        if i:
            _report_attempt(ctx, order[i].label, "ok", None)
    reserved = ctx.reserved
    if reserved is not None and isinstance(response, LLMResponse):
        reserved[0].settle(reserved[1], response.usage)
    return _check_response(response, choice.provider, choice.name, LLMResponse)


def _llm_fail(ctx: DirectiveContext, exc: Exception) -> Any:
    """The result of a failed call, or the next model's work (a fallback going on)."""
    if ctx.fallback is not None and type(ctx.directive) is LLMGenerate:
        work = _fallback_next(ctx, exc)
        if work is not None:
            return work
    choice = ctx.model
    assert choice is not None
    return _classify(exc, choice.provider, ctx)


_ENCODER = msgspec.json.Encoder()
_DECODERS = {cls: msgspec.json.Decoder(cls) for cls in (LLMResponse, LLMChunk, EmbedResponse)}


def _check_response(resp: Any, provider: Any, model: str, cls: type[Any]) -> Any:
    """Validate what a provider returned at the boundary: a ``cls`` whose every field
    survives the journal (JSON) exactly; returns ``Ok`` of that JSON-read copy, or the
    ``provider_error`` saying what was wrong and where (a tool call whose ``input`` is
    not a JSON object, say)."""
    if not isinstance(resp, cls):
        problem = f"returned {type(resp).__name__}, expected {cls.__name__}"
    else:
        try:
            resp = _DECODERS[cls].decode(_ENCODER.encode(resp))
        except (msgspec.ValidationError, TypeError, ValueError, OverflowError) as exc:
            problem = f"returned a {cls.__name__} that is not valid JSON data: {exc}"
        else:
            if model and not resp.model:
                resp = msgspec.structs.replace(resp, model=model)
            return Ok(payload=resp)
    who = _provider_name(provider)
    return Err(
        error=ErrorEnvelope.make(
            PROVIDER_ERROR,
            f"provider {who!r} {problem} (malformed provider output)",
            {"provider": who},
            retryable=False,
        )
    )


def _stream_call(ctx: DirectiveContext) -> Any:
    if ctx.refused is not None:  # the model could not be resolved
        return ctx.refused
    choice = ctx.model  # resolved: its work started
    assert choice is not None
    provider = choice.provider
    if ctx.run.rate is not None:  # streams wait for the limit in its provider wrapper
        provider = ctx.run.rate.wrap(provider)
    request = _llm_request(ctx, choice.name)
    limiter = _limiter(ctx, provider) if ctx.run.executor.provider_limited else None
    if limiter is None:
        return _consume(ctx, provider, request)
    return _limited(limiter, _consume, ctx, provider, request)


async def _consume(ctx: DirectiveContext, provider: Any, req: LLMRequest) -> Any:
    assembler = StreamAssembler()
    chunks = provider.stream(req)
    try:
        async for chunk in chunks:
            checked = _check_response(chunk, provider, "", LLMChunk)
            if isinstance(checked, Err):
                return checked
            ctx.no_retry = True  # deltas are visible now: a retry would repeat them
            assembler.add(checked.payload)
            ctx.run.emit(ctx, LLM_DELTA, LLMDeltaData(chunk=checked.payload))
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


def _model_of(ctx: DirectiveContext) -> tuple[str, str]:
    choice = ctx.model
    return ("", "") if choice is None else (_provider_name(choice.provider), choice.name)


def _llm_span(ctx: DirectiveContext, tel: Telemetry) -> None:
    d = ctx.directive
    op = "embeddings" if isinstance(d, LLMEmbed) else "chat"
    pname, model = _model_of(ctx)
    attrs: dict[str, Any] = {"gen_ai.operation.name": op}
    if pname:
        attrs["gen_ai.provider.name"] = pname
    if model:
        attrs["gen_ai.request.model"] = model
    span = tel.start_span(f"{op} {model}" if model else op, attrs, ctx.otel_parent)
    ctx.span = span
    ctx.otel_context = tel.context_of(span, ctx.otel_parent)
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
        costs = ctx.run.costs
        if costs is not None and usage is not None and op == "chat":
            name = resp.model or model
            cost_attributes(attrs, usage, costs.prices.cost(name, usage), name)
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


def _embed_call(ctx: DirectiveContext) -> Any:
    if ctx.refused is not None:  # the model could not be resolved
        return ctx.refused
    choice = ctx.model  # resolved: its work started
    assert choice is not None
    provider = choice.provider
    d = ctx.directive
    assert isinstance(d, LLMEmbed)
    request = EmbedRequest(model=choice.name, inputs=d.inputs)
    limiter = _limiter(ctx, provider) if ctx.run.executor.provider_limited else None
    if limiter is None:
        return provider.embed(request)
    return _limited(limiter, provider.embed, request)


def _embed_settle(ctx: DirectiveContext, response: Any) -> Any:
    choice = ctx.model  # resolved: its work started
    assert choice is not None
    return _check_response(response, choice.provider, choice.name, EmbedResponse)


def llm_kinds() -> dict[type[Any], Kind]:
    """The kinds of the model directives."""
    common: dict[str, Any] = {
        "prepare_sync": _llm_prepare_sync,
        "open_span": _llm_span,
        "close_span": _llm_close,
        "error_type": PROVIDER_ERROR,
    }
    return {
        LLMGenerate: Kind(
            "LLMGenerate", call=_generate_call, settle=_generate_settle, fail=_llm_fail, **common
        ),
        LLMStream: Kind("LLMStream", call=_stream_call, fail=_llm_fail, **common),
        LLMEmbed: Kind(
            "LLMEmbed", call=_embed_call, settle=_embed_settle, fail=_llm_fail, **common
        ),
    }
