"""Limits on one PTC-Lisp run, and the per-run :class:`Budget` that enforces them.

:class:`Limits` is frozen configuration, validated when built. The runner creates one
:class:`Budget` per run; the compiled program calls :meth:`Budget.step` as it evaluates and
builtins call :meth:`Budget.check_size` / :meth:`Budget.check_string` for results whose size
depends on their input, so a runaway program ends with a :class:`LimitExceeded` that names the
limit, never with a hang or an exhausted host.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final

import msgspec

from ptcflow.errors import ConfigError
from ptcflow.lisp.errors import LimitExceeded, LispError

__all__ = ("Budget", "Limits", "active_budget")


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on one program run. All values must be positive.

    Args:
        timeout_ms: wall-clock time for the whole run, tool calls included.
        max_steps: evaluation steps (roughly: calls and loop iterations).
        max_depth: nesting depth of function calls (recursion).
        max_loop_iterations: iterations of one ``loop``/``recur``.
        max_collection_size: elements in one collection a builtin builds.
        max_string_length: characters in one string a builtin builds.
        max_memory_bytes: an estimate of the memory the program's values take.
        max_tool_calls: tool calls per run.
        max_output_chars: characters of captured ``println``/``print``/``prn`` output.
        max_regex_input: characters of input one regex builtin may scan.
        max_pmap_concurrency: tool calls ``pmap``/``pcalls`` run at once.
        yield_interval_ms: CPU time between yields to the event loop.
        max_source_chars: characters of program text (checked before it is read). Models
            write a few thousand; the objects a long program's front end builds are what
            the garbage collector's pauses grow with (48,000 characters of dense code,
            next to other programs: 43-60 ms collections, the loop held 105-177 ms; at
            19,000 no collection over 40 ms).

    Raises:
        ConfigError: a value is not a positive integer.

    Example:
        >>> Limits(max_steps=1000).max_steps
        1000
    """

    timeout_ms: int = 5000
    max_steps: int = 1_000_000
    max_depth: int = 200
    max_loop_iterations: int = 100_000
    max_collection_size: int = 100_000
    max_string_length: int = 1_000_000
    max_memory_bytes: int = 50_000_000
    max_tool_calls: int = 50
    max_output_chars: int = 20_000
    max_regex_input: int = 100_000
    max_pmap_concurrency: int = 8
    yield_interval_ms: int = 10
    max_source_chars: int = 20_000

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise ConfigError(
                    f"Limits.{name} must be a positive integer, got {value!r}; "
                    f"the default is Limits({name}={_DEFAULTS.get(name, 1)!r})"
                )


_DEFAULTS: dict[str, Any] = {}
_DEFAULTS.update(msgspec.structs.asdict(Limits()))

_CLOCK_EVERY = 1024  # steps between clock checks
_WORK_SHIFT = 4  # copying 2**4 elements takes about as long as one evaluation step
_ELEMENT_BYTES = 16  # estimated bytes per collection element (pointer + share of the object)


def _no_yield() -> None:
    return None


_ACTIVE: Final[ContextVar[Budget | None]] = ContextVar("ptcflow_lisp_budget", default=None)


def active_budget() -> Budget | None:
    """The budget of the program running in this greenlet, ``None`` outside a run.

    Walks that no builtin argument carries a budget into (hashing a map key, ``=`` on
    nested values, comparing vectors) charge it, so a value that shares structure cannot
    make one step run for minutes.

    Example:
        >>> active_budget() is None
        True
    """
    return _ACTIVE.get()


class Budget:
    """The mutable counters of one run; created by the runner as ``Budget(limits)``.

    Args:
        limits: the run's limits.
        clock: a monotonic clock in seconds (tests pass a fake one).

    Attributes:
        steps: evaluation steps taken so far.
        allocated: estimated bytes allocated by builtins so far (cumulative, a conservative
            estimate checked against ``max_memory_bytes``).
        tool_calls: tool calls made so far (the runner counts them).
        prints: captured output chunks of ``println``/``print``/``prn``.
        output_chars: characters captured so far.
        output_truncated: output went past ``max_output_chars`` and was cut.
        deadline: the clock time at which the run times out.
        maybe_yield: a hook the runner sets; called about every ``yield_interval_ms`` of
            evaluation to let the event loop run (default: does nothing).
        on_print: called with each chunk of output as it is captured (``run(on_print=)``),
            or ``None``.
    """

    __slots__ = (
        "_clock",
        "_next_check",
        "_next_yield",
        "_yield_every",
        "allocated",
        "deadline",
        "limits",
        "maybe_yield",
        "on_print",
        "output_chars",
        "output_truncated",
        "prints",
        "steps",
        "tool_calls",
    )

    def __init__(self, limits: Limits, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        now = clock()
        self.deadline: float = now + limits.timeout_ms / 1000
        self._yield_every = limits.yield_interval_ms / 1000
        self._next_yield = now  # the first clock check yields: every long program lets others run
        self._next_check = min(_CLOCK_EVERY, limits.max_steps + 1)
        self.steps = 0
        self.allocated = 0
        self.tool_calls = 0
        self.prints: list[str] = []
        self.output_chars = 0
        self.output_truncated = False
        self.maybe_yield: Callable[[], None] = _no_yield
        self.on_print: Callable[[str], None] | None = None

    def activate(self) -> None:
        """Make this the :func:`active_budget` of the calling greenlet (the runner calls it
        first thing in the program's greenlet and in each ``pmap`` greenlet)."""
        _ACTIVE.set(self)

    def step(self, n: int = 1) -> None:
        """Count ``n`` evaluation steps; check the clock every 1024 steps.

        Raises:
            LimitExceeded: past ``max_steps``.
            LispError: past the wall-clock deadline (category ``"timeout"``).
        """
        steps = self.steps + n
        self.steps = steps
        if steps >= self._next_check:
            self._slow_step()

    def _slow_step(self) -> None:
        self._next_check = min(self.steps + _CLOCK_EVERY, self.limits.max_steps + 1)
        if self.steps > self.limits.max_steps:
            raise LimitExceeded(
                "max_steps",
                f"the program took more than {self.limits.max_steps} evaluation steps "
                "(calls, loop iterations, and elements visited by builtins that print, "
                "compare or hash values); process less data per turn, or avoid unbounded "
                "loops and recursion",
            )
        self.check_time()
        now = self._clock()
        if now >= self._next_yield:
            self._next_yield = now + self._yield_every
            self.maybe_yield()

    def work(self, n: int) -> None:
        """Count work that is not an evaluation step: copying ``n`` elements (a set that
        ``conj`` copies whole, a string being concatenated). It brings the next clock check
        (and yield to the event loop) nearer, about one step per 16 elements, without counting
        towards ``max_steps``: quadratic building, like ``(reduce conj #{} xs)``, is bounded
        by the time limit and keeps the loop turning, while the same program on a few
        thousand elements still runs.

        Raises:
            LispError: past the wall-clock deadline (category ``"timeout"``).
        """
        nxt = self._next_check - (n >> _WORK_SHIFT)
        self._next_check = nxt
        if self.steps >= nxt:
            self._slow_step()

    def poll(self) -> None:
        """Check the clock now (and yield when due), for a builtin in the middle of a long
        piece of work whose steps were charged before it started; call it every thousand
        elements or so.

        Raises:
            LispError: past the wall-clock deadline (category ``"timeout"``).
        """
        self._slow_step()

    def check_time(self) -> None:
        """Raise a ``timeout`` error when the wall-clock deadline has passed."""
        if self._clock() >= self.deadline:
            raise LispError(
                "timeout",
                f"the program ran longer than {self.limits.timeout_ms} ms; do less work per "
                "turn (filter early, avoid nested loops over large data)",
            )

    def check_size(self, n: int, what: str = "collection") -> None:
        """Refuse a collection of ``n`` elements when it exceeds ``max_collection_size``.

        Also counts ``n`` elements (about 16 bytes each) towards ``max_memory_bytes``, and
        as ``n`` steps (building them is work).

        Args:
            n: the number of elements about to be built.
            what: what is being built, for the message (``"range"``, ``"concat"``).

        Raises:
            LimitExceeded: ``n`` is over ``max_collection_size``, or the run has built more
                than ``max_memory_bytes`` of data.
        """
        if n > self.limits.max_collection_size:
            raise LimitExceeded(
                "max_collection_size",
                f"{what} would build {n} elements, over the limit of "
                f"{self.limits.max_collection_size}; work on a smaller slice (take, filter)",
            )
        self.charge(n * _ELEMENT_BYTES, what)
        self.step(n)

    def check_grow(self, total: int, added: int, what: str = "collection") -> None:
        """Like :meth:`check_size` for a collection that extends an existing one (``conj``,
        ``assoc``, ``into``): ``total`` is checked against ``max_collection_size`` but only the
        ``added`` elements count towards ``max_memory_bytes`` (the old collection is usually
        garbage afterwards, so ``(reduce conj [] xs)`` is not charged quadratically); the
        ``added`` elements count as steps.

        Raises:
            LimitExceeded: ``total`` is over ``max_collection_size`` or the memory estimate
                is over ``max_memory_bytes``.
        """
        if total > self.limits.max_collection_size:
            raise LimitExceeded(
                "max_collection_size",
                f"{what} would build {total} elements, over the limit of "
                f"{self.limits.max_collection_size}; work on a smaller slice (take, filter)",
            )
        self.charge(added * _ELEMENT_BYTES, what)
        self.step(added)

    def charge(self, n_bytes: int, what: str = "data") -> None:
        """Count ``n_bytes`` of newly built data towards ``max_memory_bytes``.

        Raises:
            LimitExceeded: the run has built more than ``max_memory_bytes`` (an estimate).
        """
        allocated = self.allocated + n_bytes
        self.allocated = allocated
        if allocated > self.limits.max_memory_bytes:
            raise LimitExceeded(
                "max_memory_bytes",
                f"{what}: the program built about {allocated} bytes of data, over the limit of "
                f"{self.limits.max_memory_bytes}; build fewer or smaller collections",
            )

    def check_string(self, s: str, what: str = "string") -> str:
        """Return ``s``, or refuse it when longer than ``max_string_length``.

        Raises:
            LimitExceeded: ``s`` is over ``max_string_length``.
        """
        self.check_string_length(len(s), what)
        return s

    def check_string_length(self, n: int, what: str = "string") -> None:
        """Refuse building a string of ``n`` characters before building it.

        Raises:
            LimitExceeded: ``n`` is over ``max_string_length``.
        """
        if n > self.limits.max_string_length:
            raise LimitExceeded(
                "max_string_length",
                f"{what} would build a string of {n} characters, over the limit of "
                f"{self.limits.max_string_length}; build a shorter string",
            )
        self.charge(n, what)
        self.work(n >> 2)  # the characters are copied (in C, faster than elements)

    def check_source(self, source: str) -> None:
        """Refuse program text longer than ``max_source_chars`` before reading it.

        Raises:
            LimitExceeded: the text is too long.
        """
        if len(source) > self.limits.max_source_chars:
            raise LimitExceeded(
                "max_source_chars",
                f"the program is {len(source)} characters long, over the limit of "
                f"{self.limits.max_source_chars}; send a shorter program (pass data in ctx or "
                "fetch it with a tool instead of writing it into the program)",
            )

    def check_regex_input(self, s: str, what: str) -> None:
        """Refuse scanning a string longer than ``max_regex_input`` with a regex.

        Raises:
            LimitExceeded: ``s`` is over ``max_regex_input``.
        """
        if len(s) > self.limits.max_regex_input:
            raise LimitExceeded(
                "max_regex_input",
                f"{what} was given a string of {len(s)} characters, over the regex input "
                f"limit of {self.limits.max_regex_input}; match against a shorter slice (subs)",
            )

    def print_(self, text: str) -> None:
        """Capture program output (``println`` and friends), capped at ``max_output_chars``.

        Output past the cap is dropped and a single ``...[output truncated]`` marker is kept:
        printing too much is not an error, it only loses the excess.
        """
        if self.output_truncated:
            return
        room = self.limits.max_output_chars - self.output_chars
        if len(text) > room:
            text = text[:room] + "...[output truncated]"
            self.output_chars = self.limits.max_output_chars
            self.output_truncated = True
        else:
            self.output_chars += len(text)
        self.prints.append(text)
        if self.on_print is not None:
            self.on_print(text)

    @property
    def output(self) -> str:
        """All captured output as one string."""
        return "".join(self.prints)

    def __repr__(self) -> str:
        return (
            f"Budget(steps={self.steps}, tool_calls={self.tool_calls}, "
            f"output_chars={self.output_chars}, limits={self.limits!r})"
        )
