"""The OpenAI-compatible adapter: Chat Completions and Embeddings through the ``openai`` SDK.

Works with OpenAI itself and with every server that speaks the same protocol (vLLM,
Ollama, llama.cpp server, LM Studio) through ``base_url``. The SDK's own retries are
turned off (``max_retries=0``): the executor retries, with the deadline in view.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from ptcflow.errors import ConfigError
from ptcflow.runtime._provider import EmbedRequest, LLMRequest
from ptcflow.signals import EmbedResponse, LLMChunk, LLMResponse, Usage

from ._errors import classify_sdk_error, decode_json, malformed, stream_error
from ._openai_wire import OpenAIStreamState, build_chat_body, parse_completion
from ._sse import SSEResponse

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ("OpenAIProvider",)

_PLACEHOLDER_KEY = "not-needed"


def _import_openai() -> ModuleType:
    try:
        import openai
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "the OpenAI adapter needs the 'openai' package: pip install 'ptcflow[openai]'"
        ) from None
    return openai


class OpenAIProvider:
    """An :class:`~ptcflow.runtime.LLMProvider` for OpenAI and OpenAI-compatible servers.

    The SDK client is created on first use (so building a provider costs nothing and needs
    no event loop) and closed by :meth:`aclose` or ``async with``. Use one provider per
    event loop.

    Args:
        api_key: the key; defaults to the ``api_key_env`` environment variable. Servers
            that need no key (Ollama, llama.cpp) work without one.
        base_url: the API root (``http://localhost:11434/v1`` for Ollama); ``None`` means
            OpenAI (or ``OPENAI_BASE_URL``).
        name: the ``gen_ai.provider.name`` reported in spans and envelopes.
        timeout: seconds the SDK waits for a response before a ``timeout`` error; the
            executor's deadline still applies on top.
        default_headers: extra HTTP headers sent with every request.
        api_key_env: where to read the key when ``api_key`` is not given.
        client: an ``openai.AsyncOpenAI`` to use instead of building one (its retry
            setting is then yours to choose).

    Example:
        >>> p = OpenAIProvider(base_url="http://127.0.0.1:8000/v1", api_key="sk-test")
        >>> p
        OpenAIProvider(name='openai', base_url='http://127.0.0.1:8000/v1')
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        name: str = "openai",
        timeout: float = 120.0,
        default_headers: Mapping[str, str] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        client: AsyncOpenAI | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._timeout = timeout
        self._headers = dict(default_headers or {})
        self._client: AsyncOpenAI | None = client
        self._sdk: ModuleType | None = None
        self._owns_client = client is None
        self._secrets = tuple(s for s in (self._api_key,) if s)

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self.name!r}, base_url={self.base_url!r})"

    def _new_client(self) -> AsyncOpenAI:
        if self._sdk is None:
            self._sdk = _import_openai()
        client: AsyncOpenAI = self._sdk.AsyncOpenAI(
            api_key=self._api_key or _PLACEHOLDER_KEY,
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

    async def _client_async(self) -> AsyncOpenAI:
        if self._client is None:
            client = await anyio.to_thread.run_sync(self._new_client, abandon_on_cancel=True)
            if self._client is None:
                self._client = client
        return self._client

    def _error(self, exc: Exception) -> Exception:
        if self._sdk is None:
            self._sdk = _import_openai()
        classified = classify_sdk_error(exc, self._sdk, provider=self.name, secrets=self._secrets)
        return classified if classified is not None else exc

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Send one Chat Completions request and return the normalized response.

        Blocks until the whole response arrived. Raises :class:`ProviderError` with a
        classified envelope (see ``ptcflow.providers._errors``).
        """
        client = await self._client_async()
        body = build_chat_body(request, stream=False)
        model, messages = body.pop("model"), body.pop("messages")
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model=model, messages=messages, extra_body=body or None
            )
            content = raw.content
        except Exception as exc:
            raise self._error(exc) from exc
        return parse_completion(
            decode_json(content, self.name, "response body", self._secrets),
            provider=self.name,
            secrets=self._secrets,
        )

    async def stream(self, request: LLMRequest) -> AsyncGenerator[LLMChunk, None]:
        """Stream a Chat Completions response (SSE) as :class:`LLMChunk` values.

        Text and tool-call argument fragments come as they arrive; the last chunk carries
        the finish reason, the usage (``stream_options.include_usage``) and the model.
        """
        client = await self._client_async()
        body = build_chat_body(request, stream=True)
        model, messages = body.pop("model"), body.pop("messages")
        body.pop("stream")
        stream_options = body.pop("stream_options")
        state = OpenAIStreamState(provider=self.name, secrets=self._secrets)
        manager = client.chat.completions.with_streaming_response.create(
            model=model,
            messages=messages,
            stream=True,
            stream_options=stream_options,
            extra_body=body or None,
        )
        try:
            raw = await manager.__aenter__()
        except Exception as exc:
            raise self._error(exc) from exc
        events = SSEResponse(raw.http_response, self._error)
        try:
            done = False
            while (batch := await events.receive()) is not None:
                for event in batch:
                    done = done or event.data.startswith("[DONE]")
                    if not done:
                        out = state.feed(self._event_data(event.data))
                        if out is not None:
                            yield out
            yield state.finish()
        finally:
            await events.aclose()
            with anyio.CancelScope(shield=True):
                await manager.__aexit__(None, None, None)

    def _event_data(self, text: str) -> Any:
        data = decode_json(text, self.name, "stream event", self._secrets)
        if isinstance(data, dict) and data.get("error"):
            raise stream_error(self.name, data["error"], secrets=self._secrets)
        return data

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Embed ``request.inputs`` (``POST /embeddings``, float vectors in input order)."""
        client = await self._client_async()
        try:
            result = await client.embeddings.create(
                model=request.model, input=list(request.inputs), encoding_format="float"
            )
        except Exception as exc:
            raise self._error(exc) from exc
        data = result.to_dict(mode="json")
        rows = data.get("data")
        if not isinstance(rows, list) or len(rows) != len(request.inputs):
            raise malformed(self.name, "embedding response has the wrong number of rows", str(data))
        try:
            ordered = sorted(rows, key=lambda r: int(r.get("index", 0)))
            vectors = tuple(tuple(float(x) for x in r["embedding"]) for r in ordered)
        except (TypeError, ValueError, KeyError, AttributeError):
            raise malformed(self.name, "embedding rows are not float vectors", str(data)) from None
        usage = data.get("usage")
        tokens = usage.get("prompt_tokens", 0) if isinstance(usage, Mapping) else 0
        return EmbedResponse(
            vectors=vectors,
            usage=Usage(input_tokens=tokens if isinstance(tokens, int) else 0),
            model=str(data.get("model") or request.model),
        )

    async def aclose(self) -> None:
        """Close the SDK client and its connection pool (idempotent). A client passed in
        as ``client=`` is left open: its owner closes it."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()

    async def __aenter__(self) -> OpenAIProvider:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
