"""The SDK client lifecycle the adapters share, apart from their wire protocols.

:class:`SDKProvider` holds what every adapter over an official SDK needs: the API key
(given or read from the environment) and the secrets scrubbed from errors, the SDK client
built lazily in a worker thread, error classification, one streaming response read as SSE,
and closing. Each adapter adds only its wire mapping (``generate``, ``stream``, ``embed``).
:class:`AsyncClosing` is the ``async with`` protocol for anything closed by ``aclose``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import ModuleType, TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import anyio

from ptcflow.errors import ConfigError

from ._errors import classify_sdk_error
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
    _key_placeholder: ClassVar[str | None] = None
    """The key given to the SDK when there is none (servers that need no key)."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        name: str,
        timeout: float,
        default_headers: Mapping[str, str] | None,
        api_key_env: str,
        client: ClientT | None,
    ) -> None:
        self.name = name
        self.base_url = base_url
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._timeout = timeout
        self._headers = dict(default_headers or {})
        self._client: ClientT | None = client
        self._sdk: ModuleType | None = None
        self._owns_client = client is None
        self._secrets = tuple(s for s in (self._api_key,) if s)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

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
        classified = classify_sdk_error(
            exc, self._import_sdk(), provider=self.name, secrets=self._secrets
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
            raise self._error(exc) from exc
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
