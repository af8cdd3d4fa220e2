"""SubAgents: agents as data that solve tasks by writing PTC-Lisp programs.

Define an agent once with :class:`SubAgent` (prompt template, signature, tools, budget),
run it as often as needed with :meth:`SubAgent.run` (or the module functions :func:`run`,
:func:`run_sync`, :func:`run_or_raise`, :func:`then`, which also take a prompt string),
compile its logic once into a :class:`CompiledAgent` that runs without a model
(:meth:`SubAgent.compile`, :func:`compile`),
inspect what it would send with :func:`preview_prompt`, and read what it did with
:func:`print_trace`. Compose agents with :meth:`SubAgent.as_tool` and :class:`LLMTool`
(a mission shares :class:`MissionLimits`). See docs/subagent.md.

Example:
    >>> from ptcflow.agent import SubAgent
    >>> agent = SubAgent(prompt="Sum {{xs}}", signature="(xs [:int]) -> :int", max_turns=1)
    >>> agent.judgment
    True
"""

from __future__ import annotations

from ptcflow.agent._api import (
    compile as compile,
    compile_sync as compile_sync,
    run as run,
    run_or_raise as run_or_raise,
    run_sync as run_sync,
    then as then,
)
from ptcflow.agent._as_tool import AgentCall as AgentCall
from ptcflow.agent._handoff import (
    MAX_HANDOFFS_EXCEEDED as MAX_HANDOFFS_EXCEEDED,
    UNKNOWN_AGENT as UNKNOWN_AGENT,
    HandoffCall as HandoffCall,
    handoff as handoff,
)
from ptcflow.agent._llm_tool import LLMTool as LLMTool
from ptcflow.agent._mission import MissionLimits as MissionLimits
from ptcflow.agent._model import CallbackLLM as CallbackLLM, LLMRetry as LLMRetry
from ptcflow.agent._plan import SubAgentError as SubAgentError
from ptcflow.agent._preview import PromptPreview as PromptPreview, preview_prompt as preview_prompt
from ptcflow.agent._print import (
    format_trace as format_trace,
    print_chain as print_chain,
    print_trace as print_trace,
)
from ptcflow.agent._subagent import SubAgent as SubAgent
from ptcflow.agent.compiled._agent import (
    CompiledAgent as CompiledAgent,
    CompiledMetadata as CompiledMetadata,
)
from ptcflow.agent.compiled._compile import CompileError as CompileError
from ptcflow.agent.compiled._source import CompiledFileError as CompiledFileError

__all__ = (
    "MAX_HANDOFFS_EXCEEDED",
    "UNKNOWN_AGENT",
    "AgentCall",
    "CallbackLLM",
    "CompileError",
    "CompiledAgent",
    "CompiledFileError",
    "CompiledMetadata",
    "HandoffCall",
    "LLMRetry",
    "LLMTool",
    "MissionLimits",
    "PromptPreview",
    "SubAgent",
    "SubAgentError",
    "compile",
    "compile_sync",
    "format_trace",
    "preview_prompt",
    "print_chain",
    "print_trace",
    "run",
    "run_or_raise",
    "run_sync",
    "then",
)
