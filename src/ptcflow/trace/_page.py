"""The viewer page: one self-contained HTML file (its CSS, JavaScript and data inline; no
network access, no build step), for a recorded mission or for a live one."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from ptcflow.trace._mission import Mission
from ptcflow.trace._summary import Prices

__all__ = ("live_page", "page_html", "write_page")


def _asset(name: str) -> str:
    return files("ptcflow.trace").joinpath("assets", name).read_text(encoding="utf-8")


def _html(title: str, data: dict[str, Any]) -> str:
    # JSON inside <script>: "</" would end the element and "<!--" would open a comment;
    # "\u003c" is the same character to JSON.parse and nothing to the HTML parser.
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c")
    escaped = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    page = _asset("viewer.html")
    # The data goes in last: nothing inside it is ever taken for a placeholder.
    for key, value in (("__TITLE__", escaped), ("__CSS__", _asset("viewer.css"))):
        page = page.replace(key, value)
    page = page.replace("__JS__", _asset("viewer.js").replace("</", "<\\/"))
    head, tail = page.split("__DATA__", 1)
    return head + payload + tail


def page_html(mission: Mission, *, prices: Prices | None = None, title: str = "trace") -> str:
    """The page of a recorded ``mission``, as HTML text.

    Example:
        >>> "<!doctype html>" in page_html(Mission())
        True
    """
    nodes = [node.to_json() for node in mission.walk()]
    data = {"nodes": nodes, "prices": prices.to_json() if prices else {}, "live": None}
    return _html(title, data)


def write_page(
    mission: Mission, path: str | Path, *, prices: Prices | None = None, title: str = "trace"
) -> Path:
    """Write the page of ``mission`` to ``path`` (UTF-8) and return the path."""
    path = Path(path)
    path.write_text(page_html(mission, prices=prices, title=title), encoding="utf-8")
    return path


def live_page(
    stream: str,
    *,
    question: str = "",
    title: str = "live mission",
    prices: Prices | None = None,
    agui: str | None = None,
    thread: str | None = None,
) -> str:
    """The page of a live service: a form that starts a mission and streams it.

    Args:
        stream: the URL of the server-sent event stream; the page opens
            ``{stream}?question=...``. Each ``signal`` event's data is ``{"signal":
            <the signal as a journal line>, "nodes": [<changed nodes>]}``; an ``end`` event
            carries ``{"status": ...}``.
        question: the question the form starts with.
        title: the page's title.
        prices: to show costs.
        agui: read the mission over AG-UI instead: the URL of an AG-UI endpoint
            (``ptcflow.serve.agui_endpoint``) the page POSTs a ``RunAgentInput`` to; the
            tree comes from the AG-UI state (``STATE_SNAPSHOT``, ``STATE_DELTA``).
        thread: with ``agui``: the page holds a conversation, this AG-UI ``threadId``.
            It shows the conversation above the waterfall: on load it POSTs an input
            with no message, whose ``MESSAGES_SNAPSHOT`` holds the earlier turns; each
            question is then sent alone (the server keeps the conversation), and the
            answer shown is the run's ``RUN_FINISHED`` result (its ``answer`` field, or
            the result as text).
    """
    data = {
        "nodes": [],
        "prices": prices.to_json() if prices else {},
        "live": {
            "stream": stream,
            "question": question,
            **({"agui": agui} if agui else {}),
            **({"thread": thread} if agui and thread else {}),
        },
    }
    return _html(title, data)
