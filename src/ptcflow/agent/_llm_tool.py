"""``LLMTool``: a tool that asks a model for a judgment (the spec's ``LLMTool``)."""

from __future__ import annotations

from typing import Any

from ptcflow.agent._as_tool import AgentCall
from ptcflow.agent._model import model_kind
from ptcflow.agent._subagent import SubAgent
from ptcflow.errors import ConfigError
from ptcflow.signature import check_placeholders, parse
from ptcflow.tools import Tool

__all__ = ("LLMTool",)


class LLMTool(Tool):
    """A tool answered by a model: a judgment (one turn) or, given tools, a small agent.

    A call fills ``prompt``'s placeholders from the arguments (checked against
    ``signature``'s inputs) and asks the model; its answer, checked against
    ``signature``'s output, is the tool's result. Like an agent used as a tool
    (:meth:`SubAgent.as_tool`), it runs as a child run of the caller and counts against
    the caller's mission.

    Args:
        prompt: the question, a template over the signature's parameters
            (``"Is {{email.subject}} urgent for a {{tier}} customer?"``).
        signature: the contract, ``"(email {subject :string}, tier :string) -> {urgent
            :bool, reason :string}"``.
        llm: ``"caller"`` (default: the calling agent's model), a model name or alias
            (``"haiku"``), a provider, or a function taking the LLM-callback input.
        description: what the tool decides (for the caller's model).
        tools: with tools, the tool is a multi-turn agent (it ends with ``return``);
            without, a judgment (one turn; the program's value is the answer).
        name: the tool's name (default ``"llm_tool"``; a ``{"name": LLMTool(...)}``
            mapping names it too).
        max_turns: turns of the multi-turn form (default 5; a judgment has one).
        output_type: the answer as a Python type (a dataclass, a pydantic model...): the
            signature's output is derived from it (``signature`` then gives only the
            parameters) and the answer must fit it (validators included); the caller
            gets its plain form.

    Raises:
        ConfigError: a placeholder that is not a signature parameter (the spec's
            ``template_error``), a signature that does not parse, a bad option.

    Example:
        >>> urgent = LLMTool(
        ...     prompt="Is {{email.subject}} urgent for a {{tier}} customer?",
        ...     signature="(email {subject :string}, tier :string) -> {urgent :bool, reason :string}",
        ...     name="is_urgent",
        ... )
        >>> urgent.calls_model, urgent.agent.judgment
        (True, True)
        >>> LLMTool(prompt="Hello {{unknown}}", signature="(name :string) -> {greeting :string}")
        Traceback (most recent call last):
        ...
        ptcflow.errors.ConfigError: LLMTool('llm_tool'): template_error: placeholder {{unknown}} not found in signature (signature: (name :string) -> {greeting :string})
    """

    __slots__ = ()

    def __init__(
        self,
        prompt: str,
        signature: str,
        *,
        llm: Any = "caller",
        description: str = "",
        tools: Any = None,
        name: str = "llm_tool",
        max_turns: int | None = None,
        output_type: Any = None,
    ) -> None:
        where = f"LLMTool({name!r})"
        if not isinstance(signature, str):
            raise ConfigError(f"{where}: signature must be a signature string, got {signature!r}")
        if output_type is not None:
            # The answer's type: the output of the signature (checked, validators run);
            # the caller still gets plain data (it is a program or a model).
            signature = (
                SubAgent(
                    prompt="-", signature=signature, output_type=output_type, name=name
                ).signature
                or signature
            )
        if isinstance(prompt, str):
            problems = check_placeholders(prompt, parse(signature))
            if problems:
                raise ConfigError(
                    f"{where}: template_error: {'; '.join(problems)} (signature: {signature})"
                )
        if max_turns is not None and not tools:
            raise ConfigError(
                f"{where}: max_turns is for an LLMTool with tools (a judgment has one turn)"
            )
        agent = SubAgent(
            prompt=prompt,
            signature=signature,
            tools=tools,
            max_turns=(max_turns or 5) if tools else 1,
            name=name,
            description=description,
            output_type=output_type,
        )
        bound = None if llm == "caller" else llm
        if bound is not None and model_kind(bound) is None:
            raise ConfigError(
                f'{where}: llm must be "caller", a model name or alias, a provider, or a '
                f"function, got {type(bound).__name__}"
            )
        Tool.__init__(
            self,
            name,
            AgentCall(agent, bound, name),
            description=description or f"Asks a model: {prompt}",
            signature=parse(signature).with_name(name) if "-" not in name else signature,
            calls_model=True,
        )

    @property
    def agent(self) -> SubAgent:
        """The agent that answers the calls (a judgment, or an agent with tools)."""
        call: AgentCall = self.fn  # type: ignore[assignment]
        return call.agent

    def __repr__(self) -> str:
        return f"LLMTool(name={self.name!r}, prompt={self.agent.prompt!r})"
