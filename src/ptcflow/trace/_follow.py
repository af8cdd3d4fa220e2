"""Follow a journal that a live run is writing: read its signals as lines are appended, and
print each turn's box once the turn is over (``ptcflow trace show --follow``)."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import IO

import anyio

from ptcflow.signals import Signal, decode_signal
from ptcflow.trace._mission import Mission
from ptcflow.trace._node import Node
from ptcflow.trace._summary import Prices
from ptcflow.trace._text import _NEST, _footer, _header, _Paint, _turn

__all__ = ("FollowPrinter", "JournalFollower", "follow_journal")


class JournalFollower:
    """The signals of a journal file as they are written: an async iterator and an async
    context manager (leaving it closes the file). Made by :func:`follow_journal`."""

    def __init__(self, path: str | Path, *, poll: float = 0.1) -> None:
        self.path = anyio.Path(path)
        self.poll = poll
        self._file: anyio.AsyncFile[bytes] | None = None
        self._pending = b""
        self._lines: deque[bytes] = deque()
        self._number = 0

    async def __aenter__(self) -> JournalFollower:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the file (iterating again reopens it from the start)."""
        if self._file is not None:
            file, self._file = self._file, None
            await file.aclose()

    def __aiter__(self) -> JournalFollower:
        return self

    async def ready(self) -> bool:
        """True when a complete line is there to read now (without waiting for more to be
        written): how a reader tells "the journal goes on" from "nothing more yet"."""
        if not self._lines and self._file is not None:
            chunk = await self._file.read(1 << 20)
            if chunk:
                lines = (self._pending + chunk).split(b"\n")
                self._pending = lines.pop()
                self._lines.extend(lines)
        return any(line.strip() for line in self._lines)

    async def __anext__(self) -> Signal:
        while True:
            while self._lines:
                line = self._lines.popleft()
                self._number += 1
                if line.strip():
                    return decode_signal(line, lineno=self._number)
            if self._file is None:
                while not await self.path.exists():  # noqa: ASYNC110 - files have no event
                    await anyio.sleep(self.poll)
                self._file = await anyio.open_file(self.path, "rb")
            chunk = await self._file.read(1 << 20)
            if not chunk:
                await anyio.sleep(self.poll)
                continue
            lines = (self._pending + chunk).split(b"\n")
            self._pending = lines.pop()
            self._lines.extend(lines)


def follow_journal(path: str | Path, *, poll: float = 0.1) -> JournalFollower:
    """The signals of journal ``path`` as they are written, forever.

    Waits for the file to exist; a line is decoded once it is complete (ends with a
    newline), so a half-written line is never read. Polls every ``poll`` seconds when
    there is nothing new. Use it as ``async with follow_journal(path) as signals: async
    for signal in signals: ...`` and leave the loop when you have seen enough.

    Raises:
        JournalError: (while iterating) a complete line is not a valid signal.

    Example:
        >>> async def first(path):  # doctest: +SKIP
        ...     async with follow_journal(path) as signals:
        ...         async for signal in signals:
        ...             return signal
    """
    return JournalFollower(path, poll=poll)


class FollowPrinter:
    """Print a mission while it grows: each run's header when it starts, each turn's box
    when the turn is over (the run moved on or ended), each run's summary when it ends
    (or pauses: the summary lists the calls that wait; a resumed run goes on below).
    Child runs are indented under their parents.

    Args:
        mission: the mission being folded (the printer reads it).
        out: where to print.
        color: ANSI colours.
        prices: to show costs.

    Example:
        >>> import io
        >>> from ptcflow.signals import RequestStartedData, Signal
        >>> mission, out = Mission(), io.StringIO()
        >>> printer = FollowPrinter(mission, out)
        >>> started = RequestStartedData(input="hi", agent="bot")
        >>> printer.feed(mission.add(Signal.create("ai.request.started", started, run_id="r1")))
        >>> out.getvalue()
        '══ bot (r1) ══\\n'
    """

    def __init__(
        self, mission: Mission, out: IO[str], *, color: bool = False, prices: Prices | None = None
    ) -> None:
        self.mission = mission
        self.out = out
        self.paint = _Paint(color)
        self.prices = prices
        self._started: set[str] = set()
        self._printed: set[str] = set()
        self._ended: set[str] = set()

    def feed(self, changed: list[Node]) -> None:
        """Print what the nodes changed by one signal completed."""
        for node in changed:
            if node.kind == "run":
                if node.id not in self._started:
                    self._started.add(node.id)
                    self._write(node, [_header(self.mission, node, self.paint)])
                if node.end_ms is not None and node.id not in self._ended:
                    self._ended.add(node.id)
                    self._turns(node, final=True)
                    footer = _footer(self.mission, node, self.paint, self.prices)
                    self._write(node, footer.split("\n"))
                elif node.end_ms is None and node.id in self._ended:  # a paused run resumed
                    self._ended.discard(node.id)
                    pauses = node.detail.get("pauses") or [{}]
                    decided = ", ".join(pauses[-1].get("decided", ())) or "no call"
                    self._write(node, [self.paint(f"↻ resumed, decided: {decided}", "yellow")])
            elif node.kind == "turn":
                run = self.mission.nodes[node.run_id]
                self._turns(run, final=False)
        self.out.flush()

    def _turns(self, run: Node, *, final: bool) -> None:
        turns = [self.mission.nodes[c] for c in run.children]
        turns = [t for t in turns if t.kind == "turn"]
        done = turns if final else turns[:-1]
        for turn in done:
            if turn.id not in self._printed:
                self._printed.add(turn.id)
                self._write(run, _turn(self.mission, turn, self.paint, self.prices, nest=False))

    def _write(self, run: Node, lines: list[str]) -> None:
        level = self._level(run)
        self.out.write("".join(_NEST * level + line + "\n" for line in lines))

    def _level(self, run: Node) -> int:
        level, parent = 0, run.parent
        while parent is not None:
            node = self.mission.nodes[parent]
            level += node.kind == "run"
            parent = node.parent
        return level
