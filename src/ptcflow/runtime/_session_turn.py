"""A run as a session's next turn: what both drivers do around the run itself.

The local :class:`~ptcflow.runtime.Runtime` and the Temporal client run a turn of a
:class:`~ptcflow.sessions.Session` the same way: with the session's lock held, the stored
conversation becomes the run's history (and its programs' memory), the agent that
answered last takes the turn (a handoff in an earlier turn), the session's compaction and
its last summary apply; once the run has succeeded, its own messages, memory, summary and
(if the session keeps them) journal are stored as the next turn. Only how the run is
performed differs: the driver passes that in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from ptcflow.core import Step
from ptcflow.runtime._answering import answering_agent
from ptcflow.runtime._options import RunOptions
from ptcflow.runtime._toolbox import Toolbox
from ptcflow.sessions import Session, SessionError, conversation_of, last_summary, turn_journal

__all__ = ("session_turn",)

TurnRunner = Callable[[Any, RunOptions, int], Awaitable[Step]]
"""Performs a session's turn: ``run(agent, options, index)`` with the agent that takes
the turn, the run's options (history, memory, compaction and summary filled in, ``record``
on) and the turn's index in the session."""


async def session_turn(
    session: Session,
    agent: Any,
    options: RunOptions,
    *,
    agents: Mapping[str, Any],
    tools: Toolbox,
    run: TurnRunner,
) -> Step:
    """Run ``agent`` (or the agent the conversation was handed to) as ``session``'s next
    turn with ``run``; store the turn when the run succeeds and return its Step.

    ``agents`` and ``tools``: the driver's own (the run's options may add to them). A
    failed run stores nothing (retry it on the same session); ``step.signals`` is kept
    only when ``options.record`` asks for it. A store that refuses the turn raises its
    :class:`~ptcflow.sessions.SessionError` with the run's Step as ``exc.step``.
    """
    async with session.turn() as turns:
        history, memory = conversation_of(turns)
        if history and getattr(type(agent), "plan_run", None) is None:
            # handed on in an earlier turn: the agent that answered last goes on
            everyone = agents if options.agents is None else {**agents, **options.agents}
            box = tools if options.tools is None else Toolbox.build(options.tools)
            agent, answering = answering_agent(agent, box, everyone, history)
            if answering is not box:
                options = msgspec.structs.replace(options, tools=answering)
        stored = last_summary(turns)
        index = len(turns)
        given = msgspec.structs.replace(
            options,
            session=None,
            history=history,
            memory=memory,
            compaction=options.compaction or session.compaction,
            summary=options.summary or stored,
            record=True,
        )
        step = await run(agent, given, index)
        journal = step.signals
        if not options.record:
            step = msgspec.structs.replace(step, signals=())
        if not step.ok:
            return step  # a failed run stores nothing: retry it on the same session
        try:
            await session.append(
                index,
                step.run_id,
                step.messages[len(history) :],
                memory=step.memory,
                summary=step.summary if step.summary != stored else None,
                journal=turn_journal(journal, step.run_id) if session.journal else (),
            )
        except SessionError as exc:
            exc.step = step
            raise
        return step
