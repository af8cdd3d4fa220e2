"""ptcflow: an anyio orchestration runtime for LLM agents.

Strategies are pure state machines that emit directives; the executor performs them and
posts correlated signals back. See the README for the two set-up commands.
"""

from __future__ import annotations

from ptcflow.errors import (
    ConfigError as ConfigError,
    InternalError as InternalError,
    ProgramError as ProgramError,
    PtcflowError as PtcflowError,
    RunError as RunError,
    UsageError as UsageError,
)

__version__ = "0.1.0"

__all__ = (
    "ConfigError",
    "InternalError",
    "ProgramError",
    "PtcflowError",
    "RunError",
    "UsageError",
    "__version__",
)
