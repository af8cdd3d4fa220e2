"""The tools of a run, as the executor sees them: specs for the strategy, a way to call one.

A thin layer over :mod:`ptcflow.tools`: :func:`~ptcflow.tools.for_agent` normalizes what
the user passed once, and :func:`~ptcflow.tools.call_tool` runs each call of a known tool
(validation, coercion, sync functions in worker threads under the Runtime's limiter);
:func:`~ptcflow.tools.dispatch` answers a call of an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from ptcflow.signals import Err, Ok, ToolSpec
from ptcflow.tools import RunSync, Tool, ToolCall, ToolContext, call_tool, dispatch, for_agent

__all__ = ("Toolbox",)


class Toolbox:
    """A run's tools by name, with the :class:`~ptcflow.signals.ToolSpec` of each."""

    __slots__ = ("child_names", "context_names", "may_pause", "specs", "tools")

    def __init__(self, tools: dict[str, Tool]) -> None:
        self.tools = tools
        self.specs = tuple(
            ToolSpec(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                handoff=_handoff_of(t.fn),
            )
            for t in tools.values()
        )
        self.context_names = frozenset(n for n, t in tools.items() if t.context_param is not None)
        self.child_names = frozenset(n for n, t in tools.items() if _runs_child(t.fn))
        """The tools that run a child run (agents used as tools), decided once."""
        self.may_pause = bool(self.child_names) or any(
            t.deferred or t.requires_approval is not False for t in tools.values()
        )
        """A call may wait for a decision (approval, deferred, or in a child run): runs
        with these tools record their journal, which is their paused state."""

    @classmethod
    def build(cls, tools: Any) -> Toolbox:
        """Normalize ``tools`` (anything :func:`ptcflow.tools.for_agent` accepts)."""
        if tools is None:
            return EMPTY
        if isinstance(tools, Toolbox):
            return tools
        return cls(for_agent(tools))

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, name: str) -> Tool | None:
        """Return the tool called ``name``, if any."""
        return self.tools.get(name)

    def wants_context(self, name: str) -> bool:
        """True when the tool takes a :class:`~ptcflow.tools.ToolContext`."""
        return name in self.context_names

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str,
        run_id: str,
        state: Any,
        metadata: Mapping[str, Any],
        limiter: anyio.CapacityLimiter | None = None,
        run_sync: RunSync | None = None,
    ) -> Ok[Any] | Err:
        """Run tool ``name``; never raises except for cancellation.

        Sync tools run in a worker thread: through ``run_sync`` when given (the Runtime's
        pool), else ``anyio.to_thread`` under ``limiter``.
        """
        context = None
        if name in self.context_names:
            context = ToolContext(
                run_id=run_id,
                call_id=call_id,
                tool_name=name,
                state=state,
                metadata=dict(metadata),
            )
        tool = self.tools.get(name)
        if tool is not None:
            return await call_tool(
                tool, call_id, arguments, context=context, limiter=limiter, run_sync=run_sync
            )
        call = ToolCall(id=call_id, name=name, input=dict(arguments))  # unknown: its error
        result = await dispatch(self.tools, call, context=context, limiter=limiter)
        return result.to_result()


def _runs_child(fn: Any) -> bool:
    """True for a :class:`~ptcflow.runtime.ChildTool` (checked by its two methods: a
    runtime-checkable protocol's ``isinstance`` costs ~20 µs, paid per child run)."""
    return callable(getattr(fn, "plan_child", None)) and callable(getattr(fn, "child_result", None))


def _handoff_of(fn: Any) -> str:
    """The agent a handoff tool's function hands the conversation to (its
    ``handoff_agent`` attribute, a string), else ``""``."""
    agent = getattr(fn, "handoff_agent", "")
    return agent if isinstance(agent, str) else ""


EMPTY = Toolbox({})
