"""Running a SubAgent: context, LLM and Runtime resolved, then one run of its strategy."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ptcflow.agent._llm import CallbackLLM, LLMRetry, RetryFilter
from ptcflow.errors import RunError, UsageError
from ptcflow.runtime import UNSET, LLMProvider, ModelResolver, RetryPolicy, Runtime, Step
from ptcflow.signature import Fields, Template, parse, render_type

if TYPE_CHECKING:
    from ptcflow.agent._subagent import SubAgent

__all__ = ("SubAgentError", "execute", "resolve_context")


class SubAgentError(RunError):
    """A SubAgent run failed (the spec's ``run!`` / ``then!`` raise it).

    Attributes:
        step: the failed :class:`~ptcflow.runtime.Step` (its ``fail``, ``trace``, ...).
        error: the Step's :class:`~ptcflow.signals.ErrorEnvelope`.

    Example:
        >>> from ptcflow.runtime import Step
        >>> err = SubAgentError(Step(run_id="r1", ok=False, reason="max_turns_exceeded"))
        >>> err.step.reason
        'max_turns_exceeded'
    """

    def __init__(self, step: Step) -> None:
        fail = step.fail
        why = f"{fail.reason}: {fail.message}" if fail is not None else step.reason or "failed"
        super().__init__(f"SubAgent run {step.run_id} failed ({why})", step.error)
        self.step = step


def resolve_context(
    context: Any, context_signature: str | None
) -> tuple[dict[str, Any], str | None]:
    """The run's context as plain data, and the signature typing its keys.

    A :class:`Step` given as context contributes its value (a map) and, unless
    ``context_signature`` is given, the fields of its output signature (DD-5).

    Raises:
        UsageError: the context is not a mapping with string keys, holds a reserved key
            (``fail``), or is a failed Step or a Step whose value is not a map.
    """
    if isinstance(context, Step):
        step = context
        if not step.ok:
            raise UsageError(
                f"context= is the failed Step of run {step.run_id} ({step.reason}); chain "
                "successful Steps only (check step.ok, or use run_or_raise / then)"
            )
        if not isinstance(step.value, Mapping):
            raise UsageError(
                f"context= is a Step whose value is a {type(step.value).__name__}; a Step used "
                "as context must return a map (its keys become ctx/ keys)"
            )
        context = step.value
        if context_signature is None and step.signature:
            context_signature = _as_params(step.signature)
    if context is None:
        return {}, context_signature
    if not isinstance(context, Mapping):
        raise UsageError(
            f"context must be a mapping of names to values, got {type(context).__name__}"
        )
    bad = [k for k in context if not isinstance(k, str)]
    if bad:
        raise UsageError(f"context keys must be strings, got {bad[:3]!r}")
    if "fail" in context:
        raise UsageError(
            "context key 'fail' is reserved: programs read the previous turn's error as "
            "ctx/fail; rename the key"
        )
    plain = msgspec.to_builtins(dict(context), str_keys=True)
    return plain, context_signature


def _as_params(signature: str) -> str | None:
    """The output fields of a signature as the parameters of a context signature."""
    output = parse(signature).output
    if not isinstance(output, Fields) or not output.fields:
        return None
    params = ", ".join(f"{f.name} {render_type(f.type)}" for f in output.fields)
    return f"({params}) -> :any"


async def execute(
    agent: SubAgent,
    *,
    llm: Any = None,
    context: Any = None,
    llm_opts: Mapping[str, Any] | None = None,
    context_signature: str | None = None,
    debug: bool = False,
    trace: bool | str = True,
    signature_validation: str = "enabled",
    runtime: Runtime | None = None,
    run_id: str | None = None,
    record: bool = False,
) -> Step:
    """Run ``agent`` once and return its Step (failures are on the Step, not raised)."""
    ctx, ctx_sig = resolve_context(context, context_signature)
    chosen = agent.llm if agent.llm is not None else llm
    model = chosen if isinstance(chosen, str) else None
    strategy = agent.strategy(
        context_signature=ctx_sig,
        llm_opts=llm_opts,
        signature_validation=signature_validation,
        trace=trace,
        debug=debug,
        model=model,
    )
    retry: LLMRetry = agent.llm_retry
    timeout = UNSET if agent.mission_timeout is None else agent.mission_timeout / 1000.0
    options: dict[str, Any] = {
        "tools": dict(agent.tools),
        "timeout": timeout,
        "name": agent.name,
        "run_id": run_id,
        "record": record,
    }
    async with _provider(agent, chosen, ctx, llm_opts, runtime) as provider:
        if retry.retryable_errors is not None:
            base = provider if provider is not None else (runtime.llm if runtime else None)
            if base is not None:
                provider = RetryFilter(base, retry.retryable_errors)
        if runtime is not None:
            return await runtime.run(strategy, ctx, llm=provider, **options)
        policy = RetryPolicy(multiplier=1.0) if retry.backoff == "linear" else UNSET
        async with Runtime(llm=provider, retry=policy) as rt:
            return await rt.run(strategy, ctx, **options)


@contextlib.asynccontextmanager
async def _provider(
    agent: SubAgent,
    chosen: Any,
    ctx: Mapping[str, Any],
    llm_opts: Mapping[str, Any] | None,
    runtime: Runtime | None,
) -> AsyncIterator[Any]:
    """The provider for the run (``None``: the Runtime's), closing what it built."""
    if chosen is None:
        if runtime is None:
            raise UsageError(
                f"SubAgent({agent.name!r}) has no LLM: pass llm= (a provider, a model name "
                "or alias, or a function) or set SubAgent(llm=...)"
            )
        yield None
        return
    if isinstance(chosen, str):
        if runtime is not None:
            yield None  # the Runtime's llm (a model registry) resolves the name
            return
        from ptcflow.providers import ModelRegistry

        registry = ModelRegistry.from_config()
        try:
            yield registry
        finally:
            await registry.aclose()
        return
    if isinstance(chosen, LLMProvider | ModelResolver):
        yield chosen
        return
    prompt = Template(agent.prompt).render(ctx, missing="empty")
    yield CallbackLLM(chosen, prompt=prompt, tool_names=list(agent.tools), llm_opts=llm_opts)
