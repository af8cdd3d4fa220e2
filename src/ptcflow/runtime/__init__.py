"""The runtime: performs directives and drives strategies to a :class:`Step`.

``async with Runtime(llm=..., tools=...) as rt: step = await rt.run(strategy, input)``.
See docs/runtime.md and docs/telemetry.md.
"""

from __future__ import annotations

from ptcflow.core._step import Step as Step
from ptcflow.providers import (
    EmbedRequest as EmbedRequest,
    LLMProvider as LLMProvider,
    LLMRequest as LLMRequest,
    ModelPrice as ModelPrice,
    ModelResolver as ModelResolver,
    ModelSource as ModelSource,
    PriceTable as PriceTable,
    ProviderError as ProviderError,
)
from ptcflow.runtime._child import ChildTool as ChildTool, ParentRun as ParentRun
from ptcflow.runtime._config import (
    UNSET as UNSET,
    Limits as Limits,
    RetryPolicy as RetryPolicy,
    Unset as Unset,
    backoff_delay as backoff_delay,
)
from ptcflow.runtime._entry import run as run, run_sync as run_sync
from ptcflow.runtime._executor import (
    Executor as Executor,
    ExecutorStatistics as ExecutorStatistics,
)
from ptcflow.runtime._guards import (
    GUARDRAIL as GUARDRAIL,
    GUARDRAIL_FAILED as GUARDRAIL_FAILED,
    GUARDRAIL_TRIPPED as GUARDRAIL_TRIPPED,
    GuardInfo as GuardInfo,
    Guardrails as Guardrails,
    Rewrite as Rewrite,
    Trip as Trip,
)
from ptcflow.runtime._options import RunOptions as RunOptions
from ptcflow.runtime._plan import Plannable as Plannable, RunPlan as RunPlan
from ptcflow.runtime._rate import RateLimit as RateLimit, RateLimiter as RateLimiter
from ptcflow.runtime._run import DirectiveContext as DirectiveContext
from ptcflow.runtime._runtime import RunHandle as RunHandle, Runtime as Runtime
from ptcflow.runtime._telemetry import Telemetry as Telemetry
from ptcflow.runtime._usage import (
    PRICE_UNKNOWN as PRICE_UNKNOWN,
    USAGE_LIMIT_EXCEEDED as USAGE_LIMIT_EXCEEDED,
    UsageLimits as UsageLimits,
    UsageMeter as UsageMeter,
)
from ptcflow.runtime.kinds._base import Handler as Handler

__all__ = (
    "GUARDRAIL",
    "GUARDRAIL_FAILED",
    "GUARDRAIL_TRIPPED",
    "PRICE_UNKNOWN",
    "UNSET",
    "USAGE_LIMIT_EXCEEDED",
    "ChildTool",
    "DirectiveContext",
    "EmbedRequest",
    "Executor",
    "ExecutorStatistics",
    "GuardInfo",
    "Guardrails",
    "Handler",
    "LLMProvider",
    "LLMRequest",
    "Limits",
    "ModelPrice",
    "ModelResolver",
    "ModelSource",
    "ParentRun",
    "Plannable",
    "PriceTable",
    "ProviderError",
    "RateLimit",
    "RateLimiter",
    "RetryPolicy",
    "Rewrite",
    "RunHandle",
    "RunOptions",
    "RunPlan",
    "Runtime",
    "Step",
    "Telemetry",
    "Trip",
    "Unset",
    "UsageLimits",
    "UsageMeter",
    "backoff_delay",
    "run",
    "run_sync",
)
