"""An agent service you can watch: each request runs a mission on one shared Runtime and
streams its signals to the browser, which draws the trace viewer's waterfall live.

    ptcflow serve --example                       # then open http://127.0.0.1:8000
    .venv/bin/uvicorn --app-dir examples/service service_app:app

Routes:

* ``GET /``: the viewer page, with a conversation above it: ask the planner a question, and
  watch the mission it runs (read over AG-UI from ``POST /agui``). The page keeps one
  conversation per browser (a ``ptcflow_thread`` cookie, the AG-UI ``threadId``); after a
  reload it shows the earlier turns. ``GET /?new=1`` starts a new conversation;
  ``GET /?protocol=sse`` is the same page reading the mission from
  ``/missions/stream`` instead (no conversation).
* ``POST /agui``: the mission over the AG-UI protocol: an AG-UI ``RunAgentInput`` in (its
  last user message is the question, its ``threadId`` the conversation), an SSE stream of
  AG-UI events out (run, text messages, tool calls, sub-agents, the mission tree and the
  SubAgents' memory as state: ``mission=True``); a client that goes away cancels its mission here too
  (``ptcflow.serve.agui_endpoint``). The planner runs with ``session=`` the thread's
  :class:`ptcflow.Session`, so a follow-up question sees the earlier turns, and a
  successful mission is stored as the next turn. An input with no user message runs
  nothing: it is answered ``RUN_STARTED``, ``MESSAGES_SNAPSHOT`` (the conversation so
  far), ``RUN_FINISHED``; that is how the page shows the earlier turns.
  **Approvals**: a refund above ``REFUND_THRESHOLD`` ("Refund order A17 (250 EUR)")
  pauses the mission: its stream ends with ``RUN_FINISHED`` whose outcome is
  ``interrupt`` (the call: tool, arguments, reason), and the page shows it with Approve /
  Deny. The next input on the thread with ``resume`` entries (``{"approved": true}`` or
  ``{"approved": false, "reason": ...}``) continues the mission, streamed as a new run.
  A paused mission stores no turn; the resumed one, when it completes, is stored as the
  turn of the question that paused it. A new question abandons a pause; the
  conversation's snapshot ends with the interrupt while one waits (a reload shows it).
* ``GET /missions/stream?question=...``: runs the mission (outside any conversation) and
  streams it as server-sent events (``event: signal`` per signal, then ``event: end``). A
  client that goes away cancels its run: the planner and every agent under it stop, each
  pending call ending with ``cancelled``.
* ``GET /runs``: how each mission of ``/missions/stream`` ended (``running``, ``ok``,
  ``error``, ``cancelled``).
* ``GET /refunds``: the refunds made since the service started.

Conversations are kept in SQLite (``ptcflow.sessions.SQLiteStore``), in
``conversations.db`` under the data directory: ``ptcflow serve --example --data-dir DIR``,
else ``$PTCFLOW_SERVICE_DATA``, else ``$XDG_STATE_HOME/ptcflow/example-service`` (by
default ``~/.local/state/ptcflow/example-service``). Delete the file to forget them.

Needs the ``service`` extra (Starlette and uvicorn) and ``agui``. Everything runs offline
on the scripted model of ``service_mission.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from service_mission import open_mission_runtime, resume_mission, run_mission, start_mission
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ptcflow import Decision, Session
from ptcflow.runtime import Runtime, Step
from ptcflow.serve import (
    AGUIEndpoint,
    BadRequest,
    agui_endpoint,
    interrupt_of,
    last_user_text,
    parse_run_input,
)
from ptcflow.sessions import SessionError, SQLiteStore, Turn
from ptcflow.signals import SignalBus, new_id
from ptcflow.trace import LiveMission, live_page, sse_event

QUESTION = "Which regions grew last quarter?"
COOKIE = "ptcflow_thread"
"""The cookie holding a browser's conversation (its AG-UI ``threadId``)."""
DATA_ENV = "PTCFLOW_SERVICE_DATA"
"""The environment variable naming the data directory (``--data-dir`` wins over it)."""
MAX_BODY = 1 << 20
SNAPSHOT_WAIT = 2.0
"""How long the conversation's snapshot waits for a question in flight to be stored."""
_log = structlog.get_logger("ptcflow.example_service")


def default_data_dir() -> Path:
    """Where conversations are kept when no directory is given: ``$PTCFLOW_SERVICE_DATA``,
    else ``$XDG_STATE_HOME/ptcflow/example-service`` (``~/.local/state/...``)."""
    given = os.environ.get(DATA_ENV)
    if given:
        return Path(given)
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "ptcflow" / "example-service"


class MissionStream:
    """The ASGI endpoint streaming one mission per request (raw ASGI, so that it sees the
    client's disconnect at once, even between signals)."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        question = request.query_params.get("question") or QUESTION
        await self.service.stream(question, receive, send)


class SessionRun:
    """A mission run with ``session=`` in a task of the service's own (``rt.start`` takes
    no session): what the AG-UI endpoint waits for and cancels (a ``StartedRun``)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.scope = anyio.CancelScope()
        self.ended = anyio.Event()
        self.step: Step | None = None
        self.error: Exception | None = None

    @property
    def done(self) -> bool:
        """True once the mission has ended (and its turn is stored, when it succeeded)."""
        return self.ended.is_set()

    def cancel(self, message: str = "") -> None:
        """Cancel the mission: its runs end ``cancelled`` and nothing is stored."""
        self.scope.cancel()

    async def wait(self) -> Step | None:
        """The mission's Step once it has ended (``None``: cancelled).

        Raises:
            SessionError: the conversation could not be read, or the turn not stored
                (the endpoint ends the client's stream with ``RUN_ERROR``, if it has not
                ended yet).
        """
        await self.ended.wait()
        if self.error is not None:
            raise self.error
        return self.step

    async def drive(self, mission: Callable[[], Awaitable[Step]]) -> None:
        """Run ``mission()`` to its end (in the service's task group)."""
        try:
            with self.scope:
                self.step = await mission()
        except Exception as exc:  # a SessionError, or a bug: wait() raises it, and the
            self.error = exc  # service goes on serving
            _log.warning("mission.failed", run_id=self.run_id, error=repr(exc))
        finally:
            self.ended.set()


class Service:
    """The shared state: one Runtime (opened by the app's lifespan), its bus, the runs, the
    conversations' store."""

    def __init__(
        self, latency: float, handlers: Mapping[type[Any], Any] | None, data_dir: Path
    ) -> None:
        self.latency = latency
        self.handlers = handlers
        self.data_dir = data_dir
        self.bus = SignalBus()
        self.runtime: Runtime | None = None
        self.store: SQLiteStore | None = None
        self.tasks: TaskGroup | None = None
        self.runs: dict[str, str] = {}
        self.ended: dict[str, anyio.Event] = {}  # set once a mission's Step is in
        self.refunds: list[dict[str, Any]] = []  # made by the missions' refund tool

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(self.data_dir / "conversations.db")
        runtime = open_mission_runtime(bus=self.bus, latency=self.latency, handlers=self.handlers)
        try:
            async with runtime as rt, anyio.create_task_group() as tasks:
                self.runtime, self.store, self.tasks = rt, store, tasks
                yield
                tasks.cancel_scope.cancel()  # missions still running when the app stops
        finally:
            self.runtime = self.store = self.tasks = None
            store.close()

    def session(self, thread_id: str) -> Session:
        """The conversation of an AG-UI thread."""
        assert self.store is not None, "the app's lifespan opens the store"
        return Session(thread_id, store=self.store)

    def start_in_session(self, rt: Runtime, run_input: Any, run_id: str) -> SessionRun:
        """Start the mission on the input's last user message, continuing its thread's
        conversation (what ``POST /agui`` streams)."""
        assert self.tasks is not None, "the app's lifespan opens the task group"
        run = SessionRun(run_id)
        question, session = last_user_text(run_input), self.session(run_input.thread_id)

        def mission() -> Awaitable[Step]:
            return run_mission(
                rt,
                question,
                run_id=run_id,
                latency=self.latency,
                session=session,
                refunds=self.refunds,
            )

        self.tasks.start_soon(run.drive, mission, name=f"mission {run_id}")
        return run

    def resume_in_session(
        self,
        rt: Runtime,
        run_input: Any,
        paused: Step,
        decisions: Mapping[str, Decision],
        run_id: str,
    ) -> SessionRun:
        """Continue the thread's mission that paused for an approval (what ``POST /agui``
        streams when its input carries ``resume`` entries); stored as the conversation's
        next turn when it completes."""
        assert self.tasks is not None, "the app's lifespan opens the task group"
        run = SessionRun(run_id)
        session = self.session(run_input.thread_id)

        def mission() -> Awaitable[Step]:
            return resume_mission(
                rt,
                paused,
                decisions,
                latency=self.latency,
                session=session,
                refunds=self.refunds,
            )

        self.tasks.start_soon(run.drive, mission, name=f"resume {run_id}")
        return run

    async def stream(self, question: str, receive: Receive, send: Send) -> None:
        assert self.runtime is not None, "the app's lifespan opens the Runtime"
        run_id = new_id("mission_")
        live = LiveMission(run_id)
        # subscribe before the run starts, so that no signal of it is missed
        async with self.bus.subscribe("**", buffer=65_536) as signals:
            handle = start_mission(
                self.runtime, question, run_id=run_id, latency=self.latency, refunds=self.refunds
            )
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


class Conversations:
    """``POST /agui``: an AG-UI thread is a conversation. A question runs the mission in
    it (the AG-UI endpoint streams it); an input with no question gets the conversation so
    far as ``MESSAGES_SNAPSHOT`` and runs nothing."""

    def __init__(self, service: Service, agui: AGUIEndpoint) -> None:
        self.service = service
        self.agui = agui

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    raise BadRequest(f"the request body is over {MAX_BODY} bytes", status=413)
            run_input = parse_run_input(body)
            if not 0 < len(run_input.thread_id) <= 200:
                raise BadRequest("threadId must be 1 to 200 characters: the conversation's id")
        except BadRequest as exc:
            answer = JSONResponse({"error": exc.message, "details": exc.details}, exc.status)
            await answer(scope, receive, send)
            return
        except ClientDisconnect:  # gone before its question was read: nothing to run
            return
        if last_user_text(run_input) or run_input.resume:
            # a conversation that cannot be read fails the mission before it starts: its
            # SessionRun raises, and the endpoint ends the stream with RUN_ERROR
            await self.agui.serve(run_input, receive, send)
            return
        try:
            turns = await _read(self.service.session(run_input.thread_id))
        except SessionError as exc:
            await _events(scope, receive, send, run_input, error=exc)
            return
        paused = await self.agui.paused.get(run_input.thread_id)
        await _events(scope, receive, send, run_input, turns=turns, paused=paused)


async def _read(session: Session) -> tuple[Turn, ...]:
    """The session's turns, once the question in flight in it, if any, is stored (its
    client has its answer a moment before): waiting at most ``SNAPSHOT_WAIT`` s."""
    with anyio.move_on_after(SNAPSHOT_WAIT):
        async with session.turn() as turns:  # the session's lock: runs hold it
            return turns
    return await session.turns()


def _answer_text(content: str) -> str:
    """What the page shows of a stored answer: the planner's ``answer``, else the text."""
    try:
        value = json.loads(content)
    except ValueError:
        return content
    answer = value.get("answer") if isinstance(value, dict) else None
    return answer if isinstance(answer, str) else content


async def _events(
    scope: Scope,
    receive: Receive,
    send: Send,
    run_input: Any,
    *,
    turns: tuple[Turn, ...] = (),
    error: SessionError | None = None,
    paused: Step | None = None,
) -> None:
    """A run that starts nothing: the conversation as ``MESSAGES_SNAPSHOT`` (or the error
    reading it as ``RUN_ERROR``), between ``RUN_STARTED`` and ``RUN_FINISHED`` (whose
    outcome is ``interrupt`` while a mission of the thread waits for an approval: the
    question that paused it is the snapshot's last message)."""
    from ag_ui.core import (
        AssistantMessage,
        BaseEvent,
        MessagesSnapshotEvent,
        RunErrorEvent,
        RunFinishedEvent,
        RunFinishedInterruptOutcome,
        RunStartedEvent,
        UserMessage,
    )
    from ag_ui.encoder import EventEncoder

    ids = {"thread_id": run_input.thread_id, "run_id": run_input.run_id}
    events: list[BaseEvent] = [RunStartedEvent(**ids)]
    if error is not None:
        events.append(RunErrorEvent(message=str(error), code=type(error).__name__))
    else:
        messages: list[Any] = []
        for turn in turns:
            for n, m in enumerate(turn.messages):
                key = f"{turn.run_id}/{n}"
                if m.role == "user":
                    messages.append(UserMessage(id=key, role="user", content=m.content))
                elif m.role == "assistant" and m.content:
                    text = _answer_text(m.content)
                    messages.append(AssistantMessage(id=key, role="assistant", content=text))
        if paused is not None and paused.pending:
            question = _question_of(paused)
            if question:
                key = f"{paused.run_id}/question"
                messages.append(UserMessage(id=key, role="user", content=question))
            interrupts = [interrupt_of(p) for p in paused.pending]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
            events += [MessagesSnapshotEvent(messages=messages), RunFinishedEvent(**ids, outcome=outcome)]  # fmt: skip
        else:
            events += [MessagesSnapshotEvent(messages=messages), RunFinishedEvent(**ids)]
    encoder = EventEncoder()
    body = "".join(encoder.encode(e) for e in events)
    response = Response(body, media_type="text/event-stream", headers={"cache-control": "no-cache"})
    await response(scope, receive, send)


def _question_of(paused: Step) -> str:
    """The question of a paused mission (its planner's ``question``)."""
    run = paused.paused_run
    start = next(iter(run.signals()), None) if run is not None else None
    given = getattr(getattr(start, "data", None), "input", None)
    question = given.get("question") if isinstance(given, dict) else None
    return question if isinstance(question, str) else ""


def create_app(
    *,
    latency: float = 0.4,
    handlers: Mapping[type[Any], Any] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> Starlette:
    """The service's ASGI app; ``latency`` is the scripted model's, in seconds;
    conversations are kept in ``data_dir/conversations.db`` (default:
    :func:`default_data_dir`)."""
    service = Service(latency, handlers, Path(data_dir) if data_dir else default_data_dir())

    async def index(request: Request) -> Response:
        if request.query_params.get("protocol") == "sse":
            page = live_page("/missions/stream", question=QUESTION, title="ptcflow service")
            return HTMLResponse(page)
        thread = request.cookies.get(COOKIE, "")
        if request.query_params.get("new") or not thread.startswith("thread_"):
            thread = "thread_" + secrets.token_urlsafe(16)  # a new conversation
        if request.query_params.get("new"):  # back to "/": a reload keeps the conversation
            back = RedirectResponse("/", status_code=303)
            back.set_cookie(COOKIE, thread, max_age=30 * 86400, httponly=True, samesite="strict")
            return back
        page = live_page(
            "/missions/stream",
            question=QUESTION,
            title="ptcflow service",
            agui="/agui",
            thread=thread,
        )
        response = HTMLResponse(page)
        response.set_cookie(COOKIE, thread, max_age=30 * 86400, httponly=True, samesite="strict")
        return response

    async def runs(request: Request) -> Response:
        return JSONResponse(service.runs)

    async def refunds(request: Request) -> Response:
        return JSONResponse(service.refunds)

    def runtime() -> Runtime:
        assert service.runtime is not None, "the app's lifespan opens the Runtime"
        return service.runtime

    # the page draws the mission tree: it is sent as AG-UI state (mission=True)
    agui = agui_endpoint(
        runtime, start=service.start_in_session, resume=service.resume_in_session, mission=True
    )
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/missions/stream", MissionStream(service)),
            Route("/agui", Conversations(service, agui), methods=["POST"]),
            Route("/runs", runs),
            Route("/refunds", refunds),
        ],
        lifespan=service.lifespan,
    )
    app.state.service = service
    return app


app = create_app()
