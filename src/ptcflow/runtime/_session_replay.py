"""Replay a whole session from its turns' journals, with no model and no tool:
:func:`replay_session`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

from ptcflow.core import (
    Step,
    run_info_of,
    step_parts,
)
from ptcflow.errors import UsageError
from ptcflow.providers import ModelSource
from ptcflow.runtime._options import RunOptions
from ptcflow.runtime._plan import plan_of, typed_finish
from ptcflow.sessions import Session, SessionReplayError, Turn, conversation_of
from ptcflow.signals import (
    LLM_RESPONSE,
    REQUEST_COMPLETED,
    REQUEST_FAILED,
    REQUEST_STARTED,
    TOOL_RESULT,
    Message,
    Ok,
    ProgramMemory,
    RequestEndData,
    RequestStartedData,
    Signal,
)

__all__ = ("replay_session",)

_replace = msgspec.structs.replace


class _NoModel:
    """The model of a replay: none is called (an agent planning its replay sees one)."""

    name = "replay"
    model = "replay"

    def __repr__(self) -> str:
        return "<no model: a replay>"


class _Planner:
    """What an agent plans its replayed run against: a model that is never called."""

    model_source: Final = ModelSource(_NoModel(), provider=_NoModel())
    llm: Final = model_source.given


_PLANNER: Final = _Planner()


async def replay_session(session: Session, agent: Any, **agent_options: Any) -> tuple[Step, ...]:
    """Replay every turn of ``session`` from its journal and return their Steps.

    No model is called and no tool runs: each turn's journal (kept with the turn when the
    session keeps journals, the default) is folded into ``agent``'s strategy, given the
    history and the programs' memory of the turns before it, as the live run was. Each
    replayed Step equals the one the run returned (``value``, ``messages``, ``memory``,
    ``usage``, ``trace``, ...) but for ``duration_ms`` (0: no time passes in a replay),
    ``signals`` (empty) and ``cost_usd`` (not priced again); and what it added to the
    conversation must be what the turn stored.

    Args:
        session: the session to replay.
        agent: the strategy or agent (a ``SubAgent``) its runs used, configured the same
            way.
        agent_options: the agent's options the runs were given (``trace=``, ...; its
            context comes from each journal).

    Returns:
        One Step per turn, in order.

    Raises:
        SessionReplayError: a turn has no journal, or replays differently from what it
            stored (its messages, its memory, or it no longer completes): the error names
            the turn, its run, and what differs (``.step`` holds the replayed Step).
        CorruptTurnError: a stored turn or journal cannot be read.

    Example:
        >>> # steps = await replay_session(session, ReAct())
    """
    turns = await session.turns(journals=True)
    steps: list[Step] = []
    history: tuple[Message, ...] = ()
    for k, turn in enumerate(turns):
        memory = conversation_of(turns[:k])[1]
        step = _replay_turn(session, turn, agent, agent_options, history, memory)
        added = step.messages[len(history) :]
        problem = None
        if not step.ok:
            problem = f"it ended as failed ({step.reason}), where the stored run completed"
        elif added != turn.messages:
            problem = (
                f"it added {len(added)} message(s) where the turn stored "
                f"{len(turn.messages)}{_first_difference(added, turn.messages)}"
            )
        elif step.memory != turn.memory:
            problem = "its programs' memory differs from the one stored"
        elif turn.summary is not None and step.summary != turn.summary:
            problem = "its compaction's summary differs from the one stored"
        if problem is not None:
            raise _diverged(session, turn, problem, step)
        steps.append(step)
        history = (*history, *turn.messages)
    return tuple(steps)


def _replay_turn(
    session: Session,
    turn: Turn,
    agent: Any,
    agent_options: dict[str, Any],
    history: tuple[Message, ...],
    memory: ProgramMemory,
) -> Step:
    signals = [s for s in turn.journal if s.run_id == turn.run_id]
    start = next((s for s in signals if s.type == REQUEST_STARTED), None)
    end = next(
        (s for s in reversed(signals) if s.type in (REQUEST_COMPLETED, REQUEST_FAILED)), None
    )
    if start is None or end is None or not isinstance(start.data, RequestStartedData):
        what = "no journal" if not signals else "a journal without its start or its end"
        raise _diverged(
            session,
            turn,
            f"it has {what} (a session kept with Session(..., journal=False), or written "
            "before sessions kept journals) and cannot be replayed",
            None,
        )
    data = start.data
    given = _replace(data, history=history, memory=None if data.memory is None else memory)
    strategy, finish = _strategy_of(agent, data.input, agent_options)
    run = run_info_of(_replace(start, data=given))
    try:
        state, _ = strategy.init(run)
        later = sorted((s for s in signals if s is not start), key=_seq)
        for signal in later:
            state, _ = strategy.handle(state, signal)
    except Exception as exc:
        raise _diverged(
            session, turn, f"its strategy raised {type(exc).__name__}: {exc}", None
        ) from exc
    ended = end.data
    if not isinstance(ended, RequestEndData):
        raise _diverged(session, turn, f"its end signal {end.type} carries no result", None)
    result = ended.result
    messages, kept, summary, agent, details = step_parts(strategy, state, data.agent)
    step = Step(
        run_id=turn.run_id,
        ok=isinstance(result, Ok),
        value=result.payload if isinstance(result, Ok) else None,
        error=None if isinstance(result, Ok) else result.error,
        usage=ended.usage,
        reason=ended.reason,
        turns=sum(1 for s in signals if s.type == LLM_RESPONSE),
        tool_calls=sum(1 for s in signals if s.type == TOOL_RESULT),
        messages=messages,
        memory=kept,
        summary=summary,
        agent=agent,
        **details,
    )
    return finish(step) if finish is not None else step


def _strategy_of(
    agent: Any, input: Any, agent_options: dict[str, Any]
) -> tuple[Any, Callable[[Step], Step] | None]:
    """``agent``'s strategy for a replayed run on ``input`` (an agent plans it, with its
    context from the journal), and its last word on the Step."""
    if getattr(type(agent), "plan_run", None) is None:
        if agent_options:
            raise UsageError(
                f"replay_session() got options {sorted(agent_options)} for the strategy "
                f"{type(agent).__name__}, which takes none"
            )
        return agent, typed_finish(agent)
    options = RunOptions(agent_options={"context": input, **agent_options})
    plan = plan_of(_PLANNER, agent, None, options)
    return plan.strategy, plan.finish or typed_finish(plan.strategy)


def _seq(signal: Signal) -> int:
    return signal.seq


def _first_difference(added: Sequence[Message], stored: Sequence[Message]) -> str:
    for i, (a, b) in enumerate(zip(added, stored, strict=False)):
        if a != b:
            return f"; message {i} was {_short(b.content)!r}, now {_short(a.content)!r}"
    return ""


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _diverged(session: Session, turn: Turn, problem: str, step: Step | None) -> SessionReplayError:
    go_on = (
        f"session.fork(new_id, at_turn={turn.index - 1}) goes on from the turns before it"
        if turn.index
        else "it is the first turn"
    )
    error = SessionReplayError(
        f"session {session.session_id!r}: turn {turn.index} (run {turn.run_id}) does not "
        f"replay as stored: {problem}. Replay with the strategy or agent the session ran "
        f"with, configured the same way ({go_on})",
        session.session_id,
        turn.index,
        turn.run_id,
    )
    error.step = step
    return error
