"""The OpenAI-compatible adapter: Chat Completions and Embeddings through the ``openai`` SDK.

Works with OpenAI itself and with every server that speaks the same protocol (vLLM,
Ollama, llama.cpp server, LM Studio) through ``base_url``. The SDK's own retries are
turned off (``max_retries=0``): the executor retries, with the deadline in view.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ptcflow.providers._protocol import EmbedRequest, LLMRequest
from ptcflow.signals import EmbedResponse, LLMChunk, LLMResponse, Usage

from ._client import SDKProvider
from ._errors import decode_json, malformed, stream_error
from ._openai_wire import OpenAIStreamState, build_chat_body, parse_completion

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ("OpenAIProvider",)


class OpenAIProvider(SDKProvider["AsyncOpenAI"]):
    """An :class:`~ptcflow.runtime.LLMProvider` for OpenAI and OpenAI-compatible servers.

    The SDK client is created on first use (so building a provider costs nothing and needs
    no event loop) and closed by :meth:`aclose` or ``async with``. Use one provider per
    event loop.

    Args:
        api_key: the key; defaults to the ``api_key_env`` environment variable. Servers
            that need no key (Ollama, llama.cpp) work without one when ``base_url`` (or
            ``OPENAI_BASE_URL``) names them.
        base_url: the API root (``http://localhost:11434/v1`` for Ollama); ``None`` means
            OpenAI (or ``OPENAI_BASE_URL``).
        model: the model sent when a request names none (``gpt-4.1-mini``); the runtime
            uses it for directives that name no model.
        name: the ``gen_ai.provider.name`` reported in spans and envelopes.
        timeout: seconds the SDK waits for a response before a ``timeout`` error; the
            executor's deadline still applies on top.
        default_headers: extra HTTP headers sent with every request.
        api_key_env: where to read the key when ``api_key`` is not given.
        client: an ``openai.AsyncOpenAI`` to use instead of building one (its retry
            setting is then yours to choose; its key is scrubbed like ``api_key``).

    Raises:
        ConfigError: no key was given, none is in the environment, and no ``base_url``
            names a server that could do without one.

    Every secret it was given (the key, a client's key, secret-looking headers, the
    credentials of a ``base_url``) is scrubbed from what it returns and raises.

    Example:
        >>> p = OpenAIProvider(base_url="http://127.0.0.1:8000/v1", api_key="sk-test")
        >>> p
        OpenAIProvider(name='openai', base_url='http://127.0.0.1:8000/v1')
        >>> OpenAIProvider(api_key="sk-test", model="gpt-4.1-mini").model
        'gpt-4.1-mini'
    """

    _sdk_package: ClassVar[str] = "openai"
    _sdk_client: ClassVar[str] = "AsyncOpenAI"
    _sdk_label: ClassVar[str] = "OpenAI"
    _base_url_env: ClassVar[str] = "OPENAI_BASE_URL"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        name: str = "openai",
        timeout: float = 120.0,
        default_headers: Mapping[str, str] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        client: AsyncOpenAI | None = None,
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

    async def _generate(self, request: LLMRequest) -> LLMResponse:
        """One Chat Completions request (``POST /chat/completions``)."""
        client = await self._client_async()
        body = build_chat_body(request, stream=False)
        model, messages = body.pop("model"), body.pop("messages")
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model=model, messages=messages, extra_body=body or None
            )
            content = raw.content
        except Exception as exc:
            failure = self._error(exc)
            raise failure from failure.__cause__
        return parse_completion(
            decode_json(content, self.name, "response body"),
            provider=self.name,
        )

    async def _stream(self, request: LLMRequest) -> AsyncGenerator[LLMChunk, None]:
        """A streamed Chat Completions response (SSE, ``stream_options.include_usage``)."""
        client = await self._client_async()
        body = build_chat_body(request, stream=True)
        model, messages = body.pop("model"), body.pop("messages")
        body.pop("stream")
        stream_options = body.pop("stream_options")
        state = OpenAIStreamState(provider=self.name)
        manager = client.chat.completions.with_streaming_response.create(
            model=model,
            messages=messages,
            stream=True,
            stream_options=stream_options,
            extra_body=body or None,
        )
        async with self._open_sse(manager) as events:
            done = False
            while (batch := await events.receive()) is not None:
                for event in batch:
                    done = done or event.data.startswith("[DONE]")
                    if not done:
                        out = state.feed(self._event_data(event.data))
                        if out is not None:
                            yield out
            yield state.finish()

    def _event_data(self, text: str) -> Any:
        data = decode_json(text, self.name, "stream event")
        if isinstance(data, dict) and data.get("error"):
            raise stream_error(self.name, data["error"])
        return data

    async def _embed(self, request: EmbedRequest) -> EmbedResponse:
        """``POST /embeddings`` (float vectors, put back in input order)."""
        client = await self._client_async()
        try:
            result = await client.embeddings.create(
                model=request.model, input=list(request.inputs), encoding_format="float"
            )
        except Exception as exc:
            failure = self._error(exc)
            raise failure from failure.__cause__
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
