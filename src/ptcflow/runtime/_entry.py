"""One-call entry points: :func:`run` (async) and :func:`run_sync`, each in a temporary
:class:`~ptcflow.runtime.Runtime`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from ptcflow.core import Step
from ptcflow.directives import Directive
from ptcflow.errors import UsageError
from ptcflow.runtime._config import UNSET, Limits, RetryPolicy, Unset
from ptcflow.runtime._options import RunOptions
from ptcflow.runtime._runtime import Runtime
from ptcflow.runtime._telemetry import Telemetry
from ptcflow.runtime._usage import UsageLimits

__all__ = ("run", "run_sync")


async def run(
    strategy: Any,
    input: Any = None,
    *,
    llm: Any = None,
    tools: Any = None,
    retry: RetryPolicy | Unset = UNSET,
    limits: Limits | Unset = UNSET,
    telemetry: Telemetry | Unset | None = UNSET,
    bus: Any = None,
    handlers: Mapping[type[Directive], Callable[..., Any]] | None = None,
    agents: Mapping[str, Any] | None = None,
    timeout: float | Unset | None = UNSET,  # noqa: ASYNC109 (mission deadline, see docs)
    run_id: str | None = None,
    record: bool = False,
    usage_limits: UsageLimits | None = None,
    **options: Any,
) -> Step:
    """Run one strategy, or an agent, in a temporary :class:`Runtime` and return its Step.
    Blocks.

    Takes the arguments of :class:`Runtime` and of :meth:`Runtime.run`. An agent (a
    :class:`~ptcflow.runtime.Plannable` such as :class:`ptcflow.SubAgent`) takes its own
    run options too (``run(agent, context={...}, llm=llm)``) and may need no input.

    Raises:
        UsageError: a bad argument (the error itself, never wrapped in an exception
            group), options for a strategy, or no ``input`` for a strategy: a one-shot
            run has nothing else to work on.

    Example:
        >>> # step = await run(ReAct(), "What is 2 + 3?", llm=ScriptedLLM([...]), tools=[add])
        >>> # step = await run(SubAgent(prompt="Hi {{who}}"), context={"who": "Ada"}, llm=llm)
    """
    _check_input(strategy, input, options)
    async with Runtime(
        llm=llm,
        tools=tools,
        retry=retry,
        limits=limits,
        telemetry=telemetry,
        bus=bus,
        handlers=handlers,
        agents=agents,
    ) as rt:
        run_options = RunOptions(
            timeout=timeout,
            run_id=run_id,
            record=record,
            usage_limits=usage_limits,
            agent_options=options,
        )
        return await rt.run(strategy, input, options=run_options)


def run_sync(
    strategy: Any,
    input: Any = None,
    *,
    backend: str = "asyncio",
    **kwargs: Any,
) -> Step:
    """Run one strategy from synchronous code (``anyio.run``) and return its Step.

    Takes the same keyword arguments as :func:`run` (an agent's run options too), plus
    ``backend`` (``"asyncio"`` or ``"trio"``).

    Raises:
        UsageError: when called from inside a running event loop (``await run(...)``
            there instead), for a bad argument, or without an ``input`` for a strategy.
    """
    _check_input(strategy, input, {k: v for k, v in kwargs.items() if k not in _RUN_KWARGS})
    if in_event_loop():
        raise UsageError(
            "run_sync() was called inside a running event loop; it would block that loop. "
            "Use `await ptcflow.runtime.run(...)` (or a Runtime) in async code instead."
        )

    async def main() -> Step:
        return await run(strategy, input, **kwargs)

    result: Step = anyio.run(main, backend=backend)
    return result


_RUN_KWARGS = frozenset(
    (
        "llm",
        "tools",
        "retry",
        "limits",
        "telemetry",
        "bus",
        "handlers",
        "agents",
        "timeout",
        "run_id",
        "record",
    )
)


def _check_input(strategy: Any, input: Any, options: Mapping[str, Any]) -> None:
    if getattr(type(strategy), "plan_run", None) is not None:
        return  # an agent: its plan says what it needs (a SubAgent may need no context)
    if options:
        raise UsageError(
            f"run() got {sorted(options)}, options of an agent's run, with a strategy "
            f"({type(strategy).__name__}); give a strategy its input as the second argument"
        )
    if input is None:
        raise UsageError(
            "run() needs an input for the agent to work on: pass it as the second "
            'argument, e.g. run(ReAct(), "What is 2 + 3?", llm=...); for a SubAgent, '
            "run(agent, context={...}, llm=...) or agent.run(...)"
        )


def in_event_loop() -> bool:
    """True when called from inside a running event loop (asyncio, or trio when loaded):
    where a ``*_sync`` entry point must refuse to start a loop of its own."""
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
            return True
        except RuntimeError:
            return False
    return False
