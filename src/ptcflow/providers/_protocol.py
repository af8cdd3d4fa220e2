"""The LLM provider protocol: what the executor needs from a model backend.

Adapters (OpenAI, Anthropic, the scripted test model) implement :class:`LLMProvider` and
return normalized structs from :mod:`ptcflow.signals`. They raise :class:`ProviderError`
with a canonical :class:`~ptcflow.signals.ErrorEnvelope` for failures they can classify
(HTTP 429 -> ``rate_limited`` with ``retry_after``, 5xx -> ``transient``, 401 -> ``auth``);
the executor treats any other exception as ``provider_error`` and ``TimeoutError`` as
``timeout``. Providers do not retry: the executor does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

import msgspec

from ptcflow.errors import PtcflowError
from ptcflow.signals import (
    EmbedResponse,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    Message,
    ToolSpec,
)

__all__ = ("EmbedRequest", "LLMProvider", "LLMRequest", "ModelResolver", "ProviderError")


class LLMRequest(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One model call, as the executor hands it to a provider (model already resolved)."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    response_schema: dict[str, Any] | None = None
    options: dict[str, Any] = {}


class EmbedRequest(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One embedding call (model already resolved)."""

    model: str
    inputs: tuple[str, ...]


class ProviderError(PtcflowError):
    """A classified provider failure; the executor publishes :attr:`envelope`.

    Args:
        envelope: the canonical error (its ``retryable`` decides retries).
        retry_after: seconds the provider asked to wait (HTTP ``Retry-After``), if any.
    """

    def __init__(self, envelope: ErrorEnvelope, *, retry_after: float | None = None) -> None:
        super().__init__(f"{envelope.type}: {envelope.message}")
        self.envelope = envelope
        self.retry_after = retry_after


@runtime_checkable
class LLMProvider(Protocol):
    """A model backend. ``name`` is the ``gen_ai.provider.name`` (``openai``, ...)."""

    name: str

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Return one complete response."""
        ...

    def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Yield chunks; the last one carries usage and the finish reason."""
        ...

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Return one vector per input."""
        ...


@runtime_checkable
class ModelResolver(Protocol):
    """Maps a directive's ``model`` / ``model_alias`` to a provider and a model name.

    Raise :class:`ptcflow.errors.ConfigError` for an unknown model or alias.
    """

    def resolve(self, model: str | None, alias: str | None) -> tuple[LLMProvider, str]:
        """Return the provider to call and the concrete model name to send it."""
        ...
