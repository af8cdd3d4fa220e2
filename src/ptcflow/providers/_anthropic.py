"""The Anthropic adapter: the Messages API through the official ``anthropic`` SDK.

The SDK's own retries are turned off (``max_retries=0``): the executor retries.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ptcflow.providers._protocol import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import VALIDATION, EmbedResponse, ErrorEnvelope, LLMChunk, LLMResponse

from ._anthropic_wire import AnthropicStreamState, build_messages_body, parse_message
from ._client import SDKProvider
from ._errors import decode_json

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ("AnthropicProvider",)


class AnthropicProvider(SDKProvider["AsyncAnthropic"]):
    """An :class:`~ptcflow.runtime.LLMProvider` for Anthropic's Messages API.

    The SDK client is created on first use and closed by :meth:`aclose` or ``async with``.
    Use one provider per event loop. Anthropic has no embeddings endpoint: :meth:`embed`
    raises a ``validation`` :class:`ProviderError`.

    Args:
        api_key: the key; defaults to the ``api_key_env`` environment variable.
        base_url: the API root; ``None`` means Anthropic (or ``ANTHROPIC_BASE_URL``).
        model: the model sent when a request names none (``claude-sonnet-4-6``); the
            runtime uses it for directives that name no model.
        name: the ``gen_ai.provider.name`` reported in spans and envelopes.
        timeout: seconds the SDK waits for a response before a ``timeout`` error.
        default_headers: extra HTTP headers (``anthropic-beta``, ...).
        api_key_env: where to read the key when ``api_key`` is not given.
        client: an ``anthropic.AsyncAnthropic`` to use instead of building one (its key
            is scrubbed like ``api_key``).

    Raises:
        ConfigError: no key was given, none is in the environment, and no ``base_url``
            names a proxy that could do without one.

    Every secret it was given is scrubbed from what it returns and raises.

    Example:
        >>> AnthropicProvider(api_key="sk-ant-test", model="claude-sonnet-4-6")
        AnthropicProvider(name='anthropic', base_url=None, model='claude-sonnet-4-6')
    """

    _sdk_package: ClassVar[str] = "anthropic"
    _sdk_client: ClassVar[str] = "AsyncAnthropic"
    _sdk_label: ClassVar[str] = "Anthropic"
    _base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        name: str = "anthropic",
        timeout: float = 120.0,
        default_headers: Mapping[str, str] | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        client: AsyncAnthropic | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            model=model,
            name=name,
            timeout=timeout,
            default_headers=default_headers,
            api_key_env=api_key_env,
            client=client,
        )

    @staticmethod
    def _split(body: dict[str, Any]) -> dict[str, Any]:
        """SDK keyword arguments: the required ones by name, the rest as ``extra_body``."""
        kwargs = {k: body.pop(k) for k in ("model", "max_tokens", "messages")}
        if body:
            kwargs["extra_body"] = body
        return kwargs

    async def _generate(self, request: LLMRequest) -> LLMResponse:
        """One Messages request (``POST /v1/messages``)."""
        client = await self._client_async()
        kwargs = self._split(build_messages_body(request, stream=False))
        try:
            raw = await client.messages.with_raw_response.create(**kwargs)
            content = await raw.read()
        except Exception as exc:
            failure = self._error(exc)
            raise failure from failure.__cause__
        data = decode_json(content, self.name, "response body")
        return parse_message(data, provider=self.name)

    async def _stream(self, request: LLMRequest) -> AsyncGenerator[LLMChunk, None]:
        """A streamed Messages response (the SSE event sequence)."""
        client = await self._client_async()
        kwargs = self._split(build_messages_body(request, stream=False))
        state = AnthropicStreamState(provider=self.name)
        manager = client.messages.with_streaming_response.create(stream=True, **kwargs)
        async with self._open_sse(manager) as events:
            while (batch := await events.receive()) is not None:
                for event in batch:
                    data = decode_json(event.data, self.name, "stream event")
                    out = state.feed(data)
                    if out is not None:
                        yield out
            yield state.finish()

    async def _embed(self, request: EmbedRequest) -> EmbedResponse:
        """Always fails with ``validation``: Anthropic offers no embeddings (use an
        OpenAI-compatible model)."""
        raise ProviderError(
            ErrorEnvelope.make(
                VALIDATION,
                f"{self.name}: Anthropic has no embeddings API; give LLMEmbed an "
                "'openai:' or 'openai-compatible:' model",
                {"provider": self.name, "model": request.model},
            )
        )
