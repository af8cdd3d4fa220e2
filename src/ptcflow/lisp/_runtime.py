"""The program side of a run: per-run state, tool calls that suspend, ``pmap`` greenlets.

A program runs synchronously inside a greenlet. Anything that must wait (a tool call, a
yield to the event loop, a batch of concurrent tool calls) is a *request* the program hands to
its parent greenlet with :func:`suspend`; the parent (the async driver in ``_runner``, or a
``pmap`` greenlet collecting a batch) answers with an :class:`Outcome`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

from greenlet import GreenletExit, getcurrent, greenlet

from ptcflow.errors import UsageError
from ptcflow.lisp._colls import Map, vec
from ptcflow.lisp._convert import import_value
from ptcflow.lisp._export import export
from ptcflow.lisp.errors import LimitExceeded, LispError
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Keyword

__all__ = (
    "YIELD",
    "Batch",
    "FailSignal",
    "Outcome",
    "Recur",
    "ReturnSignal",
    "RunState",
    "ToolRequest",
    "suspend",
)


class ToolRequest:
    """A program asks for one tool call (arguments already plain Python data)."""

    __slots__ = ("args", "name")

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        self.name = name
        self.args = args


class Batch:
    """Several requests to answer concurrently (from ``pmap``/``pcalls``), in order."""

    __slots__ = ("requests",)

    def __init__(self, requests: list[Any]) -> None:
        self.requests = requests


class _Yield:
    __slots__ = ()

    def __repr__(self) -> str:
        return "YIELD"


YIELD: Final = _Yield()
"""The request that lets the event loop run (answered with ``None``)."""


class Outcome:
    """The answer to a :class:`ToolRequest`: a PTC-Lisp value or a ``tool_error``."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any = None, error: LispError | None = None) -> None:
        self.value = value
        self.error = error


class ReturnSignal(BaseException):
    """``(return v)``: unwinds the program (a BaseException so no builtin can catch it)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class FailSignal(BaseException):
    """``(fail v)``: unwinds the program as a failure."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class Recur(tuple[Any, ...]):
    """The values of a ``recur``, returned (in tail position) up to its loop or fn.

    A ``tuple`` subclass, so making one per iteration runs no Python code.
    """

    __slots__ = ()


def suspend(request: Any) -> Any:
    """Hand ``request`` to the parent greenlet and return its answer."""
    return getcurrent().parent.switch(request)


class RunState:
    """Everything one run's compiled code needs: budget, ctx, memory, tools, depth."""

    __slots__ = ("budget", "converted", "ctx", "ctx_values", "depth", "memory", "tool_names")

    def __init__(
        self,
        budget: Budget,
        ctx: Mapping[str, Any],
        memory: dict[str, Any],
        tool_names: frozenset[str] | None,
        converted: dict[str, tuple[Any, Any]] | None = None,
    ) -> None:
        self.budget = budget
        self.ctx = ctx  # the host's data, converted on first read (ctx_value)
        self.ctx_values: dict[str, Any] = {}
        self.converted = converted
        """Conversions shared with other runs: ``{key: (host value, converted)}``."""
        self.memory = memory
        self.tool_names = tool_names
        self.depth = 0

    def ctx_value(self, key: str) -> Any:
        """``ctx/key``: the host's value converted on first read (charged to the budget,
        yielding to the event loop on large data), then shared by every later read."""
        value = self.ctx_values.get(key, _START)
        if value is _START:
            raw = self.ctx[key]
            shared = self.converted
            known = shared.get(key) if shared is not None else None
            if known is not None and known[0] is raw:  # converted by an earlier run
                value = known[1]
            else:
                try:
                    value = import_value(raw, self.budget, f"ctx/{key}")
                except TypeError as exc:
                    raise UsageError(f"run(ctx=...) must be plain data: ctx/{key}: {exc}") from None
                if shared is not None:
                    shared[key] = (raw, value)
            self.ctx_values[key] = value
        return value

    # -- tool calls ---------------------------------------------------------------------
    def call_tool(self, name: Any, args: Any) -> Any:
        """Call tool ``name`` with the map ``args`` (suspends until the tool answers)."""
        if type(name) is not str:
            raise LispError("type", 'the tool name must be a string: (call "name" {:arg value})')
        if self.tool_names is not None and name not in self.tool_names:
            available = ", ".join(sorted(self.tool_names)) or "none"
            raise LispError("unknown_tool", f'unknown tool "{name}"; available tools: {available}')
        if args is None:
            args = {}
        if type(args) is not dict and type(args) is not Map:
            from ptcflow.lisp.printer import type_name

            raise LispError(
                "type",
                f'tools take a map of named arguments, got a {type_name(args)}; write (call "{name}" '
                "{:arg value})",
            )
        budget = self.budget
        budget.tool_calls += 1
        if budget.tool_calls > budget.limits.max_tool_calls:
            raise LimitExceeded(
                "max_tool_calls",
                f"the program made more than {budget.limits.max_tool_calls} tool calls; "
                "batch the work or ask for less per turn",
            )
        budget.check_time()
        py_args = export(
            args,
            budget.limits.max_collection_size,
            keep_keywords=False,
            what=f'the arguments of tool "{name}"',
            progress=self.progress,
        )
        outcome = self.suspend(ToolRequest(name, py_args))
        if outcome.error is not None:
            raise outcome.error
        try:  # converted here, in the program's greenlet: charged, and yielding
            return tool_value(outcome.value, budget, name)
        except TypeError as exc:
            raise LispError("tool_error", f'tool "{name}" returned {exc}') from None

    def suspend(self, request: Any) -> Any:
        """Suspend this greenlet with ``request``, keeping its own call depth."""
        depth = self.depth
        answer = getcurrent().parent.switch(request)
        self.depth = depth
        return answer

    def progress(self) -> None:
        """Check the deadline and let the event loop run (a long conversion calls it)."""
        self.budget.check_time()
        self.suspend(YIELD)

    def yield_now(self) -> None:
        """Let the event loop run (installed as ``Budget.maybe_yield``)."""
        self.suspend(YIELD)

    # -- memory -------------------------------------------------------------------------
    @staticmethod
    def memory_key(key: Any) -> str:
        """Memory keys are keywords or strings; stored under the name."""
        if type(key) is Keyword:
            return key.name
        if type(key) is str:
            return key
        raise LispError("type", "memory keys are keywords or strings: (memory/put :total 42)")

    # -- pmap ---------------------------------------------------------------------------
    def pmap(self, fn: Callable[[Any], Any], items: tuple[Any, ...]) -> Any:
        """Apply ``fn`` to every item, each in its own greenlet; tool calls run concurrently.

        At most ``Limits.max_pmap_concurrency`` elements are in flight; the suspended ones are
        answered together as one :class:`Batch`. Results keep the order of ``items``.
        """
        n = len(items)
        results: list[Any] = [None] * n
        width = self.budget.limits.max_pmap_concurrency
        pending = deque(range(n))
        active: dict[int, tuple[greenlet, Any]] = {}
        depth = self.depth

        def start(i: int) -> greenlet:
            def body() -> Any:
                self.budget.activate()  # a new greenlet starts with an empty context
                self.depth = depth
                return fn(items[i])

            return greenlet(body)

        def advance(i: int, g: greenlet, answer: Any) -> None:
            r = g.switch(answer) if answer is not _START else g.switch()
            self.depth = depth
            while r is YIELD and not g.dead:
                # An element yielding to the event loop does it now, through every pmap
                # above it: kept in the batch, it would wait for its siblings (and theirs,
                # at every level of a recursion) to run up to their own next suspension.
                active[i] = (g, r)  # a cancellation meanwhile ends it with the others
                self.suspend(YIELD)
                r = g.switch(None)
                self.depth = depth
            if g.dead:
                results[i] = r
                active.pop(i, None)
            else:
                active[i] = (g, r)

        try:
            while pending or active:
                while pending and len(active) < width:
                    i = pending.popleft()
                    advance(i, start(i), _START)
                if not active:
                    continue
                ids = list(active)
                answers = self.suspend(Batch([active[i][1] for i in ids]))
                for i, answer in zip(ids, answers, strict=True):
                    advance(i, active[i][0], answer)
            return vec(results)
        finally:
            for g, _ in active.values():
                if not g.dead:
                    g.throw(GreenletExit)
            self.depth = depth


_START: Final = object()


def tool_value(result: Any, budget: Budget, name: str) -> Any:
    """Convert a tool's Python result to a PTC-Lisp value, charging the run's budget
    (``TypeError`` when it is not plain data, ``LimitExceeded`` when it is too large)."""
    return import_value(result, budget, f'the result of tool "{name}"')
