"""An agent service you can watch: each request runs a mission on one shared Runtime and
streams its signals to the browser, which draws the trace viewer's waterfall live.

    ptcflow serve --example                       # then open http://127.0.0.1:8000
    .venv/bin/uvicorn --app-dir examples/service service_app:app

Routes:

* ``GET /``: the viewer page, with a form that starts a mission (``GET /?protocol=agui``:
  the same page reading the mission over AG-UI from ``POST /agui``).
* ``GET /missions/stream?question=...``: runs the mission and streams it as server-sent
  events (``event: signal`` per signal, then ``event: end``). A client that goes away
  cancels its run: the planner and every agent under it stop, each pending call ending
  with ``cancelled``.
* ``POST /agui``: the same mission over the AG-UI protocol: an AG-UI ``RunAgentInput``
  in (its last user message is the question), an SSE stream of AG-UI events out (run,
  text messages, tool calls, sub-agents, the mission tree as state); a client that goes
  away cancels its mission here too (``ptcflow.serve.agui_endpoint``).
* ``GET /runs``: how each mission of this process ended (``running``, ``ok``, ``error``,
  ``cancelled``).

Needs the ``service`` extra (Starlette and uvicorn) and ``agui`` for ``/agui``. Everything
runs offline on the scripted model of ``service_mission.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from service_mission import open_mission_runtime, start_mission
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ptcflow.runtime import RunHandle, Runtime
from ptcflow.serve import agui_endpoint, last_user_text
from ptcflow.signals import SignalBus, new_id
from ptcflow.trace import LiveMission, live_page, sse_event

QUESTION = "Which regions grew last quarter?"


class MissionStream:
    """The ASGI endpoint streaming one mission per request (raw ASGI, so that it sees the
    client's disconnect at once, even between signals)."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        question = request.query_params.get("question") or QUESTION
        await self.service.stream(question, receive, send)


class Service:
    """The shared state: one Runtime (opened by the app's lifespan), its bus, the runs."""

    def __init__(self, latency: float, handlers: Mapping[type[Any], Any] | None) -> None:
        self.latency = latency
        self.handlers = handlers
        self.bus = SignalBus()
        self.runtime: Runtime | None = None
        self.runs: dict[str, str] = {}
        self.ended: dict[str, anyio.Event] = {}  # set once a mission's Step is in

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        runtime = open_mission_runtime(bus=self.bus, latency=self.latency, handlers=self.handlers)
        async with runtime as rt:
            self.runtime = rt
            yield
            self.runtime = None

    async def stream(self, question: str, receive: Receive, send: Send) -> None:
        assert self.runtime is not None, "the app's lifespan opens the Runtime"
        run_id = new_id("mission_")
        live = LiveMission(run_id)
        # subscribe before the run starts, so that no signal of it is missed
        async with self.bus.subscribe("**", buffer=65_536) as signals:
            handle = start_mission(self.runtime, question, run_id=run_id, latency=self.latency)
            self.runs[run_id] = "running"
            self.ended[run_id] = anyio.Event()
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_cancel_on_disconnect, receive, tg.cancel_scope)
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [
                                (b"content-type", b"text/event-stream; charset=utf-8"),
                                (b"cache-control", b"no-cache"),
                                (b"x-mission", run_id.encode()),
                            ],
                        }
                    )
                    async for signal in signals:
                        event = live.feed(signal)
                        if event is not None:
                            await send(
                                {"type": "http.response.body", "body": event, "more_body": True}
                            )
                        if live.done:
                            break
                    end = sse_event("end", {"status": live.status(), "run_id": run_id})
                    await send({"type": "http.response.body", "body": end, "more_body": False})
                    tg.cancel_scope.cancel()
            finally:
                if not handle.done:
                    handle.cancel()  # the client went away: stop the mission
                with anyio.move_on_after(10, shield=True):
                    step = await handle.wait()
                    self.runs[run_id] = (
                        "ok" if step.ok else "cancelled" if step.reason == "cancelled" else "error"
                    )
                self.ended[run_id].set()


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def create_app(
    *, latency: float = 0.4, handlers: Mapping[type[Any], Any] | None = None
) -> Starlette:
    """The service's ASGI app; ``latency`` is the scripted model's, in seconds."""
    service = Service(latency, handlers)

    async def index(request: Request) -> Response:
        agui = "/agui" if request.query_params.get("protocol") == "agui" else None
        return HTMLResponse(
            live_page("/missions/stream", question=QUESTION, title="ptcflow service", agui=agui)
        )

    async def runs(request: Request) -> Response:
        return JSONResponse(service.runs)

    def runtime() -> Runtime:
        assert service.runtime is not None, "the app's lifespan opens the Runtime"
        return service.runtime

    def start_agui(rt: Runtime, run_input: Any, run_id: str) -> RunHandle:
        question = last_user_text(run_input) or QUESTION
        return start_mission(rt, question, run_id=run_id, latency=service.latency)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/missions/stream", MissionStream(service)),
            Route("/agui", agui_endpoint(runtime, start=start_agui), methods=["POST"]),
            Route("/runs", runs),
        ],
        lifespan=service.lifespan,
    )
    app.state.service = service
    return app


app = create_app()
