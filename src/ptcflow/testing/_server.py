"""A local model server on 127.0.0.1 that speaks the OpenAI and Anthropic wire protocols.

It runs inside the caller's event loop (asyncio or trio, anyio + h11), binds its port
before :func:`open_model_server` yields (the kernel queues connections from then on:
nobody polls for readiness), records every request, and answers each one with the next
scripted entry (the same entries :class:`~ptcflow.testing.ScriptedLLM` takes, or a raw
:class:`ServerReply`), then with a plausible answer once the script is used up.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
from anyio.abc import SocketAttribute, SocketStream

from ptcflow.errors import ConfigError
from ptcflow.testing._server_script import is_embeddings, plausible_reply, reply_for
from ptcflow.testing._wire import RecordedRequest, Responder, ServerReply, json_reply

if TYPE_CHECKING:
    import h11

    from ptcflow.testing._turns import ScriptItem

__all__ = ("ModelServer", "open_model_server")


_Entry: TypeAlias = "ScriptItem | ServerReply | Responder"


@dataclass
class ModelServer:
    """A running local model server (built by :func:`open_model_server`).

    Attributes:
        port: the port it listens on (127.0.0.1).
        requests: every request received, in order.
        responder: answers a request when the script is empty (``None``: HTTP 599, a
            loud "script exhausted" for tests that script every request).
        open_connections: connections currently open (to check that clients close theirs).
    """

    port: int
    responder: Responder | None = None
    requests: list[RecordedRequest] = field(default_factory=list, repr=False)
    open_connections: int = 0
    _script: deque[_Entry] = field(default_factory=deque, repr=False)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the ``base_url`` of an ``AnthropicProvider``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: the ``base_url`` of an ``OpenAIProvider``."""
        return f"{self.base_url}/v1"

    def env(self, *, api_key: str = "sk-local-test-key") -> dict[str, str]:
        """The environment variables that point the SDKs and ``ModelRegistry`` here:
        ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``PTCFLOW_OPENAI_COMPATIBLE_BASE_URL``
        and both API keys (set to ``api_key``)."""
        return {
            "OPENAI_BASE_URL": self.openai_url,
            "OPENAI_API_KEY": api_key,
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": api_key,
            "PTCFLOW_OPENAI_COMPATIBLE_BASE_URL": self.openai_url,
        }

    def push(self, *entries: _Entry) -> None:
        """Queue answers for the next requests, in order.

        Each entry is what :class:`~ptcflow.testing.ScriptedLLM` takes (text, a tool call,
        a list of them, a :class:`~ptcflow.testing.Turn`, a fault such as
        ``ScriptedLLM.rate_limited(2.0)``), answered in the wire format of the request
        (OpenAI or Anthropic, JSON or SSE); a :class:`ServerReply` sent as is; or a
        function of the :class:`RecordedRequest` returning a :class:`ServerReply`.
        """
        self._script.extend(entries)

    @property
    def remaining(self) -> int:
        """Scripted entries not used yet."""
        return len(self._script)

    def _answer(self, request: RecordedRequest) -> ServerReply:
        head = self._script[0] if self._script else None
        if head is not None and (
            isinstance(head, ServerReply) or callable(head) or not is_embeddings(request)
        ):
            self._script.popleft()
            if isinstance(head, ServerReply):
                return head
            if callable(head):
                return head(request)
            return reply_for(head, request, len(self.requests))
        if self.responder is not None:
            return self.responder(request)
        return json_reply({"error": {"message": "model server script exhausted"}}, status=599)

    async def _serve(self, stream: SocketStream) -> None:
        import h11

        self.open_connections += 1
        try:
            async with stream:
                await self._connection(h11, stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            pass
        finally:
            self.open_connections -= 1

    async def _connection(self, h11: Any, stream: SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request = await self._read_request(h11, conn, stream)
            if request is None:
                return
            self.requests.append(request)
            reply = self._answer(request)
            if not await self._send(h11, conn, stream, reply):
                return
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _read_request(
        self, h11: Any, conn: h11.Connection, stream: SocketStream
    ) -> RecordedRequest | None:
        head: Any = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return None
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                headers = {k.decode().lower(): v.decode() for k, v in head.headers}
                return RecordedRequest(
                    head.method.decode(), head.target.decode(), headers, bytes(body)
                )
            elif isinstance(event, h11.ConnectionClosed):
                return None

    async def _send(
        self, h11: Any, conn: h11.Connection, stream: SocketStream, reply: ServerReply
    ) -> bool:
        """Send ``reply``; False when the connection must end (dropped, reset or hung)."""
        if reply.delay > 0:
            await anyio.sleep(reply.delay)
        if reply.reset:
            await stream.aclose()
            return False
        if reply.hang:
            await _wait_for_close(stream)
            return False
        headers = list(reply.headers)
        if reply.events is None:
            headers.append(("content-length", str(len(reply.body))))
        else:
            headers.append(("transfer-encoding", "chunked"))
        await stream.send(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        if reply.events is None:
            await stream.send(conn.send(h11.Data(data=reply.body)))
        else:
            for i, frame in enumerate(reply.events):
                if reply.hang_after is not None and i >= reply.hang_after:
                    await _wait_for_close(stream)
                    return False
                if reply.drop_after is not None and i >= reply.drop_after:
                    await stream.aclose()  # mid-body, without the terminating chunk
                    return False
                await stream.send(conn.send(h11.Data(data=frame)))
        await stream.send(conn.send(h11.EndOfMessage()))
        return True


async def _wait_for_close(stream: SocketStream) -> None:
    """Wait until the client gives up and closes the socket."""
    try:
        while await stream.receive():
            pass
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        pass


_PLAUSIBLE: Any = object()


@asynccontextmanager
async def open_model_server(
    script: Sequence[_Entry] = (),
    *,
    responder: Responder | None = _PLAUSIBLE,
    port: int = 0,
) -> AsyncIterator[ModelServer]:
    """Serve the OpenAI and Anthropic wire protocols on 127.0.0.1 while the block runs.

    The offline counterpart of :class:`~ptcflow.testing.ScriptedLLM` for code that builds
    its own provider: point ``OpenAIProvider(base_url=server.openai_url)`` or
    ``AnthropicProvider(base_url=server.base_url)`` at it (or set ``server.env()``), and
    the real SDKs make real HTTP calls. It answers ``POST .../chat/completions``,
    ``.../messages`` and ``.../embeddings``, JSON or streamed (SSE) as the request asks.

    Needs ``h11`` (installed with ``ptcflow[openai]`` or ``ptcflow[anthropic]``).

    Args:
        script: the first answers, in order (see :meth:`ModelServer.push`).
        responder: answers once the script is used up. The default answers plausibly:
            it calls the first offered tool once, with arguments made from its schema,
            then answers in text; a requested JSON schema gets a fitting object; an
            embedding request gets small vectors. ``None``: HTTP 599 "script exhausted".
        port: the port to listen on (``0``: a free one, see :attr:`ModelServer.port`).

    Example:
        >>> import anyio
        >>> from ptcflow.providers import OpenAIProvider
        >>> from ptcflow.runtime import LLMRequest
        >>> from ptcflow.signals import Message
        >>> async def main() -> str:
        ...     async with open_model_server(["Paris."]) as server:
        ...         async with OpenAIProvider(base_url=server.openai_url, api_key="sk-test") as p:
        ...             hello = (Message(role="user", content="Capital of France?"),)
        ...             response = await p.generate(LLMRequest(model="gpt-4.1", messages=hello))
        ...     return response.text
        >>> anyio.run(main)
        'Paris.'
    """
    try:
        import h11  # noqa: F401 - checked here, used by each connection
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "open_model_server needs the 'h11' package: pip install 'ptcflow[openai]'"
        ) from None
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    server = ModelServer(
        port=listener.extra(SocketAttribute.local_port),
        responder=plausible_reply if responder is _PLAUSIBLE else responder,
    )
    server.push(*script)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server._serve)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()
