"""``preview_prompt``: what an agent would send, without calling anything."""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.agent._plan import resolve_context
from ptcflow.agent._subagent import SubAgent
from ptcflow.directives import LLMGenerate
from ptcflow.errors import UsageError
from ptcflow.signals import ToolSpec
from ptcflow.strategies import RunInfo
from ptcflow.tools import render_tool_signature

__all__ = ("PromptPreview", "preview_prompt")


class PromptPreview(msgspec.Struct, frozen=True, kw_only=True):
    """The first request of a run: system prompt, user message, tool schemas.

    Attributes:
        system: the full system prompt (rules, reference, data inventory, tools, output).
        user: the first user message (the task with its placeholders filled in).
        tool_schemas: each callable tool as ``{"name", "signature", "description",
            "input_schema"}``.
    """

    system: str
    user: str
    tool_schemas: tuple[dict[str, Any], ...] = ()


def preview_prompt(
    agent: SubAgent, *, context: Any = None, context_signature: str | None = None
) -> PromptPreview:
    """Render the prompt ``agent`` would send for ``context``, calling no model or tool.

    Args:
        agent: the agent.
        context: the run's context (a mapping, or a Step), as for :meth:`SubAgent.run`.
        context_signature: the types of the context's keys, as a signature.

    Returns:
        A :class:`PromptPreview`.

    Raises:
        UsageError: the context is not valid, or lacks a value a placeholder needs.

    Example:
        >>> agent = SubAgent(prompt="Find emails for {{user}}", signature="(user :string) -> {count :int}")
        >>> preview_prompt(agent, context={"user": "alice"}).user
        'Find emails for alice'
    """
    ctx, ctx_sig = resolve_context(context, context_signature)
    strategy = agent.strategy(context_signature=ctx_sig)
    specs = tuple(
        ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
        for t in agent.tools.values()
    )
    state, directives = strategy.init(RunInfo(run_id="preview", input=ctx, tools=specs))
    if not directives or not isinstance(directives[0], LLMGenerate):
        fail = getattr(state, "fail", None)
        message = fail.message if fail is not None else "the agent could not start"
        raise UsageError(f"preview_prompt({agent.name!r}): {message}")
    messages = directives[0].messages
    system = next((m.content for m in messages if m.role == "system"), "")
    user = next((m.content for m in messages if m.role == "user"), "")
    schemas = tuple(
        {
            "name": t.name,
            "signature": render_tool_signature(t),
            "description": t.description,
            "input_schema": t.input_schema,
        }
        for t in agent.tools.values()
    )
    return PromptPreview(system=system, user=user, tool_schemas=schemas)
