"""An in-memory ASGI client for the streaming endpoints: no server, both anyio backends."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

Message = MutableMapping[str, Any]


class Response:
    """What the endpoint sent: status, headers, body chunks."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.closed = False

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[dict[str, Any]]:
        """The JSON of each ``data:`` line of the SSE body."""
        return [
            json.loads(line[len("data: ") :])
            for line in self.body.decode().split("\n")
            if line.startswith("data: ")
        ]


async def call(
    app: Callable[[Any, Any, Any], Awaitable[None]],
    body: bytes,
    *,
    method: str = "POST",
    on_body: Callable[[Response], Awaitable[None]] | None = None,
    disconnect: anyio.Event | None = None,
) -> Response:
    """POST ``body`` to ``app``. ``on_body`` runs after each body chunk is taken (block in
    it to be a slow client); setting ``disconnect`` makes the client go away."""
    response = Response()
    sent = False
    gone = disconnect or anyio.Event()

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            return
        if message.get("body"):
            response.chunks.append(message["body"])
        if not message.get("more_body", False):
            response.closed = True
        elif on_body is not None:
            await on_body(response)

    scope = {"type": "http", "method": method, "path": "/", "headers": []}
    await app(scope, receive, send)
    return response


class FailingRun:
    """A :class:`~ptcflow.serve.StartedRun` whose run raises: before it started (no
    ``handle``), or once ``handle``'s run has ended (its turn could not be stored, say)."""

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle
        self.cancelled = False

    @property
    def done(self) -> bool:
        return self.handle.done if self.handle is not None else True

    def cancel(self, message: str = "") -> None:
        self.cancelled = True
        if self.handle is not None:
            self.handle.cancel(message)

    async def wait(self) -> Any:
        if self.handle is not None:
            await self.handle.wait()
        await anyio.lowlevel.checkpoint()
        raise LookupError("conversation thread_1 could not be read")


# -- a streaming SubAgent that calls an agent: the scenario of the SubAgent stream tests --

PLANNER_PROGRAM = (
    "```clojure\n"
    '(println "asking the doubler")\n'
    '(def n (call "add" {:x 20 :y 1}))\n'
    '(return (call "doubler" {:n n}))\n'
    "```"
)
DOUBLER_PROGRAM = '```clojure\n(println "doubling" ctx/n)\n(return (* 2 ctx/n))\n```'


def streaming_planner(add: Callable[..., Any]) -> tuple[Any, Any]:
    """A streaming SubAgent ``planner`` whose program calls ``add`` and then the agent
    ``doubler``, and the scripted model that writes both programs (value: 42)."""
    from ptcflow import SubAgent
    from ptcflow.testing import ScriptedLLM

    doubler = SubAgent(
        prompt="Double {{n}}", signature="(n :int) -> :int", name="doubler",
        description="Doubles n.",
    )  # fmt: skip
    planner = SubAgent(
        prompt="Go", signature="() -> :int", tools=[add, doubler.as_tool()], name="planner",
        stream=True,
    )  # fmt: skip

    def script(request: Any) -> str:
        asked = str(request.messages[-1].content)
        return DOUBLER_PROGRAM if "Double" in asked else PLANNER_PROGRAM

    return planner, ScriptedLLM(script)
