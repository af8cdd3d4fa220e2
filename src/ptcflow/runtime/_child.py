"""Agents used as tools: the :class:`ChildTool` protocol and the :class:`ParentRun` it is
given. The tool kind (``_kinds``) performs a call of such a tool as a child run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ptcflow.signals import VALIDATION, Err, ErrorEnvelope

if TYPE_CHECKING:
    from ptcflow.core import Step
    from ptcflow.signals import Message, Ok

__all__ = ("ChildTool", "ParentRun", "invalid_child_arguments")


@dataclass(frozen=True, kw_only=True, slots=True)
class ParentRun:
    """The run a :class:`ChildTool` is called from, as its ``plan_child`` sees it.

    Attributes:
        run_id: the parent run's id.
        name: the parent run's agent name.
        llm: the parent run's model, a :class:`~ptcflow.providers.ModelSource` (``None``:
            none; a provider or resolver given here is normalised by the agent).
        model: the model name the parent's strategy asks for (``None``: the provider's).
        inherit: the parent's :attr:`RunPlan.inherit` (``None`` for a plain strategy).
        from_program: True when the call comes from a program (a ``RunProgram``
            sub-call), whose result the program reads; False for a ``ToolExec``, whose
            result goes to the model.
        call_id: the tool call's id (the child run's id is ``{run_id}/{call_id}``).
        conversation: the parent's conversation when the call was made (its strategy's
            ``conversation(state)``: the history, then its own messages, the assistant
            message making this call last); empty for a strategy that keeps none. A
            handoff hands it on.
        tools: the parent run's tools (a ``Toolbox``), which a plain strategy taking a
            handoff shares.
        handoffs: the agents that handed the conversation on to reach the parent run,
            first to last (empty: the parent was started by the caller).
        max_handoffs: ``Limits.max_handoffs`` of the Runtime.
        agents: the agents the parent run may start by name (``agents=``), where a handoff
            naming its agent by a string finds it.
        notes: the tool's own notes about this call, from ``plan_child`` to
            ``child_result`` (the same ``ParentRun`` is given to both; a handoff notes how
            many messages it sent).
    """

    run_id: str
    name: str
    llm: Any
    model: str | None
    inherit: Any
    from_program: bool
    call_id: str
    conversation: tuple[Message, ...] = ()
    tools: Any = None
    handoffs: tuple[str, ...] = ()
    max_handoffs: int = 8
    agents: Any = None
    notes: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)


@runtime_checkable
class ChildTool(Protocol):
    """A tool function that runs a child run (an agent used as a tool).

    A :class:`~ptcflow.tools.Tool` whose ``fn`` has these two methods is performed by the
    runtime as a child run of the calling run: the arguments are validated by the tool's
    signature, :meth:`plan_child` describes the run, the runtime runs it nested in the
    call (``parent_run_id`` set, cancelled with the call, its spans under the call's
    ``execute_tool`` span, within the call's remaining time), and :meth:`child_result`
    turns its Step into the call's result.

    Example:
        >>> # SubAgent(...).as_tool() returns a Tool whose fn is a ChildTool
    """

    def plan_child(self, parent: ParentRun, arguments: dict[str, Any]) -> Any:
        """The child run for validated ``arguments`` (a :class:`~ptcflow.runtime.RunPlan`;
        typed ``Any`` here to keep the runtime's modules free of import cycles), or the
        call's error (an ``Err``: a limit, no model)."""
        ...

    def child_result(self, parent: ParentRun, step: Step) -> Ok[Any] | Err:
        """The call's result from the child run's Step."""
        ...


def invalid_child_arguments(name: str, expected: str, errors: list[str]) -> Err:
    """The ``validation`` tool error of a call of agent tool ``name`` whose arguments do not
    match its input signature (``expected``, rendered): no child run starts."""
    return Err(
        error=ErrorEnvelope.make(
            VALIDATION,
            f"invalid arguments for tool {name!r}: {'; '.join(errors)} (expected {expected})",
            {"tool": name, "where": "input", "errors": list(errors)},
            retryable=False,
        )
    )
