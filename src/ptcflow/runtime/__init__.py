"""The runtime: performs directives and drives strategies to a :class:`Step`.

``async with Runtime(llm=..., tools=...) as rt: step = await rt.run(strategy, input)``.
See docs/runtime.md and docs/telemetry.md. Who writes a driver or a directive kind of
their own finds the machinery underneath in :mod:`ptcflow.runtime.lowlevel`.
"""

from __future__ import annotations

import warnings
from typing import Any

from ptcflow.core import Step as Step
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
from ptcflow.runtime._executor import ExecutorStatistics as ExecutorStatistics
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
from ptcflow.runtime._runtime import RunHandle as RunHandle, Runtime as Runtime
from ptcflow.runtime._session_replay import replay_session as replay_session
from ptcflow.runtime._stream import (
    EventStream as EventStream,
    StreamEvent as StreamEvent,
)
from ptcflow.runtime._telemetry import Telemetry as Telemetry
from ptcflow.runtime._usage import (
    PRICE_UNKNOWN as PRICE_UNKNOWN,
    USAGE_LIMIT_EXCEEDED as USAGE_LIMIT_EXCEEDED,
    UsageLimits as UsageLimits,
    UsageMeter as UsageMeter,
)

__all__ = (
    "GUARDRAIL",
    "GUARDRAIL_FAILED",
    "GUARDRAIL_TRIPPED",
    "PRICE_UNKNOWN",
    "UNSET",
    "USAGE_LIMIT_EXCEEDED",
    "ChildTool",
    "EmbedRequest",
    "EventStream",
    "ExecutorStatistics",
    "GuardInfo",
    "Guardrails",
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
    "StreamEvent",
    "Telemetry",
    "Trip",
    "Unset",
    "UsageLimits",
    "UsageMeter",
    "backoff_delay",
    "replay_session",
    "run",
    "run_sync",
)

_MOVED = frozenset({"DirectiveContext", "Executor", "Handler"})
"""Names that moved to :mod:`ptcflow.runtime.lowlevel` (driver and kind authors' face)."""


def __getattr__(name: str) -> Any:
    """Old spellings of names that moved to :mod:`ptcflow.runtime.lowlevel`, with a
    ``DeprecationWarning`` (they go in a future release)."""
    if name in _MOVED:
        warnings.warn(
            f"ptcflow.runtime.{name} moved to ptcflow.runtime.lowlevel: import it from "
            f"there (from ptcflow.runtime.lowlevel import {name}); the old spelling will "
            "be removed in a future release",
            DeprecationWarning,
            stacklevel=2,
        )
        from ptcflow.runtime import lowlevel

        return getattr(lowlevel, name)
    raise AttributeError(f"module 'ptcflow.runtime' has no attribute {name!r}")
