"""Model providers: OpenAI-compatible and Anthropic adapters, error classification, registry.

The official SDKs are optional extras (``ptcflow[openai]``, ``ptcflow[anthropic]``) and are
imported only when a provider first talks to its server.
"""

from __future__ import annotations

from ptcflow.providers._anthropic import AnthropicProvider as AnthropicProvider
from ptcflow.providers._errors import (
    classify_sdk_error as classify_sdk_error,
    parse_retry_after as parse_retry_after,
)
from ptcflow.providers._openai import OpenAIProvider as OpenAIProvider

__all__ = ("AnthropicProvider", "OpenAIProvider", "classify_sdk_error", "parse_retry_after")
