"""Running a program: parse, analyze, compile, then drive its greenlet from the event loop.

The program runs synchronously in a greenlet. Whenever it needs to wait it suspends with a
request (``_runtime``); :func:`run` awaits the request in the event loop (a tool call, a
checkpoint, or a batch of tool calls in a task group) and resumes the program with the answer.
This is the ``greenlet_spawn``/``await_only`` pattern: no thread per program, so thousands of
programs can wait on tools in one loop. A cancelled or timed-out run throws ``GreenletExit``
into the program, which unwinds at once.

Every tool call gets an ``index`` in issue order when the driver receives it (a ``pmap``
batch is numbered in program order before any of its calls starts), so the numbering is the
same on every run and every backend. A caller can route each call through its own function
(``call=``, with the index), answer the calls from a record instead of calling anything
(``replay=``), and carry function definitions of earlier runs as source text
(``functions=``).
"""

from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
from greenlet import GreenletExit, greenlet

from ptcflow.errors import UsageError
from ptcflow.lisp._analyzer import Analyzer, Program
from ptcflow.lisp._compiler import Compiler
from ptcflow.lisp._driver import (
    Driver,
    ProgramSuspended,
    ReplayMismatch,
    Tool,
    ToolCallRecord,
    ToolRouter,
    WaitClock,
)
from ptcflow.lisp._export import export
from ptcflow.lisp._forms import Form
from ptcflow.lisp._reader import read
from ptcflow.lisp._runtime import (
    FailSignal,
    ReturnSignal,
    RunState,
)
from ptcflow.lisp.errors import LimitExceeded, LispError
from ptcflow.lisp.limits import Budget, Limits
from ptcflow.lisp.values import Builtin, LispFn, check_plain, from_python

__all__ = (
    "PARSE_MAX_CHARS",
    "LispResult",
    "ReplayMismatch",
    "ToolCallRecord",
    "ToolRouter",
    "analyze",
    "parse",
    "run",
    "run_sync",
)

_INDEX = operator.attrgetter("index")


class LispResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one run of a program produced.

    Args:
        value: the program's value (of ``return``, or of its last form) as Python data: map
            keys become strings, keyword values stay :class:`~ptcflow.lisp.Keyword`.
        returned: the program ended with ``(return v)``.
        failed: the program ended with ``(fail v)``.
        fail_value: the value given to ``fail``, as Python data.
        prints: the captured output of ``println`` and friends.
        memory: the memory after the run (unchanged when the run failed or raised).
        tool_calls: every tool call made, in issue order (by ``index``).
        error: ``None``, or the :class:`~ptcflow.lisp.LispError` that ended the run.
        forms: the program's top-level forms as read (``()`` when it did not read): pass
            them to :func:`~ptcflow.lisp.kept_functions` instead of reading it again.
    """

    value: Any = None
    returned: bool = False
    failed: bool = False
    fail_value: Any = None
    prints: list[str] = msgspec.field(default_factory=list)
    memory: dict[str, Any] = msgspec.field(default_factory=dict)
    tool_calls: list[ToolCallRecord] = msgspec.field(default_factory=list)
    error: LispError | None = None
    forms: tuple[Any, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the program neither raised an error nor called ``fail``."""
        return self.error is None and not self.failed


def _default_builtins() -> Mapping[str, Builtin]:
    from ptcflow.lisp.builtins import BUILTINS

    return BUILTINS


PARSE_MAX_CHARS = 200_000
"""The default ``max_chars`` of :func:`parse` and :func:`analyze`: ten times a run's
``Limits.max_source_chars`` (reading 200,000 characters of dense code takes about 0.5 s and
10 MB; the text of a run is checked against its own, smaller limit)."""


def parse(source: str, *, max_chars: int = PARSE_MAX_CHARS) -> tuple[Form, ...]:
    """Read PTC-Lisp source into forms (with line and column).

    Args:
        source: the program text.
        max_chars: refuse a longer text before reading it (reading takes time and memory
            in proportion to the text, in one go: this function is synchronous).

    Raises:
        LispError: category ``"parse"``; :class:`~ptcflow.lisp.LimitExceeded` (category
            ``"limit"``, ``limit == "max_source_chars"``) for a text over ``max_chars``.

    Example:
        >>> len(parse("(def x 1) (+ x 2)"))
        2
    """
    _check_length(source, max_chars, "parse")
    return read(source)


def _check_length(source: str, max_chars: int, fn: str) -> None:
    if len(source) > max_chars:
        raise LimitExceeded(
            "max_source_chars",
            f"{fn}: the text is {len(source)} characters long, over max_chars={max_chars}; "
            f"pass a shorter text, or a larger {fn}(..., max_chars=...) when you trust it",
        )


def analyze(
    source: str | tuple[Form, ...],
    *,
    tool_names: Collection[str] | None = None,
    ctx_keys: Collection[str] | None = None,
    memory_keys: Collection[str] | Mapping[str, Any] = (),
    builtins: Mapping[str, Builtin] | None = None,
    max_chars: int = PARSE_MAX_CHARS,
) -> Program:
    """Parse (when given text) and analyze a program without running it.

    Args:
        source: program text, or forms from :func:`parse`.
        tool_names: the callable tools; ``None`` skips the unknown-tool check.
        ctx_keys: the keys of ``ctx``; ``None`` skips the ``ctx/`` check.
        memory_keys: names already in memory (defined by earlier turns), or the memory itself:
            then the names holding functions (``defn`` in an earlier turn) shadow builtins of
            the same name, as this program's own ``def``s do; other names never do.
        builtins: the builtin registry (default: all of ``ptcflow.lisp.builtins``).
        max_chars: refuse a longer text before reading it (see :func:`parse`).

    Returns:
        The analyzed program (``.tools_used`` lists the tools it names).

    Raises:
        LispError: ``parse``, ``analysis``, ``unbound``, ``arity`` or ``unknown_tool``;
            ``limit`` for a text over ``max_chars``.

    Example:
        >>> sorted(analyze('(call "search" {:q "x"})', tool_names=["search"]).tools_used)
        ['search']
    """
    if isinstance(source, str):
        _check_length(source, max_chars, "analyze")
    return _analyze(source, tool_names, ctx_keys, memory_keys, builtins, None)


def _analyze(
    source: str | tuple[Form, ...],
    tool_names: Collection[str] | None,
    ctx_keys: Collection[str] | None,
    memory_keys: Collection[str] | Mapping[str, Any],
    builtins: Mapping[str, Builtin] | None,
    budget: Budget | None,
) -> Program:
    """:func:`analyze`, charging each token and form to ``budget`` when given."""
    forms = read(source, budget) if isinstance(source, str) else source
    an = Analyzer(
        _default_builtins() if builtins is None else builtins,
        tool_names=tool_names,
        ctx_keys=ctx_keys,
        globals_=memory_keys,
        global_fns=(
            [k for k, v in memory_keys.items() if isinstance(v, LispFn)]
            if isinstance(memory_keys, Mapping)
            else ()
        ),
        budget=budget,
    )
    try:
        return an.program(forms)
    except RecursionError:
        raise LimitExceeded("max_depth", "the program is nested too deeply to analyze") from None


async def run(
    source: str,
    *,
    ctx: Mapping[str, Any] | None = None,
    tools: Mapping[str, Tool] | None = None,
    tool_names: Collection[str] | None = None,
    memory: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
    call: ToolRouter | None = None,
    replay: Sequence[ToolCallRecord] | None = None,
    resume: bool = False,
    functions: Sequence[str] = (),
    converted: dict[str, tuple[Any, Any]] | None = None,
    untimed_tools: Collection[str] = (),
    on_print: Callable[[str], None] | None = None,
) -> LispResult:
    """Run one PTC-Lisp program.

    Blocks (awaits) while the program's tool calls run. Program errors never raise: they are
    returned in ``LispResult.error``; only misuse of this function raises.

    Args:
        source: the program text (use :func:`extract_code` on a model's raw response first).
        ctx: read-only input, plain Python data with string keys, read as ``ctx/key``.
        tools: name -> async callable taking one ``dict`` of string keys.
        tool_names: names to accept in the static check (default: the keys of ``tools``).
        memory: the ``memory`` of the previous turn's result.
        limits: the run's limits (default ``Limits()``).
        call: routes every tool call instead of ``tools``: ``await call(name, args,
            index)`` (see :data:`ToolRouter`); give the callable names as ``tool_names``.
        replay: the ``tool_calls`` of an earlier run of the same program: each call is
            answered from the record with the same ``index``, and no tool runs.
        resume: with ``replay``, perform the calls the record lacks (through ``call`` or
            ``tools``) instead of raising: a worker resuming a program it ran in part.
        functions: source texts of definitions kept from earlier runs (``(defn f ...)``,
            see :func:`ptcflow.lisp.kept_functions`), evaluated before the program in the
            same memory.
        converted: ctx conversions shared by several runs over the same data (the turns
            of an agent): ``{key: (ctx value, converted value)}``. A value the program reads
            is used from here when ``ctx[key]`` is the very object recorded (identity, so
            a changed value is converted again), and each value this run converts is
            added. Pass the same dict (initially empty) to every run.
        untimed_tools: tools whose calls bound themselves (agents used as tools): while
            the program waits on calls of these only, its time limit is paused, so an
            orchestrator waiting seconds for its agents is not cut by ``timeout_ms``.
            Waiting on any other tool counts (a hanging tool still ends the program).
        on_print: called with each chunk of output (``println`` and friends) as the
            program prints it, from the program's own code (so it must not block): a
            host streams the output while the program runs. The chunks are also in
            ``LispResult.prints``.

    Returns:
        A :class:`LispResult`.

    Raises:
        UsageError: ``ctx`` or ``memory`` hold values that are not plain data, or a text
            of ``functions`` does not read.
        ReplayMismatch: with ``replay``, the program asked for a call the record does not
            hold (another name or other arguments at that index, or an index it lacks).

    Example:
        >>> async def add(args):
        ...     return args["a"] + args["b"]
        >>> import functools
        >>> r = anyio.run(functools.partial(run, '(return (call "add" {:a 1 :b 2}))',
        ...                                 tools={"add": add}))
        >>> r.value, r.returned
        (3, True)
    """
    limits = Limits() if limits is None else limits
    tools = {} if tools is None else tools
    names = frozenset(tools) if tool_names is None else frozenset(tool_names) | frozenset(tools)
    ctx_in = {str(k): v for k, v in (ctx or {}).items()}
    try:
        mem_in = {str(k): from_python(v, keywordize_keys=False) for k, v in (memory or {}).items()}
    except TypeError as exc:
        raise UsageError(f"run(ctx=..., memory=...) must be plain data: {exc}") from None
    budget = Budget(limits)
    budget.on_print = on_print
    working = dict(mem_in)
    records: list[ToolCallRecord] = []
    prelude = _read_functions(functions)
    forms: list[tuple[Form, ...]] = []  # the source's, once read

    def finish(**kw: Any) -> LispResult:
        committed = kw.pop("commit", False)
        records.sort(key=_INDEX)
        return LispResult(
            prints=list(budget.prints),
            memory=working if committed else dict(mem_in),
            tool_calls=records,
            forms=forms[0] if forms else (),
            **kw,
        )

    try:
        budget.check_source(source)
    except LispError as err:
        _check_ctx(ctx_in, ())
        return finish(error=err)
    state = RunState(budget, ctx_in, working, names, converted)
    budget.maybe_yield = state.yield_now
    analyzed: list[Program] = []

    def front_end() -> tuple[Callable[[list[Any]], Any], int]:
        # Read, analyze and compile in the program's greenlet: charged to its steps and
        # deadline, and yielding to the event loop on a long program.
        forms.append(read(source, budget))
        text = prelude + forms[0]
        program = _analyze(text, names, ctx_in, mem_in, None, budget)
        analyzed.append(program)
        _check_ctx(ctx_in, program.ctx_used)
        return Compiler(state, {}).compile(program.body), program.nslots

    def progress() -> None:
        budget.check_time()
        state.yield_now()

    def main() -> tuple[dict[str, Any], Any]:
        # Runs in the program's greenlet, conversion included, so a large value still
        # yields to the event loop and respects the deadline.
        budget.activate()  # walks without a budget argument (hashing, =) charge this one
        entry, nslots = front_end()
        outcome: dict[str, Any]
        try:
            raw = entry([None] * nslots)
            outcome = {"commit": True}
        except ReturnSignal as sig:
            raw, outcome = sig.value, {"returned": True, "commit": True}
        except FailSignal as sig:
            raw, outcome = sig.value, {"failed": True}
        if isinstance(raw, LispFn | Builtin):
            from ptcflow.lisp.printer import pr_str

            plain = pr_str(raw, limit=200)
        else:
            plain = export(
                raw,
                limits.max_collection_size,
                keep_keywords=True,
                what="the program's value",
                progress=progress,
            )
        if outcome.get("failed"):
            outcome["fail_value"] = plain
        return outcome, plain

    await anyio.lowlevel.checkpoint()  # every run lets the loop turn, even a short one
    g = greenlet(main)
    driver = Driver(tools, records, call, replay, resume)
    remaining = max(0.0, budget.deadline - time.monotonic())
    done: tuple[dict[str, Any], Any] | None = None
    try:
        with anyio.move_on_after(remaining if math.isfinite(remaining) else None) as scope:
            clock = None
            if untimed_tools and math.isfinite(budget.deadline):
                clock = WaitClock(budget, scope, frozenset(untimed_tools))
            done = await _drive(g, driver, clock)
    except LispError as err:
        if not analyzed:  # the program did not read or check: still refuse a bad ctx
            _check_ctx(ctx_in, ())
        return finish(error=err)
    except (UsageError, ProgramSuspended):  # misuse (ReplayMismatch), or waiting: the caller's
        raise
    except RecursionError:
        return finish(error=LimitExceeded("max_depth", "the program nests calls too deeply"))
    except MemoryError:
        return finish(error=LimitExceeded("max_memory_bytes", "the program used too much memory"))
    except Exception as exc:  # a Python error no call site converted: never reach the host
        return finish(error=_unexpected(exc))
    if done is None:
        return finish(
            error=LispError(
                "timeout",
                f"the program ran longer than {limits.timeout_ms} ms (waiting on tools "
                "included); do less per turn",
            )
        )
    outcome, plain = done
    return finish(value=plain, **outcome)


def _read_functions(functions: Sequence[str]) -> tuple[Form, ...]:
    """The forms of the kept definitions (read before the program, in order)."""
    forms: list[Form] = []
    for i, text in enumerate(functions):
        try:
            forms.extend(read(text))
        except LispError as err:
            raise UsageError(
                f"run(functions=...): item {i} is not PTC-Lisp ({err}); pass the texts "
                "kept_functions() returned"
            ) from None
    return tuple(forms)


def _check_ctx(ctx: Mapping[str, Any], used: Collection[str]) -> None:
    """:func:`_check_unread`, as the ``UsageError`` that misuse of :func:`run` raises."""
    try:
        _check_unread(ctx, used)
    except TypeError as exc:
        raise UsageError(f"run(ctx=..., memory=...) must be plain data: {exc}") from None


def _check_unread(ctx: Mapping[str, Any], used: Collection[str]) -> None:
    """Check the ctx values a program never reads are plain data (``TypeError`` otherwise).

    The values it reads are converted in the program's greenlet on first read
    (``RunState.ctx_value``): charged to its budget, and yielding on large data. The others
    cost a walk, not a copy.
    """
    for k, v in ctx.items():
        if k not in used:
            check_plain(v)


def _unexpected(exc: Exception) -> LispError:
    """A Python exception that escaped every call site (a ptcflow bug, reported as data)."""
    return LispError(
        "type",
        f"the program failed unexpectedly ({type(exc).__name__}: {exc}); try a simpler expression",
    )


async def _drive(g: greenlet, driver: Driver, clock: WaitClock | None) -> Any:
    request = g.switch()
    while not g.dead:
        paused = None if clock is None else clock.pause(request)
        try:
            answer = await driver.answer(request)
        except BaseException:
            if not g.dead:
                g.throw(GreenletExit)
            raise
        if paused is not None and clock is not None:
            clock.resume(paused)
        if driver.suspended:  # calls wait for a person: stop here, resume from the record
            g.throw(GreenletExit)
            raise ProgramSuspended(tuple(sorted(driver.suspended)), tuple(driver.records))
        request = g.switch(answer)
    return request


def run_sync(source: str, **kwargs: Any) -> LispResult:
    """Run a program from synchronous code (starts an event loop; takes :func:`run`'s
    arguments).

    Example:
        >>> run_sync("(+ 1 2)").value
        3
    """
    results: list[LispResult] = []

    async def main() -> None:
        # The result is not the main task's own: on asyncio, anyio.run ends by printing
        # the task (Python 3.11's runner, through signal.getsignal), and a value that
        # shares structure ([v v] doubled 60 times) has a repr that never ends.
        results.append(await run(source, **kwargs))

    anyio.run(main)
    return results[0]
