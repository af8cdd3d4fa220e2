"""Model providers: OpenAI-compatible and Anthropic adapters, a model registry, error
classification, and :class:`ModelSource` (a run's model in one shape).

The official SDKs are optional extras (``ptcflow[openai]``, ``ptcflow[anthropic]``) and are
imported only when a provider first talks to its server. See docs/providers.md.
"""

from __future__ import annotations

from ptcflow.providers._anthropic import AnthropicProvider as AnthropicProvider
from ptcflow.providers._config_file import find_config as find_config
from ptcflow.providers._errors import (
    classify_sdk_error as classify_sdk_error,
    parse_retry_after as parse_retry_after,
)
from ptcflow.providers._fallback import (
    DEFAULT_FALLBACK_ON as DEFAULT_FALLBACK_ON,
    FALLBACK_OBSERVER as FALLBACK_OBSERVER,
    LLM_FALLBACK as LLM_FALLBACK,
    FallbackModel as FallbackModel,
    error_type as fallback_error_type,
)
from ptcflow.providers._openai import OpenAIProvider as OpenAIProvider
from ptcflow.providers._prices import ModelPrice as ModelPrice, PriceTable as PriceTable
from ptcflow.providers._protocol import (
    EmbedRequest as EmbedRequest,
    LLMProvider as LLMProvider,
    LLMRequest as LLMRequest,
    ModelResolver as ModelResolver,
    ProviderError as ProviderError,
)
from ptcflow.providers._registry import (
    ModelRegistry as ModelRegistry,
    ProviderConfig as ProviderConfig,
)
from ptcflow.providers._source import ModelSource as ModelSource

__all__ = (
    "DEFAULT_FALLBACK_ON",
    "FALLBACK_OBSERVER",
    "LLM_FALLBACK",
    "AnthropicProvider",
    "EmbedRequest",
    "FallbackModel",
    "LLMProvider",
    "LLMRequest",
    "ModelPrice",
    "ModelRegistry",
    "ModelResolver",
    "ModelSource",
    "OpenAIProvider",
    "PriceTable",
    "ProviderConfig",
    "ProviderError",
    "classify_sdk_error",
    "fallback_error_type",
    "find_config",
    "parse_retry_after",
)
