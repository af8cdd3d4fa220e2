"""Planning a SubAgent's run: its options checked, its context and model resolved, its
strategy built (:func:`plan`, which is ``SubAgent.plan_run``); and running it
(:func:`execute`, in a Runtime of its own when none is given).

``rt.run(agent, ...)`` packs its options into one :class:`~ptcflow.runtime.RunOptions`,
and the runtime asks the agent once for its :class:`~ptcflow.runtime.RunPlan`: the agent
plans itself here, in one pass, and hands the plan back.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec
import structlog

from ptcflow.agent._mission import BudgetedLLM, Lineage, Mission, MissionLimits
from ptcflow.agent._model import LLMRetry, RetryFilter, model_kind, model_source
from ptcflow.core import Decision, PausedRun
from ptcflow.errors import RunError, UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime import (
    UNSET,
    EventStream,
    RetryPolicy,
    RunOptions,
    RunPlan,
    Runtime,
    Step,
)
from ptcflow.signals import SignalBus
from ptcflow.signature import (
    Fields,
    Signature,
    Template,
    ValidationResult,
    is_record,
    parse,
    render_type,
    to_plain,
)

if TYPE_CHECKING:
    from ptcflow.agent._subagent import SubAgent

__all__ = (
    "AgentOptions",
    "SubAgentError",
    "build",
    "check_context",
    "execute",
    "plan",
    "resolve_context",
    "source_for",
    "stream_run",
)

_LOG: Final = structlog.get_logger("ptcflow")


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
        value = to_plain(step.value) if is_record(step.value) else step.value
        if not isinstance(value, Mapping):
            raise UsageError(
                f"context= is a Step whose value is a {type(step.value).__name__}; a Step used "
                "as context must return a map (its keys become ctx/ keys)"
            )
        context = value
        if context_signature is None and step.signature:
            context_signature = _as_params(step.signature)
    if context is None:
        return {}, context_signature
    if type(context) is not dict and is_record(context):  # a dataclass, a Struct, a pydantic model
        context = to_plain(context, str_keys=True)
    if not isinstance(context, Mapping):
        raise UsageError(
            f"context must be a mapping of names to values (or a dataclass, msgspec.Struct "
            f"or pydantic model instance), got {type(context).__name__}"
        )
    bad = [k for k in context if not isinstance(k, str)]
    if bad:
        raise UsageError(f"context keys must be strings, got {bad[:3]!r}")
    if "fail" in context:
        raise UsageError(
            "context key 'fail' is reserved: programs read the previous turn's error as "
            "ctx/fail; rename the key"
        )
    try:
        plain = to_plain(dict(context), str_keys=True)
    except (TypeError, ValueError):
        for key, value in context.items():
            try:
                to_plain(value, str_keys=True)
            except (TypeError, ValueError) as exc:
                raise UsageError(
                    f"context key {key!r}: {exc} (pass what a program needs of it, e.g. its "
                    "id or str())"
                ) from None
        raise
    return plain, context_signature


def _as_params(signature: str) -> str | None:
    """The output fields of a signature as the parameters of a context signature."""
    output = parse(signature).output
    if not isinstance(output, Fields) or not output.fields:
        return None
    params = ", ".join(f"{f.name} {render_type(f.type)}" for f in output.fields)
    return f"({params}) -> :any"


class AgentOptions(msgspec.Struct, frozen=True, kw_only=True):
    """A SubAgent run's own options (:meth:`SubAgent.run`'s, but the run's own ``run_id``,
    ``record``, ...): what ``rt.run(agent, ...)`` hands the agent, read once when it plans.

    Raises:
        UsageError: an option the agent does not take (:meth:`of`).
    """

    llm: Any = None
    context: Any = None
    llm_opts: Mapping[str, Any] | None = None
    context_signature: str | None = None
    debug: bool = False
    trace: bool | str = True
    signature_validation: str = "enabled"
    mission_limits: Any = None
    stream: bool | None = None

    @classmethod
    def of(cls, agent: str, options: Mapping[str, Any]) -> AgentOptions:
        """The options of ``options`` (a :class:`~ptcflow.runtime.RunOptions`'
        ``agent_options``, with its ``llm`` and ``tools``) for the agent named ``agent``.

        Raises:
            UsageError: ``tools`` (they belong to the definition) or an unknown option.
        """
        if "tools" in options:
            raise UsageError(
                f"SubAgent({agent!r}): tools belong to the agent's definition; pass them to "
                "SubAgent(tools=...), not to the run"
            )
        unknown = sorted(set(options) - set(cls.__struct_fields__))
        if unknown:
            raise UsageError(
                f"SubAgent({agent!r}) got unknown run options {unknown}; its options are "
                f"{sorted(cls.__struct_fields__)} (and the run's own: "
                f"{sorted(RunOptions.KEYWORDS)})"
            )
        return cls(**options)

    def inherited(self) -> dict[str, Any]:
        """The options the agents of a mission inherit from its first agent (``stream``
        once the first agent streams: the agents it calls stream too)."""
        inherited: dict[str, Any] = {"trace": self.trace, "debug": self.debug}
        if self.stream:
            inherited["stream"] = True
        return inherited


def plan(agent: SubAgent, runtime: Runtime, input: Any, options: Mapping[str, Any]) -> RunPlan:
    """The run ``rt.run(agent, ...)`` performs: ``agent``'s strategy, context, tools, model
    and deadline (it is :meth:`SubAgent.plan_run`, the :class:`~ptcflow.runtime.Plannable`
    hook; you rarely call it yourself).

    An agent whose tools include agents starts a mission (see ``_mission``): its run and
    every agent it calls share :class:`MissionLimits`.

    Args:
        agent: the SubAgent.
        runtime: the open Runtime the run goes on (its ``model_source`` is the default).
        input: the context, when given positionally (``rt.run(agent, {...})``).
        options: :meth:`SubAgent.run`'s options (``llm``, ``context``, ``llm_opts``,
            ``context_signature``, ``debug``, ``trace``, ``signature_validation``,
            ``mission_limits``, ``stream``): a :class:`~ptcflow.runtime.RunOptions`' ``agent_options``,
            with its ``llm`` and ``tools`` when set.

    Returns:
        A :class:`~ptcflow.runtime.RunPlan`.

    Raises:
        UsageError: an unknown option, ``tools`` (they belong to the definition), a context
            given twice or not plain data, no LLM anywhere, or ``"strict"`` validation with
            tools that have no signature.

    Example:
        >>> # async with Runtime(llm=llm) as rt:
        >>> #     step = await rt.run(agent, context={"user": "alice"}, trace=False)
    """
    opts = AgentOptions.of(agent.name, options)
    if opts.stream is None and agent.stream:
        opts = msgspec.structs.replace(opts, stream=True)  # handed on to the agents it calls
    context = opts.context
    if input is not None:
        if context is not None:
            raise UsageError(
                "the context was given twice (as the input and as context=); pass it once"
            )
        context = input
    mode = str(opts.signature_validation).lstrip(":")
    sig = agent.parsed_signature
    ctx, ctx_sig = resolve_context(context, opts.context_signature)
    if sig is not None and sig.params and mode != "disabled":  # checked as ``as_tool`` checks
        ctx = check_context(agent, sig, sig.validate_input(ctx, mode))
    chosen = agent.llm if agent.llm is not None else opts.llm
    base: ModelSource | None = runtime.model_source
    if chosen is None and base is None:
        raise UsageError(
            f"SubAgent({agent.name!r}) has no LLM: pass llm= (a provider, a model name "
            "or alias, or a function), set SubAgent(llm=...), or give the Runtime one"
        )
    limits = opts.mission_limits
    lineage = None
    if limits is not None or any(t.calls_model for t in agent.tools.values()):
        lineage = Lineage(
            Mission(MissionLimits.of(limits)),
            agent=agent.name,
            depth=0,
            llm=chosen,
            base=base,
            options=opts.inherited(),
            root=True,
        )
    keep_trace = opts.trace
    if mode == "warn_only" and keep_trace is not True:
        opts = msgspec.structs.replace(opts, trace=True)  # read the warnings, then drop it
    planned = build(agent, ctx, ctx_sig, opts, chosen=chosen, base=base, lineage=lineage)
    if agent.output_type is None and mode != "warn_only":
        return planned
    inner = planned.finish

    def finish(step: Step) -> Step:
        step = inner(step) if inner is not None else step
        if mode == "warn_only":
            step = _log_warnings(agent, step, keep_trace)
        return agent.typed(step)

    return dataclasses.replace(planned, finish=finish)


def check_context(agent: SubAgent, sig: Signature, checked: ValidationResult) -> dict[str, Any]:
    """The context of a top-level run, as ``checked`` against ``sig``, the agent's
    (``Signature.validate_input``, as ``as_tool`` checks its arguments): strings holding
    numbers coerced, wrong types and missing parameters refused (``warn_only``: logged).

    Raises:
        UsageError: the context does not match (every problem, by key).
    """
    if not checked.ok:
        params = ", ".join(f"{p.name} {render_type(p.type)}" for p in sig.params)
        raise UsageError(
            f"SubAgent({agent.name!r}): the context does not match its parameters "
            f"({params}): {'; '.join(checked.errors)}. Fix the context, or run with "
            "signature_validation='warn_only' (or 'disabled')"
        )
    if checked.warnings:
        _LOG.warning("context coerced", agent=agent.name, warnings=list(checked.warnings))
    return dict(checked.value)


def _log_warnings(agent: SubAgent, step: Step, keep_trace: Any) -> Step:
    """Log (structlog, ``warning``) what ``warn_only`` let through, then keep the trace
    only as the run's ``trace`` option asked."""
    if step.trace is not None:
        for turn in step.trace.turns:
            problem = turn.execution.error
            if problem is not None and problem.category == "validation_warning":
                _LOG.warning(
                    "validation warning",
                    agent=agent.name,
                    run_id=step.run_id,
                    turn=turn.turn,
                    warnings=problem.message,
                )
    if keep_trace is False or (keep_trace == "on_error" and step.ok):
        step = msgspec.structs.replace(step, trace=None)
    return step


def build(
    agent: SubAgent,
    ctx: dict[str, Any],
    ctx_sig: str | None,
    options: AgentOptions,
    *,
    chosen: Any,
    base: ModelSource | None,
    lineage: Lineage | None,
) -> RunPlan:
    """The run of ``agent`` on context ``ctx`` with model ``chosen`` (``None``: ``base``,
    the Runtime's), counted by ``lineage``'s mission when there is one.

    Raises:
        UsageError: ``"strict"`` validation with tools that have no signature.
    """
    llm_opts = options.llm_opts
    strategy = agent.strategy(
        context_signature=ctx_sig,
        llm_opts=llm_opts,
        signature_validation=options.signature_validation,
        trace=options.trace,
        debug=options.debug,
        model=chosen if isinstance(chosen, str) else None,
        stream=agent.stream if options.stream is None else options.stream,
    )
    source: ModelSource | None
    if base is not None and base.given is chosen and model_kind(chosen) == "source":
        source = base  # the Runtime's own provider (agent.run(llm=p) opens one on p): as is
    else:
        source = source_for(agent, chosen, ctx, llm_opts)
    retry: LLMRetry = agent.llm_retry
    if retry.retryable_errors is not None:
        inner = source if source is not None else base
        if inner is not None:
            source = inner.wrapped(RetryFilter.of(retry.retryable_errors))
    if lineage is not None:
        inner = source if source is not None else base
        if inner is not None:
            source = inner.wrapped(BudgetedLLM.of(lineage.mission, agent.name))
    return RunPlan(
        strategy=strategy,
        input=ctx,
        tools=agent._toolbox,  # normalised once, with its specs, when it was defined
        llm=source,
        timeout=UNSET if agent.mission_timeout is None else agent.mission_timeout / 1000.0,
        name=agent.name,
        inherit=lineage,
        finish=None if lineage is None else lineage.finish,
        # the mission's first run counts its tree's turns before a pause (a child's are
        # in its parent's paused run)
        resumed=lineage.resumed if lineage is not None and lineage.root else None,
    )


async def execute(
    agent: SubAgent,
    given: Mapping[str, Any],
    *,
    runtime: Runtime | None = None,
    resume: tuple[Step | PausedRun, Mapping[str, Decision]] | None = None,
) -> Step:
    """Run ``agent`` once with the options ``given`` (:class:`~ptcflow.runtime.RunOptions`'
    keywords) and return its Step (failures are on the Step, not raised): on ``runtime``,
    or in a Runtime of its own (with the model registry of ``ptcflow.toml`` when the model
    is a name). ``resume``: continue that paused run with those decisions instead
    (``Runtime.resume``).

    The options are packed where the run is handed over, once the agent has chosen its
    model and opened its Runtime: the agent does its part, then the runtime does its.
    """
    if runtime is None:
        async with _own_runtime(agent, given.get("llm")) as rt:
            return await _hand_over(rt, agent, RunOptions(**given), resume)
    return await _hand_over(runtime, agent, RunOptions(**given), resume)


async def _hand_over(
    rt: Runtime,
    agent: SubAgent,
    options: RunOptions,
    resume: tuple[Step | PausedRun, Mapping[str, Decision]] | None,
) -> Step:
    """``rt.run(agent)``, or ``rt.resume`` of the paused run ``resume`` names."""
    if resume is not None:
        return await rt.resume(*resume, agent=agent, options=options)
    return await rt.run(agent, options=options)


@contextlib.asynccontextmanager
async def _own_runtime(
    agent: SubAgent, llm: Any, bus: SignalBus | None = None
) -> AsyncIterator[Runtime]:
    """The open Runtime an agent run given no ``runtime=`` gets: its model (the agent's,
    else ``llm``, the run's), with the model registry of ``ptcflow.toml`` when that is a
    name, and the agent's retry backoff."""
    chosen = agent.llm if agent.llm is not None else llm
    if chosen is None:
        raise UsageError(
            f"SubAgent({agent.name!r}) has no LLM: pass llm= (a provider, a model name "
            "or alias, or a function) or set SubAgent(llm=...)"
        )
    retry: LLMRetry = agent.llm_retry
    policy = RetryPolicy(multiplier=1.0) if retry.backoff == "linear" else UNSET
    async with _registry(chosen) as registry:
        # A provider is the Runtime's model too: the agents it calls that name a model
        # (SubAgent(llm="opus")) send that name to it.
        base = chosen if model_kind(chosen) == "source" else registry
        async with Runtime(llm=base, retry=policy, bus=bus) as rt:
            yield rt


@contextlib.asynccontextmanager
async def stream_run(
    agent: SubAgent, options: RunOptions, *, runtime: Runtime | None = None, buffer: int
) -> AsyncIterator[EventStream]:
    """``agent``'s run with ``options`` as an :class:`~ptcflow.runtime.EventStream`: on
    ``runtime``, or in a Runtime of its own with a :class:`~ptcflow.signals.SignalBus`
    (as :func:`execute` makes one). Leaving early cancels the run."""
    if runtime is not None:
        async with runtime.stream(agent, options=options, buffer=buffer) as events:
            yield events
        return
    async with (
        _own_runtime(agent, options.llm, SignalBus()) as rt,
        rt.stream(agent, options=options, buffer=buffer) as events,
    ):
        yield events


@contextlib.asynccontextmanager
async def _registry(chosen: Any) -> AsyncIterator[Any]:
    """The model registry of ``ptcflow.toml`` for a model name (closed after the run)."""
    if not isinstance(chosen, str):
        yield None
        return
    from ptcflow.providers import ModelRegistry

    registry = ModelRegistry.from_config()
    try:
        yield registry
    finally:
        await registry.aclose()


def source_for(
    agent: SubAgent, chosen: Any, ctx: Mapping[str, Any], llm_opts: Mapping[str, Any] | None
) -> ModelSource | None:
    """The model of ``agent``'s run for its model choice ``chosen`` (``None``: the
    Runtime's, which resolves a model name); a function sees the task prompt rendered
    with ``ctx``."""
    return model_source(
        chosen,
        prompt=lambda: Template(agent.prompt).render(ctx, missing="empty"),
        tool_names=list(agent.tools),
        llm_opts=llm_opts,
    )
