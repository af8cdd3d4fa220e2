"""The Anthropic adapter: the Messages API through the official ``anthropic`` SDK.

The SDK's own retries are turned off (``max_retries=0``): the executor retries.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from ptcflow.errors import ConfigError
from ptcflow.runtime._provider import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import VALIDATION, EmbedResponse, ErrorEnvelope, LLMChunk, LLMResponse

from ._anthropic_wire import AnthropicStreamState, build_messages_body, parse_message
from ._errors import classify_sdk_error, decode_json
from ._sse import SSEResponse

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ("AnthropicProvider",)


def _import_anthropic() -> ModuleType:
    try:
        import anthropic
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "the Anthropic adapter needs the 'anthropic' package: pip install 'ptcflow[anthropic]'"
        ) from None
    return anthropic


class AnthropicProvider:
    """An :class:`~ptcflow.runtime.LLMProvider` for Anthropic's Messages API.

    The SDK client is created on first use and closed by :meth:`aclose` or ``async with``.
    Use one provider per event loop. Anthropic has no embeddings endpoint: :meth:`embed`
    raises a ``validation`` :class:`ProviderError`.

    Args:
        api_key: the key; defaults to the ``api_key_env`` environment variable.
        base_url: the API root; ``None`` means Anthropic (or ``ANTHROPIC_BASE_URL``).
        name: the ``gen_ai.provider.name`` reported in spans and envelopes.
        timeout: seconds the SDK waits for a response before a ``timeout`` error.
        default_headers: extra HTTP headers (``anthropic-beta``, ...).
        api_key_env: where to read the key when ``api_key`` is not given.
        client: an ``anthropic.AsyncAnthropic`` to use instead of building one.

    Example:
        >>> AnthropicProvider(api_key="sk-ant-test")
        AnthropicProvider(name='anthropic', base_url=None)
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        name: str = "anthropic",
        timeout: float = 120.0,
        default_headers: Mapping[str, str] | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        client: AsyncAnthropic | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._timeout = timeout
        self._headers = dict(default_headers or {})
        self._client: AsyncAnthropic | None = client
        self._sdk: ModuleType | None = None
        self._owns_client = client is None
        self._secrets = tuple(s for s in (self._api_key,) if s)

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.name!r}, base_url={self.base_url!r})"

    def _new_client(self) -> AsyncAnthropic:
        if self._sdk is None:
            self._sdk = _import_anthropic()
        client: AsyncAnthropic = self._sdk.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self._timeout,
            max_retries=0,
            default_headers=self._headers or None,
        )
        return client

    async def connect(self) -> None:
        """Import the SDK and build its client in a worker thread (no network I/O).

        The first import of an SDK takes a second or more; doing it here (``async with``
        calls this) keeps it off the event loop and out of the first call's deadline.
        Later calls return at once.
        """
        await self._client_async()

    async def _client_async(self) -> AsyncAnthropic:
        if self._client is None:
            client = await anyio.to_thread.run_sync(self._new_client, abandon_on_cancel=True)
            if self._client is None:
                self._client = client
        return self._client

    def _error(self, exc: Exception) -> Exception:
        if self._sdk is None:
            self._sdk = _import_anthropic()
        classified = classify_sdk_error(exc, self._sdk, provider=self.name, secrets=self._secrets)
        return classified if classified is not None else exc

    @staticmethod
    def _split(body: dict[str, Any]) -> dict[str, Any]:
        """SDK keyword arguments: the required ones by name, the rest as ``extra_body``."""
        kwargs = {k: body.pop(k) for k in ("model", "max_tokens", "messages")}
        if body:
            kwargs["extra_body"] = body
        return kwargs

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Send one Messages request and return the normalized response.

        Blocks until the whole response arrived; raises :class:`ProviderError` with a
        classified envelope on failure.
        """
        client = await self._client_async()
        kwargs = self._split(build_messages_body(request, stream=False))
        try:
            raw = await client.messages.with_raw_response.create(**kwargs)
            content = await raw.read()
        except Exception as exc:
            raise self._error(exc) from exc
        data = decode_json(content, self.name, "response body", self._secrets)
        return parse_message(data, provider=self.name, secrets=self._secrets)

    async def stream(self, request: LLMRequest) -> AsyncGenerator[LLMChunk, None]:
        """Stream a Messages response (SSE events) as :class:`LLMChunk` values.

        The last chunk carries the finish reason, the usage (cache tokens included) and
        the model.
        """
        client = await self._client_async()
        kwargs = self._split(build_messages_body(request, stream=False))
        state = AnthropicStreamState(provider=self.name, secrets=self._secrets)
        manager = client.messages.with_streaming_response.create(stream=True, **kwargs)
        try:
            raw = await manager.__aenter__()
        except Exception as exc:
            raise self._error(exc) from exc
        events = SSEResponse(raw.http_response, self._error)
        try:
            while (batch := await events.receive()) is not None:
                for event in batch:
                    data = decode_json(event.data, self.name, "stream event", self._secrets)
                    out = state.feed(data)
                    if out is not None:
                        yield out
            yield state.finish()
        finally:
            await events.aclose()
            with anyio.CancelScope(shield=True):
                await manager.__aexit__(None, None, None)

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Always fails: Anthropic offers no embeddings (use an OpenAI-compatible model)."""
        raise ProviderError(
            ErrorEnvelope.make(
                VALIDATION,
                f"{self.name}: Anthropic has no embeddings API; give LLMEmbed an "
                "'openai:' or 'openai-compatible:' model",
                {"provider": self.name, "model": request.model},
            )
        )

    async def aclose(self) -> None:
        """Close the SDK client and its connection pool (idempotent). A client passed in
        as ``client=`` is left open: its owner closes it."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()

    async def __aenter__(self) -> AnthropicProvider:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
