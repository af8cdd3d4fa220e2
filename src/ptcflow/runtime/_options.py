"""The options of one run, as one frozen value: :class:`RunOptions`.

``rt.run(...)``, ``rt.start(...)``, ``TemporalRuntime.run(...)`` / ``spec(...)`` and an
agent's ``run(...)`` keep their keyword arguments; each packs them into a
:class:`RunOptions` once, where it is called, and passes that value down (to the Runtime's
``_open``, to the plan of an agent). The value is checked when it is built, so a bad
option fails at the call, naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Final

import msgspec

from ptcflow.errors import UsageError
from ptcflow.runtime._config import UNSET, Unset
from ptcflow.runtime._usage import UsageLimits
from ptcflow.sessions import Compaction, Session, Summary, check_history
from ptcflow.signals import ProgramMemory

__all__ = ("RunOptions",)

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


class RunOptions(msgspec.Struct, frozen=True, kw_only=True, repr_omit_defaults=True):
    """The options of one run (the keyword arguments of :meth:`Runtime.run`), checked once.

    Pass them as keywords (``rt.run(strategy, input, run_id="r1", record=True)``) or as one
    value (``rt.run(strategy, input, options=RunOptions(run_id="r1", record=True))``), not
    both. A left-out option inherits the Runtime's default; ``timeout=None`` means no
    deadline, as with httpx's ``Timeout``.

    Args:
        tools: tools for this run instead of the Runtime's.
        llm: the model for this run instead of the Runtime's: a provider or a model
            resolver (an agent's: also a model name or a function).
        run_id: the run's id (default: a fresh ``run_<uuid7>``).
        request_id: the request id on the run's signals (default: the run id).
        timeout: the mission deadline in seconds (``None``: none; default:
            ``Limits.mission_timeout_ms``).
        agents: extra agents this run's ``RunChild`` directives may start.
        record: keep the run's signals on ``Step.signals``.
        name: the agent name on ``ai.request.started`` and the ``invoke_agent`` span.
        usage_limits: the run's :class:`~ptcflow.UsageLimits` (tokens, requests, tool
            calls, cost), shared by every child run it starts (default: the Runtime's).
        guardrails: the run's :class:`~ptcflow.runtime.Guardrails` (default: the Runtime's).
        history: the conversation so far (``Message`` structs or mappings of their
            fields, e.g. an earlier ``step.messages``), checked when given: every tool call
            must have its result. The strategy continues it (ReAct, the JSON mode); one
            that keeps no conversation refuses it.
        session: a :class:`~ptcflow.sessions.Session` to continue: its messages are the
            history, and the run's own messages are appended as one turn when it succeeds.
            Not together with ``history``.
        memory: what a SubAgent's earlier programs kept (an earlier ``step.memory``, a
            :class:`~ptcflow.signals.ProgramMemory`): the run's programs start from it,
            and its Step's ``memory`` is what they kept by the end. A session carries it
            for you. Not together with ``session``.
        compaction: a :class:`~ptcflow.sessions.Compaction`: past its limit, the history
            sent to the model is shrunk (the last messages kept, the older ones dropped or
            summarized by a model call); ``step.messages`` and a session stay whole
            (default: the session's own, else none).
        summary: an earlier run's ``step.summary``, reused (or extended) by a summarizing
            compaction instead of summarizing the history again (a session passes its
            own).
        agent_options: an agent's own options (a SubAgent's ``context``, ``trace``, ...),
            which the agent checks when it plans its run; a strategy takes none.

    Raises:
        UsageError: an option of the wrong type or out of range (the message names it).

    Example:
        >>> RunOptions(run_id="r1", timeout=30)
        RunOptions(run_id='r1', timeout=30)
        >>> RunOptions(timeout=0)
        Traceback (most recent call last):
        ...
        ptcflow.errors.UsageError: timeout must be > 0 seconds or None, got 0
    """

    tools: Any = None
    llm: Any = None
    run_id: str | None = None
    request_id: str | None = None
    timeout: float | Unset | None = UNSET
    agents: Mapping[str, Any] | None = None
    record: bool = False
    name: str | None = None
    usage_limits: UsageLimits | None = None
    guardrails: Any = None
    history: Sequence[Any] = ()
    session: Session | None = None
    memory: ProgramMemory | None = None
    compaction: Compaction | None = None
    summary: Summary | None = None
    agent_options: Mapping[str, Any] = _EMPTY

    KEYWORDS: ClassVar[tuple[str, ...]] = ()
    """The run's own keyword arguments: every field but ``agent_options`` (every other
    keyword of a run is an agent's option)."""

    def __post_init__(self) -> None:
        # Each check first asks whether its option was given: a run given no options
        # (the common call) pays a few identity tests.
        timeout = self.timeout
        if timeout is not UNSET and timeout is not None and not _seconds(timeout):
            raise UsageError(f"timeout must be > 0 seconds or None, got {timeout!r}")
        if self.run_id is not None or self.request_id is not None or self.name is not None:
            for field in ("run_id", "request_id", "name"):
                value = getattr(self, field)
                if value is not None and not isinstance(value, str):
                    raise UsageError(f"{field} must be a string or None, got {value!r}")
        if self.record is not False and self.record is not True:  # bool has no subclasses
            raise UsageError(f"record must be True or False, got {self.record!r}")
        if self.usage_limits is not None and not isinstance(self.usage_limits, UsageLimits):
            raise UsageError(
                f"usage_limits must be a UsageLimits, got {type(self.usage_limits).__name__}"
            )
        if self.history is None or self.history:  # None, a list, dicts: the checked tuple
            msgspec.structs.force_setattr(self, "history", check_history(self.history or ()))
        if self.session is not None:
            if not isinstance(self.session, Session):
                raise UsageError(
                    f"session must be a ptcflow.Session, got {type(self.session).__name__}"
                )
            if self.history:
                raise UsageError(
                    "give a run history= or session=, not both: a session's history is its "
                    "stored messages"
                )
        if self.memory is not None:
            if not isinstance(self.memory, ProgramMemory):
                raise UsageError(
                    "memory must be a ProgramMemory (an earlier step.memory), got "
                    f"{type(self.memory).__name__}"
                )
            if self.session is not None:
                raise UsageError(
                    "give a run memory= or session=, not both: a session carries its memory"
                )
        if self.compaction is not None and not isinstance(self.compaction, Compaction):
            raise UsageError(
                "compaction must be a ptcflow.sessions.Compaction(max_messages=..., ...), got "
                f"{type(self.compaction).__name__}"
            )
        if self.summary is not None and not isinstance(self.summary, Summary):
            raise UsageError(
                f"summary must be a ptcflow.sessions.Summary (an earlier step.summary), got "
                f"{type(self.summary).__name__}"
            )
        if self.agents is not None and not isinstance(self.agents, Mapping):
            raise UsageError(
                f"agents must be a mapping of names to strategies, got {type(self.agents).__name__}"
            )

    def memory_for(self, strategy: Any, *, in_session: bool = False) -> ProgramMemory | None:
        """Check these options fit ``strategy`` and return the program memory its run
        starts from (a local Runtime and the Temporal client both plan runs with this).

        ``history=``/``compaction=`` need a strategy that keeps a conversation;
        ``memory=`` one whose programs keep memory, except that a session offers its memory
        to every run (``in_session``) and a run that keeps none starts without it.

        Raises:
            UsageError: an option the strategy cannot use.
        """
        if (self.history or self.compaction) and not callable(
            getattr(strategy, "conversation", None)
        ):
            raise UsageError(
                f"{type(strategy).__name__} keeps no conversation, so it cannot continue one: "
                "history=, session= and compaction= work with ReAct and SubAgents"
            )
        memory = self.memory
        if memory is not None and not callable(getattr(strategy, "kept_memory", None)):
            if not in_session:
                raise UsageError(
                    f"{type(strategy).__name__} keeps no program memory: memory= works with "
                    "PTC-Lisp SubAgents"
                )
            return None  # a session offers its memory to every run; this one keeps none
        return memory

    @classmethod
    def split(cls, keywords: Mapping[str, Any]) -> RunOptions:
        """The options of ``keywords``: the run's own (the fields) and the rest, an
        agent's (``agent_options``); ``options=`` (a :class:`RunOptions`) may stand for
        the run's own.

        Raises:
            UsageError: a bad option, or ``options=`` with other run options.

        Example:
            >>> RunOptions.split({"run_id": "r1", "context": {"x": 1}})
            RunOptions(run_id='r1', agent_options={'context': {'x': 1}})
        """
        own = {k: v for k, v in keywords.items() if k in RUN_KEYWORDS}
        rest = {k: v for k, v in keywords.items() if k not in RUN_KEYWORDS and k != "options"}
        given = keywords.get("options")
        if given is not None:
            return cls.merge(given, cls(**own, agent_options=rest))
        return cls(**own, agent_options=rest) if rest else cls(**own)

    @staticmethod
    def merge(options: Any, keywords: RunOptions) -> RunOptions:
        """``options`` (given as ``options=``) with the rest of a call's ``keywords``: only an
        agent's options may come with it.

        Raises:
            UsageError: ``options`` is not a :class:`RunOptions`, or keyword run options were
                given too.
        """
        if not isinstance(options, RunOptions):
            raise UsageError(f"options= takes a RunOptions, got {type(options).__name__}")
        clash = [f for f in RUN_KEYWORDS if getattr(keywords, f) != getattr(_DEFAULTS, f)]
        if clash:
            raise UsageError(
                f"the run's options were given twice: options=RunOptions(...) and {clash}; "
                "pass them either as keywords or in the RunOptions"
            )
        if not keywords.agent_options:
            return options
        return msgspec.structs.replace(
            options, agent_options={**options.agent_options, **keywords.agent_options}
        )


def _seconds(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


RunOptions.KEYWORDS = RUN_KEYWORDS = tuple(
    f for f in RunOptions.__struct_fields__ if f != "agent_options"
)

_DEFAULTS: Final = RunOptions()
