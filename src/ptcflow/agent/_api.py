"""The spec's module functions: ``run`` / ``run!`` / ``then!`` on an agent or a prompt string."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ptcflow.agent._subagent import SubAgent
from ptcflow.errors import UsageError

if TYPE_CHECKING:
    from ptcflow.agent.compiled._agent import CompiledAgent
    from ptcflow.runtime import Step

__all__ = ("compile", "compile_sync", "run", "run_or_raise", "run_sync", "then")

_FIELDS = frozenset(f.name for f in dataclasses.fields(SubAgent) if f.init)
_BOTH = frozenset({"llm", "stream"})


def _split(agent: SubAgent | str, options: dict[str, Any]) -> tuple[SubAgent, dict[str, Any]]:
    """The agent (built from a prompt string and the struct fields given) and the run options."""
    # llm and stream are run options too: they stay with the run
    fields = {k: options.pop(k) for k in list(options) if k in _FIELDS and k not in _BOTH}
    if isinstance(agent, SubAgent):
        if fields:
            raise UsageError(
                f"{sorted(fields)} are SubAgent fields: give them to SubAgent(...), or pass a "
                "prompt string instead of an agent"
            )
        return agent, options
    if not isinstance(agent, str):
        raise UsageError(f"expected a SubAgent or a prompt string, got {type(agent).__name__}")
    return SubAgent(prompt=agent, **fields), options


async def run(agent: SubAgent | str, **options: Any) -> Step:
    """Run an agent, or a prompt string with SubAgent fields among the options. Blocks.

    ``run("{{x}} + {{y}}", context={"x": 10, "y": 5}, llm=llm)`` is
    ``SubAgent(prompt="{{x}} + {{y}}").run(context=..., llm=llm)``; fields such as
    ``signature=``, ``tools=``, ``max_turns=`` build the agent, the rest are
    :meth:`SubAgent.run` options.

    Raises:
        UsageError: struct fields given with an agent, or a wrong option.

    Example:
        >>> # step = await run("{{x}} + {{y}}", context={"x": 10, "y": 5}, llm=llm)
    """
    built, rest = _split(agent, dict(options))
    return await built.run(**rest)


def run_sync(agent: SubAgent | str, **options: Any) -> Step:
    """:func:`run` from synchronous code (``backend=`` picks asyncio or trio).

    Example:
        >>> # step = run_sync("{{x}} + {{y}}", context={"x": 10, "y": 5}, llm=llm)
    """
    built, rest = _split(agent, dict(options))
    return built.run_sync(**rest)


async def run_or_raise(agent: SubAgent | str, **options: Any) -> Step:
    """:func:`run`, raising :class:`SubAgentError` when the run fails (the spec's ``run!``).

    Example:
        >>> # step = await run_or_raise(finder, llm=llm)
    """
    built, rest = _split(agent, dict(options))
    return await built.run_or_raise(**rest)


async def then(step: Step, agent: SubAgent | str, **options: Any) -> Step:
    """Run ``agent`` with ``context=step`` and raise on failure (the spec's ``then!``).

    Example:
        >>> # step = await then(await run_or_raise(finder, llm=llm), drafter, llm=llm)
    """
    built, rest = _split(agent, dict(options))
    return await built.then(step, **rest)


async def compile(agent: SubAgent, **options: Any) -> CompiledAgent:
    """Compile an agent: :meth:`SubAgent.compile` as a function (the spec's
    ``SubAgent.compile/2``). Blocks for the one model call.

    Raises:
        UsageError: ``agent`` is not a SubAgent, or see :meth:`SubAgent.compile`.
        CompileError: the model's answer is not a usable function.

    Example:
        >>> # compiled = await ptcflow.compile(scorer, llm=llm, sample=samples)
    """
    if not isinstance(agent, SubAgent):
        raise UsageError(f"compile() takes a SubAgent, got {type(agent).__name__}")
    return await agent.compile(**options)


def compile_sync(agent: SubAgent, **options: Any) -> CompiledAgent:
    """:func:`compile` from synchronous code (``backend=`` picks asyncio or trio).

    Example:
        >>> # compiled = ptcflow.agent.compile_sync(scorer, llm=llm, sample=samples)
    """
    if not isinstance(agent, SubAgent):
        raise UsageError(f"compile_sync() takes a SubAgent, got {type(agent).__name__}")
    return agent.compile_sync(**options)
