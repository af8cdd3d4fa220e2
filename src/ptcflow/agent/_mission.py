"""Missions: an agent that calls agents, and the limits the whole tree of runs shares.

A run whose tools include an agent (``as_tool``, :class:`~ptcflow.LLMTool`) starts a
**mission**: it and every agent it calls, at any depth, share one :class:`Mission` (the
turn budget) and one :class:`MissionLimits` (depth, turns). Each run of the tree has a
:class:`Lineage` (``RunPlan.inherit``: opaque to the runtime): its depth, the model its
children inherit, the options they inherit, and the Steps of the children it ran (put in
its trace when it ends). Turns are counted where they happen, at the model: the providers
of each run's model are wrapped (:class:`BudgetedLLM`, applied with
``ModelSource.wrapped``) so that every model call of the tree takes one turn from the shared budget, and a call past it fails with
``turn_budget_exceeded`` (not retried), which ends that agent's run with that reason.
A mission's run resumed after a pause (``rt.resume``) counts on from the model calls its
paused run had answered (:meth:`Lineage.resumed`, read from the journal).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import msgspec

from ptcflow.core import PausedRun
from ptcflow.errors import ConfigError
from ptcflow.providers import EmbedRequest, LLMRequest, ModelSource, ProviderError
from ptcflow.runtime import Step
from ptcflow.signals import LLM_RESPONSE, EmbedResponse, ErrorEnvelope, LLMChunk, LLMResponse, Ok
from ptcflow.strategies import Trace

__all__ = (
    "MAX_DEPTH_EXCEEDED",
    "TURN_BUDGET_EXCEEDED",
    "BudgetedLLM",
    "Lineage",
    "Mission",
    "MissionLimits",
    "answered_calls",
    "attach_children",
)

TURN_BUDGET_EXCEEDED: Final = "turn_budget_exceeded"
MAX_DEPTH_EXCEEDED: Final = "max_depth_exceeded"


class MissionLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The limits a mission's whole tree of agents shares (the spec's limits table).

    Give them to the mission's first agent: ``await orchestrator.run(...,
    mission_limits=MissionLimits(turn_budget=40))``; the agents it calls inherit them.
    The other two limits of the spec's table are per agent: ``SubAgent(memory_limit=...)``
    and ``SubAgent(mission_timeout=...)`` (a child gets the smaller of its own and its
    parent's remaining time).

    Args:
        max_depth: how deep agents may nest: the mission's first agent is at depth 0, an
            agent it calls at 1, ...; a call that would start an agent deeper than this
            is a tool error ``max_depth_exceeded`` (default 3).
        turn_budget: model calls allowed to all the mission's agents together (each
            agent's ``max_turns`` still applies); the call past it fails and ends its
            agent with ``turn_budget_exceeded`` (default 20).

    Raises:
        ConfigError: a limit is not an integer >= 1 (``max_depth`` >= 0).

    Example:
        >>> MissionLimits(turn_budget=40)
        MissionLimits(max_depth=3, turn_budget=40)
    """

    max_depth: int = 3
    turn_budget: int = 20

    def __post_init__(self) -> None:
        if not _int_at_least(self.max_depth, 0):
            raise ConfigError(
                f"MissionLimits.max_depth must be an int >= 0, got {self.max_depth!r}"
            )
        if not _int_at_least(self.turn_budget, 1):
            raise ConfigError(
                f"MissionLimits.turn_budget must be an int >= 1, got {self.turn_budget!r}"
            )

    @classmethod
    def of(cls, value: MissionLimits | Mapping[str, Any] | None) -> MissionLimits:
        """Limits from themselves, a mapping of their fields, or ``None`` (the defaults).

        Raises:
            ConfigError: an unknown key or a bad value.
        """
        if value is None:
            return cls()
        if isinstance(value, MissionLimits):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(cls.__struct_fields__))
            if unknown:
                raise ConfigError(
                    f"mission_limits has unknown keys {unknown}; use {list(cls.__struct_fields__)}"
                )
            return cls(**value)
        raise ConfigError(
            f"mission_limits must be a MissionLimits or a mapping, got {type(value).__name__}"
        )


def _int_at_least(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


class Mission:
    """What a mission's runs share while they run: the limits and the turns used.

    Example:
        >>> m = Mission(MissionLimits(turn_budget=1))
        >>> m.take_turn("a"); m.turns_used
        1
    """

    __slots__ = ("limits", "turns_used")

    def __init__(self, limits: MissionLimits) -> None:
        self.limits = limits
        self.turns_used = 0

    def __repr__(self) -> str:
        return f"<Mission turns {self.turns_used}/{self.limits.turn_budget}>"

    def take_turn(self, agent: str) -> None:
        """Count one model call of ``agent``.

        Raises:
            ProviderError: the budget is spent (``turn_budget_exceeded``, not retryable).
        """
        budget = self.limits.turn_budget
        if self.turns_used >= budget:
            raise ProviderError(
                ErrorEnvelope.make(
                    TURN_BUDGET_EXCEEDED,
                    f"the mission's turn budget of {budget} model calls is spent (every "
                    f"agent of the mission counts); agent {agent!r} cannot take another "
                    "turn. Raise MissionLimits(turn_budget=...) on the mission's first "
                    "agent, or give the agents fewer turns",
                    {"turn_budget": budget, "agent": agent},
                    retryable=False,
                )
            )
        self.turns_used += 1

    def give_back(self) -> None:
        """A counted call failed before it answered: it does not use a turn (DD-4)."""
        self.turns_used -= 1


class Lineage:
    """One run of a mission, as its children see it (``RunPlan.inherit``).

    Attributes:
        mission: the shared :class:`Mission`.
        agent: the run's agent name.
        depth: 0 for the mission's first agent, +1 per agent-as-tool call.
        llm: the model choice this run's children inherit (``None``: the Runtime's).
        base: the Runtime's model (what ``llm=None`` and model names resolve with).
        options: run options the children inherit (``trace``, ``debug``).
        root: the run started the mission (its first agent, or an agent called by a plain
            strategy): resumed, it counts the turns its tree used before the pause.
        children: the Steps of the agents this run called, by tool-call id.
    """

    __slots__ = ("agent", "base", "children", "depth", "llm", "mission", "options", "root")

    def __init__(
        self,
        mission: Mission,
        *,
        agent: str,
        depth: int,
        llm: Any,
        base: ModelSource | None,
        options: Mapping[str, Any],
        root: bool = False,
    ) -> None:
        self.mission = mission
        self.root = root
        self.agent = agent
        self.depth = depth
        self.llm = llm
        self.base = base
        self.options = dict(options)
        self.children: dict[str, Step] = {}

    def __repr__(self) -> str:
        return f"<Lineage {self.agent!r} depth={self.depth} children={len(self.children)}>"

    def resumed(self, paused: PausedRun) -> None:
        """The run goes on from ``paused`` (``RunPlan.resumed``, on ``rt.resume``): the
        model calls answered before the pause count on the mission's turn budget."""
        self.mission.turns_used += answered_calls(paused)

    def finish(self, step: Step) -> Step:
        """The run's Step with each child's Step on the tool call that ran it.

        A program's call ``i`` of turn ``t`` has the id ``{run_id}/program/{t}/tool/{i}``
        (the runtime's sub-call ids), which is how a child is found again.
        """
        attached = attach_children(step, self.children)
        self.children.clear()
        return attached


def answered_calls(paused: PausedRun) -> int:
    """The model calls answered in ``paused`` and its paused child runs, from their
    journals (a failed call gave its turn back: it is not counted).

    Child agents that had ended before the pause are not in the paused run's journal
    (their Steps were its tool results): their calls are not counted.

    Example:
        >>> answered_calls(PausedRun(version=1, run_id="r", agent="a", strategy="S"))
        0
    """
    own = sum(
        1
        for s in paused.signals()
        if s.type == LLM_RESPONSE and s.run_id == paused.run_id and type(s.data.result) is Ok
    )
    return own + sum(answered_calls(child) for child in paused.children.values())


def attach_children(step: Step, children: Mapping[str, Step]) -> Step:
    """``step`` with each child's Step on the program tool call that ran it
    (:meth:`Lineage.finish`; a Temporal workflow attaches its child workflows' Steps).

    ``children`` maps tool-call ids (``{run_id}/program/{turn}/tool/{index}``) to Steps.

    Example:
        >>> attach_children(Step(run_id="r"), {}) == Step(run_id="r")
        True
    """
    trace = step.trace
    if not children or trace is None:
        return step
    run_id = step.run_id
    turns = []
    for turn in trace.turns:
        calls = turn.execution.tool_calls
        prefix = f"{run_id}/program/{turn.turn}/tool/"
        if any(prefix + str(c.index) in children for c in calls):
            calls = tuple(
                msgspec.structs.replace(c, child=children[prefix + str(c.index)])
                if prefix + str(c.index) in children
                else c
                for c in calls
            )
            execution = msgspec.structs.replace(turn.execution, tool_calls=calls)
            turn = msgspec.structs.replace(turn, execution=execution)
        turns.append(turn)
    new: Trace = msgspec.structs.replace(trace, turns=tuple(turns))
    return msgspec.structs.replace(step, trace=new)


class BudgetedLLM:
    """A provider whose model calls each take a turn of a mission's budget (applied to a
    run's model with ``source.wrapped(BudgetedLLM.of(mission, agent))``).

    A call that fails (raises) gives its turn back: only answered calls count, so a
    retried call counts once.
    """

    @staticmethod
    def of(mission: Mission, agent: str) -> Callable[[Any], BudgetedLLM]:
        """The wrapper of a provider whose calls ``agent`` makes on ``mission``'s budget."""
        return lambda provider: BudgetedLLM(provider, mission, agent)

    def __init__(self, inner: Any, mission: Mission, agent: str) -> None:
        self.inner = inner
        self.mission = mission
        self.agent = agent
        self.name = getattr(inner, "name", "llm")
        self.model = getattr(inner, "model", None)

    def __repr__(self) -> str:
        return f"BudgetedLLM({self.inner!r})"

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Take a turn, then generate through the wrapped provider."""
        mission = self.mission
        mission.take_turn(self.agent)
        try:
            response: LLMResponse = await self.inner.generate(request)
        except BaseException:
            mission.give_back()
            raise
        return response

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Take a turn, then stream through the wrapped provider."""
        mission = self.mission
        mission.take_turn(self.agent)
        try:
            async for chunk in self.inner.stream(request):
                yield chunk
        except BaseException:
            mission.give_back()
            raise

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Embed through the wrapped provider (not a turn)."""
        result: EmbedResponse = await self.inner.embed(request)
        return result
