"""Running agents (not only strategies) on a Runtime, and the model check before a run.

``rt.run(target, ...)`` takes a strategy, or anything with a ``plan_run`` method (a
:class:`Plannable`, such as :class:`ptcflow.SubAgent`): the Runtime hands it its own options
and the Runtime, and gets back a :class:`RunPlan` (the strategy, its input, tools, model and
deadline) to run. So the runtime needs to know nothing of agents, and an agent's options
(``context=``, ``llm_opts=``, ``trace=`` ...) are checked by the agent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ptcflow.errors import UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime._config import UNSET, Unset
from ptcflow.runtime._options import RunOptions

if TYPE_CHECKING:
    from ptcflow.core import PausedRun, Step
    from ptcflow.signals import Message

__all__ = ("Plannable", "RunPlan", "check_model", "plan_of", "typed_finish")


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """What :meth:`Plannable.plan_run` returns: one run of a strategy, fully described.

    Attributes:
        strategy: the strategy to run.
        input: its input (``RunInfo.input``).
        tools: the run's tools (``None``: the Runtime's).
        llm: the run's model: a :class:`~ptcflow.providers.ModelSource` (or a provider
            or model resolver, which the runtime normalises); ``None``: the Runtime's.
        timeout: the mission deadline in seconds (``UNSET``: the Runtime's default; for
            a child run, none beyond its parent's remaining time).
        name: the agent name of the run (spans, logs).
        inherit: what the run hands on to the child runs its tools start (see
            :class:`ChildTool`); opaque to the runtime (a SubAgent's model and mission).
        finish: called with the run's Step when it ends; the Step it returns is the one
            the caller gets (a SubAgent attaches its child runs' Steps to its trace).
            Called once, when the run ends; what it raises is logged and ignored.
        history: the conversation the run continues (``RunInfo.history``; a handoff's).
        handoffs: for a run taking a conversation handed on (a handoff): the agents that
            handed it on, first to last (counted against ``Limits.max_handoffs``).
        resumed: called with the :class:`~ptcflow.core.PausedRun` the run is rebuilt from
            (``rt.resume``; a paused child run resumed in place by its parent's call),
            before it goes on: a SubAgent's mission counts the model calls made before
            the pause.

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> RunPlan(strategy=ReAct(), input="hi").timeout
        UNSET
    """

    strategy: Any
    input: Any = None
    tools: Any = None
    llm: Any = None
    timeout: float | Unset | None = UNSET
    name: str | None = None
    inherit: Any = None
    finish: Callable[[Step], Step] | None = None
    history: tuple[Message, ...] = ()
    handoffs: tuple[str, ...] = ()
    resumed: Callable[[PausedRun], None] | None = None


@runtime_checkable
class Plannable(Protocol):
    """An agent ``rt.run`` / ``rt.start`` accept in place of a strategy.

    Example:
        >>> from ptcflow import SubAgent
        >>> isinstance(SubAgent(prompt="Hi"), Plannable)
        True
    """

    def plan_run(self, runtime: Any, input: Any, options: Mapping[str, Any]) -> RunPlan:
        """The run to perform on ``runtime`` for ``input`` and the caller's ``options``
        (those ``rt.run`` does not take itself, and ``llm`` / ``tools`` when given).

        ``runtime`` is the :class:`~ptcflow.runtime.Runtime` (typed ``Any`` here: this
        module is imported by the Runtime's, and the runtime's modules form a DAG).

        Raises:
            UsageError: an option is unknown or wrong.
        """
        ...


def check_model(strategy: Any, llm: ModelSource | Any) -> None:
    """Refuse a run that would send model calls with no model name.

    A provider built without a model (``OpenAIProvider()``: its ``model`` is ``""``) needs
    one from the strategy (``ReAct(model=...)``, ``model_alias=...``, a SubAgent's
    ``llm="openai:..."``). A model resolver names models itself; a provider without a
    ``model`` attribute, or a strategy without ``model`` fields (one that calls no model),
    is not checked.

    Raises:
        UsageError: neither names a model.

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> class Bare:
        ...     name, model = "openai", ""
        >>> check_model(ReAct(model="gpt-4.1-mini"), Bare())  # fine
        >>> check_model(ReAct(), Bare())
        Traceback (most recent call last):
        ...
        ptcflow.errors.UsageError: no model is set for this run: ...
    """
    source = ModelSource.of(llm)
    if source is None or not source.unnamed:
        return
    if not (hasattr(strategy, "model") or hasattr(strategy, "model_alias")):
        return
    if getattr(strategy, "model", None) or getattr(strategy, "model_alias", None):
        return
    given = source.given
    who = getattr(given, "name", None) or type(given).__name__
    raise UsageError(
        f"no model is set for this run: provider {who!r} was built without one and the "
        f"strategy {type(strategy).__name__} names none. Pass it to the provider "
        '(OpenAIProvider(model="gpt-4.1-mini")), to the strategy (ReAct(model=...)), or '
        'give a SubAgent a model string (llm="openai:gpt-4.1-mini") with a ModelRegistry'
    )


def plan_of(runtime: Any, target: Any, input: Any, options: RunOptions) -> RunPlan:
    """The run of ``target`` (an agent) for ``rt.run``'s ``options``: the agent plans it
    (``plan_run``, given its own options and ``llm`` / ``tools`` when set).

    Returns:
        The plan, with ``rt.run``'s own ``timeout`` and ``name`` when given.

    Raises:
        UsageError: options for a strategy, or what the agent's ``plan_run`` raises.
    """
    if getattr(type(target), "plan_run", None) is None:
        raise UsageError(
            f"rt.run() got unknown options {sorted(options.agent_options)} for the strategy "
            f"{type(target).__name__}; a strategy's run takes {sorted(RunOptions.KEYWORDS)}, "
            "other options are an agent's (a SubAgent: context=, llm_opts=, trace=, ...)"
        )
    given = dict(options.agent_options)
    if options.llm is not None:
        given["llm"] = options.llm
    if options.tools is not None:
        given["tools"] = options.tools
    plan = target.plan_run(runtime, input, given)
    if not isinstance(plan, RunPlan):
        raise UsageError(
            f"{type(target).__name__}.plan_run() returned {type(plan).__name__}, not a RunPlan"
        )
    timeout = plan.timeout if isinstance(options.timeout, Unset) else options.timeout
    return dataclasses.replace(plan, timeout=timeout, name=options.name or plan.name)


def typed_finish(strategy: Any) -> Callable[[Step], Step] | None:
    """The finishing of a strategy that declares an ``output_type`` (``ReAct``): its
    ``typed(step)`` builds the instance from the plain value the strategy kept, at the edge,
    as an agent's plan does (the local runtime and the Temporal client both apply it).
    ``None`` (nothing to do) for every other strategy."""
    typed = getattr(strategy, "typed", None)
    if typed is None or not getattr(strategy, "output_type", None):
        return None
    return typed  # type: ignore[no-any-return]
