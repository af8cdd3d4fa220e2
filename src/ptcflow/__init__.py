"""ptcflow: an anyio orchestration runtime for LLM agents.

Strategies are pure state machines that emit directives; the executor performs them and
posts correlated signals back. The most used names are re-exported here; each subpackage
(:mod:`ptcflow.agent`, :mod:`ptcflow.runtime`, :mod:`ptcflow.strategies`, :mod:`ptcflow.tools`,
:mod:`ptcflow.signature`, :mod:`ptcflow.lisp`, :mod:`ptcflow.signals`,
:mod:`ptcflow.testing`, :mod:`ptcflow.providers`) has the rest.

Example:
    >>> from ptcflow import ReAct, run_sync
    >>> from ptcflow.testing import ScriptedLLM
    >>> def add(x: int, y: int) -> int:
    ...     "Add two integers."
    ...     return x + y
    >>> llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    >>> run_sync(ReAct(), "What is 2 + 3?", llm=llm, tools=[add]).value
    '5'
"""

from __future__ import annotations

from ptcflow.agent import (
    CompiledAgent as CompiledAgent,
    LLMTool as LLMTool,
    MissionLimits as MissionLimits,
    SubAgent as SubAgent,
    SubAgentError as SubAgentError,
    compile as compile,
    handoff as handoff,
    preview_prompt as preview_prompt,
    print_chain as print_chain,
    print_trace as print_trace,
)
from ptcflow.core import (
    AlreadyDecidedError as AlreadyDecidedError,
    Approve as Approve,
    Decision as Decision,
    Deny as Deny,
    NotPausedError as NotPausedError,
    PausedRun as PausedRun,
    PauseInUseError as PauseInUseError,
    PauseMismatchError as PauseMismatchError,
    ResumeError as ResumeError,
    Supply as Supply,
    TamperedPauseError as TamperedPauseError,
    UnknownCallError as UnknownCallError,
    WrongDecisionError as WrongDecisionError,
)
from ptcflow.errors import (
    ConfigError as ConfigError,
    InternalError as InternalError,
    ProgramError as ProgramError,
    PtcflowError as PtcflowError,
    RunError as RunError,
    UsageError as UsageError,
)
from ptcflow.providers import FallbackModel as FallbackModel
from ptcflow.runtime import (
    Guardrails as Guardrails,
    Limits as Limits,
    ModelPrice as ModelPrice,
    PriceTable as PriceTable,
    RateLimit as RateLimit,
    RetryPolicy as RetryPolicy,
    RunHandle as RunHandle,
    Runtime as Runtime,
    Step as Step,
    Telemetry as Telemetry,
    UsageLimits as UsageLimits,
    run as run,
    run_sync as run_sync,
)
from ptcflow.sessions import Session as Session
from ptcflow.signals import PendingCall as PendingCall
from ptcflow.signature import Signature as Signature, SignatureError as SignatureError
from ptcflow.strategies import ReAct as ReAct, Strategy as Strategy
from ptcflow.tools import Tool as Tool, ToolContext as ToolContext, tool as tool

__version__ = "0.1.0"

__all__ = (
    "AlreadyDecidedError",
    "Approve",
    "CompiledAgent",
    "ConfigError",
    "Decision",
    "Deny",
    "FallbackModel",
    "Guardrails",
    "InternalError",
    "LLMTool",
    "Limits",
    "MissionLimits",
    "ModelPrice",
    "NotPausedError",
    "PauseInUseError",
    "PauseMismatchError",
    "PausedRun",
    "PendingCall",
    "PriceTable",
    "ProgramError",
    "PtcflowError",
    "RateLimit",
    "ReAct",
    "ResumeError",
    "RetryPolicy",
    "RunError",
    "RunHandle",
    "Runtime",
    "Session",
    "Signature",
    "SignatureError",
    "Step",
    "Strategy",
    "SubAgent",
    "SubAgentError",
    "Supply",
    "TamperedPauseError",
    "Telemetry",
    "Tool",
    "ToolContext",
    "UnknownCallError",
    "UsageError",
    "UsageLimits",
    "WrongDecisionError",
    "__version__",
    "compile",
    "handoff",
    "preview_prompt",
    "print_chain",
    "print_trace",
    "run",
    "run_sync",
    "tool",
)
