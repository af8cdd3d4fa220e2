"""ptcflow: an anyio orchestration runtime for LLM agents.

Strategies are pure state machines that emit directives; the executor performs them and
posts correlated signals back. See the README for the two set-up commands.
"""

from __future__ import annotations

from ptcflow.errors import (
    ConfigError as ConfigError,
)
from ptcflow.errors import (
    InternalError as InternalError,
)
from ptcflow.errors import (
    ProgramError as ProgramError,
)
from ptcflow.errors import (
    PtcflowError as PtcflowError,
)
from ptcflow.errors import (
    RunError as RunError,
)
from ptcflow.errors import (
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
