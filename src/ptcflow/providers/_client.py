"""The SDK client lifecycle the adapters share, apart from their wire protocols.

:class:`SDKProvider` holds what every adapter over an official SDK needs: the API key
(given or read from the environment, checked when the provider is built), the default
model, the secrets scrubbed from everything that leaves it, the SDK client built lazily in
a worker thread, error classification, one streaming response read as SSE, and closing.
Each adapter adds only its wire mapping (``_generate``, ``_stream``, ``_embed``); the public
``generate`` / ``stream`` / ``embed`` here are the boundary every result and error crosses.
:class:`AsyncClosing` is the ``async with`` protocol for anything closed by ``aclose``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import ModuleType, TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import anyio
import msgspec

from ptcflow.errors import ConfigError, UsageError
from ptcflow.providers._protocol import EmbedRequest, LLMRequest, ProviderError
from ptcflow.signals import (
    PROVIDER_ERROR,
    TIMEOUT,
    TRANSIENT,
    EmbedResponse,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    Secrets,
    redact_url,
    secrets_of_headers,
    secrets_of_url,
)

from ._errors import classify_sdk_error, scrub_error, scrubbed_cause
from ._sse import SSEResponse

__all__ = ("AsyncClosing", "SDKProvider")


class _SDKClient(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_SDKClient)


class AsyncClosing:
    """``async with`` for a resource closed by :meth:`aclose`, which subclasses define."""

    async def aclose(self) -> None:
        raise NotImplementedError  # pragma: no cover - every subclass defines it

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def client_secrets(client: object) -> list[str]:
    """What an SDK client carries that must stay secret: its ``api_key`` /
    ``auth_token``, the secret-looking headers it sends (``Authorization`` included) and
    the credentials in its ``base_url``. Public attributes only; absent ones are skipped."""
    if client is None:
        return []
    found = [getattr(client, "api_key", None), getattr(client, "auth_token", None)]
    headers = getattr(client, "default_headers", None)
    if isinstance(headers, Mapping):
        found += secrets_of_headers(headers)
    found += secrets_of_url(getattr(client, "base_url", None))
    return [s for s in found if isinstance(s, str)]


class SDKProvider(AsyncClosing, Generic[ClientT]):
    """An adapter's client lifecycle over an official SDK (``openai``, ``anthropic``).

    Subclasses name the SDK in class attributes and pass their options to ``__init__``;
    the SDK is imported and its client built on first use, in a worker thread.
    """

    _sdk_package: ClassVar[str]
    """The SDK module, which is also the name of the ``ptcflow[...]`` extra."""
    _sdk_client: ClassVar[str]
    """The async client class in that module."""
    _sdk_label: ClassVar[str]
    """How error messages name the adapter (``OpenAI``, ``Anthropic``)."""
    _base_url_env: ClassVar[str]
    """The environment variable the SDK reads its base URL from."""
    _key_placeholder: ClassVar[str] = "not-needed"
    """The key given to the SDK when there is none (a server at ``base_url`` needing none)."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        model: str | None,
        name: str,
        timeout: float,
        default_headers: Mapping[str, str] | None,
        api_key_env: str,
        client: ClientT | None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self.model = model or ""
        """The model sent when a request names none (the runtime reads it too)."""
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        env_base_url = os.environ.get(self._base_url_env)
        if client is None and not self._api_key and not (base_url or env_base_url):
            raise ConfigError(
                f"{type(self).__name__} needs an API key: export {api_key_env}=... or pass "
                f"api_key=...; a server that needs no key (Ollama, vLLM, llama.cpp) is "
                f"reached with base_url=... instead"
            )
        self._timeout = timeout
        self._headers = dict(default_headers or {})
        self._client: ClientT | None = client
        self._sdk: ModuleType | None = None
        self._owns_client = client is None
        self.secrets = Secrets(
            [
                self._api_key,
                *secrets_of_headers(self._headers),
                *secrets_of_url(base_url),
                *secrets_of_url(env_base_url),
                *client_secrets(client),
            ]
        )
        """Every secret this provider was configured with; everything it returns or
        raises has them scrubbed (see :class:`~ptcflow.signals.Secrets`)."""

    def __repr__(self) -> str:
        url = (
            self.base_url
            if self.base_url is None
            else redact_url(self.secrets.scrub(self.base_url))
        )
        model = f", model={self.model!r}" if self.model else ""
        return f"{type(self).__name__}(name={self.name!r}, base_url={url!r}{model})"

    # -- the boundary: every result and error leaves through these ---------------------

    def _model_for(self, request: LLMRequest | EmbedRequest) -> Any:
        if request.model:
            return request
        if not self.model:
            raise UsageError(
                f"{self!r} got a request with no model: pass model=... to "
                f"{type(self).__name__}(...), or set it on the strategy "
                "(ReAct(model=...)) or the directive"
            )
        return msgspec.structs.replace(request, model=self.model)

    def _failure(self, exc: Exception) -> Exception:
        """The exception to raise for ``exc``: a provider error scrubbed of every secret;
        anything else becomes a provider error whose text is scrubbed too (``timeout`` or
        ``transient`` for a ``TimeoutError`` / ``ConnectionError``, as the runtime would
        classify them, else ``provider_error``)."""
        if isinstance(exc, ProviderError):
            return scrub_error(exc, self.secrets)
        kind, retryable = PROVIDER_ERROR, False
        if isinstance(exc, TimeoutError):
            kind, retryable = TIMEOUT, True
        elif isinstance(exc, ConnectionError):
            kind, retryable = TRANSIENT, True
        error = ProviderError(
            ErrorEnvelope.make(
                kind,
                f"{self.name}: {type(exc).__name__}: {self.secrets.scrub(str(exc))}",
                {"provider": self.name, "exception": type(exc).__name__},
                retryable=retryable,
            )
        )
        error.__cause__ = scrubbed_cause(exc, self.secrets)
        return error

    async def generate(self, request: LLMRequest) -> LLMResponse:
        """Send one request and return the normalized response (blocks until it is
        complete).

        Raises:
            UsageError: neither the request nor the provider names a model.
            ProviderError: a classified failure (see docs/providers.md); its envelope and
                its ``__cause__`` hold no configured secret.
        """
        request = self._model_for(request)
        try:
            response = await self._generate(request)
        except Exception as exc:
            failure = self._failure(exc)
            raise failure from failure.__cause__
        return self.secrets.scrub_value(response) if self.secrets else response

    async def stream(self, request: LLMRequest) -> AsyncGenerator[LLMChunk, None]:
        """Stream a response as :class:`LLMChunk` values: text and tool-call argument
        fragments as they arrive, then a last chunk with the finish reason, the usage and
        the model.

        Raises:
            UsageError: neither the request nor the provider names a model.
            ProviderError: as :meth:`generate`; a stream cut before its end is ``transient``.
        """
        request = self._model_for(request)
        chunks = self._stream(request)
        scrub = self.secrets.scrub_value if self.secrets else None
        try:
            async for chunk in chunks:
                yield chunk if scrub is None else scrub(chunk)
        except Exception as exc:
            failure = self._failure(exc)
            raise failure from failure.__cause__
        finally:
            await chunks.aclose()

    async def embed(self, request: EmbedRequest) -> EmbedResponse:
        """Embed ``request.inputs``: one float vector per input, in input order.

        Raises:
            UsageError: neither the request nor the provider names a model.
            ProviderError: as :meth:`generate`.
        """
        request = self._model_for(request)
        try:
            return await self._embed(request)
        except Exception as exc:
            failure = self._failure(exc)
            raise failure from failure.__cause__

    async def _generate(self, request: LLMRequest) -> LLMResponse:
        raise NotImplementedError  # pragma: no cover - every adapter defines it

    def _stream(self, request: LLMRequest) -> AsyncGenerator[LLMChunk, None]:
        raise NotImplementedError  # pragma: no cover - every adapter defines it

    async def _embed(self, request: EmbedRequest) -> EmbedResponse:
        raise NotImplementedError  # pragma: no cover - every adapter defines it

    # -- the SDK client ------------------------------------------------------------------

    def _import_sdk(self) -> ModuleType:
        if self._sdk is None:
            try:
                self._sdk = importlib.import_module(self._sdk_package)
            except ImportError:  # pragma: no cover - depends on the environment
                raise ConfigError(
                    f"the {self._sdk_label} adapter needs the {self._sdk_package!r} package: "
                    f"pip install 'ptcflow[{self._sdk_package}]'"
                ) from None
        return self._sdk

    def _new_client(self) -> ClientT:
        client: ClientT = getattr(self._import_sdk(), self._sdk_client)(
            api_key=self._api_key or self._key_placeholder,
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

    async def _client_async(self) -> ClientT:
        if self._client is None:
            client = await anyio.to_thread.run_sync(self._new_client, abandon_on_cancel=True)
            if self._client is None:
                self._client = client
        return self._client

    def _error(self, exc: Exception) -> Exception:
        """``exc`` classified (a :class:`ProviderError` with a scrubbed cause), or ``exc``
        itself when it is no provider failure (the boundary scrubs it then)."""
        classified = classify_sdk_error(
            exc, self._import_sdk(), provider=self.name, secrets=self.secrets
        )
        return classified if classified is not None else exc

    @asynccontextmanager
    async def _open_sse(self, manager: Any) -> AsyncIterator[SSEResponse]:
        """Enter the SDK's streaming-response ``manager`` and read its body as SSE events.

        A failure to open is classified; on the way out the events and the response are
        closed, the response shielded from cancellation.
        """
        try:
            raw = await manager.__aenter__()
        except Exception as exc:
            failure = self._error(exc)
            raise failure from failure.__cause__
        events = SSEResponse(raw.http_response, self._error)
        try:
            yield events
        finally:
            await events.aclose()
            with anyio.CancelScope(shield=True):
                await manager.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Close the SDK client and its connection pool (idempotent). A client passed in
        as ``client=`` is left open: its owner closes it."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self
