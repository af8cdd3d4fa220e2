"""What running one PTC-Lisp program produced: the payload of ``ai.program.result``.

A program's run is a function of its source, its ``ctx``, the memory and functions kept
from earlier turns, and the results of its tool calls. :class:`ProgramOutput` records all
of the last part (every call with its index, arguments and ``Ok``/``Err`` result), so the
program can be re-run from the record without calling any tool, and the journal replays a
SubAgent run without running anything.

Everything here is plain JSON data and round-trips through the journal unchanged:

* program values (``value``, ``fail_value``, tool arguments) are converted at the boundary:
  keywords become their names (``:pending`` -> ``"pending"``), vectors and sets become
  lists, map keys become strings (``{1 :a}`` -> ``{"1": "a"}``), non-finite floats become
  the strings ``"##Inf"``, ``"##-Inf"`` and ``"##NaN"``;
* the memory kept for later turns is stored as PTC-Lisp text (``pr-str``) per name, so
  keywords, sets and nested maps come back exactly (``{:status :done}`` stays a keyword);
* functions kept for later turns are the source text of their top-level ``defn``.

A program that ran and failed (syntax, unbound name, tool error, limit, its own timeout)
is an ``Ok(ProgramOutput)`` whose :attr:`ProgramOutput.error` says what and where: the
model reads it and fixes the program on its next turn. ``Err`` is kept for the
infrastructure: cancelled, the directive's deadline, an internal crash.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.signals._envelope import Err, Ok

__all__ = (
    "ProgramError",
    "ProgramMemory",
    "ProgramOutput",
    "ProgramResultData",
    "ProgramToolCall",
)


class ProgramMemory(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """What a SubAgent's PTC-Lisp programs kept, carried from one run of a conversation to
    the next (``Step.memory``, stored with a session's turn): data, never Python objects.

    Attributes:
        values: each ``def``'d name with its value as PTC-Lisp text (``pr-str``), so
            keywords, sets and nested maps come back exactly.
        functions: each ``defn``'d name with the source text of its ``defn``.

    Its size is bounded by the agent's ``memory_limit_bytes``: a program keeping more
    fails the run (``memory_limit``), and a failed run's memory is never stored.

    Example:
        >>> ProgramMemory(values={"total": "42"}).size
        7
    """

    values: dict[str, str] = {}
    functions: dict[str, str] = {}

    @property
    def size(self) -> int:
        """Bytes of its names and texts (what ``memory_limit_bytes`` bounds)."""
        size = sum(len(k) + len(v.encode()) for k, v in self.values.items())
        return size + sum(len(k) + len(v.encode()) for k, v in self.functions.items())


class ProgramError(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """Why a program stopped with an error, as the model will read it.

    Attributes:
        category: the PTC-Lisp error category: ``parse``, ``analysis``, ``unbound``,
            ``arity``, ``type``, ``arithmetic``, ``destructure``, ``unknown_tool``,
            ``tool_error``, ``limit`` or ``timeout``.
        message: what went wrong and how to fix it (written for the model).
        line: 1-based line of the innermost form, when known.
        column: 1-based column, when known.
        limit: for ``limit`` errors, the name of the exceeded limit (``max_steps``...).
    """

    category: str
    message: str
    line: int | None = None
    column: int | None = None
    limit: str | None = None

    def describe(self) -> str:
        """One line: ``type error at line 2, column 5: + expects numbers, got ...``."""
        where = ""
        if self.line is not None:
            where = f" at line {self.line}"
            if self.column is not None:
                where += f", column {self.column}"
        kind = self.category if self.category.endswith("error") else f"{self.category} error"
        return f"{kind}{where}: {self.message}"


class ProgramToolCall(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One tool call a program made.

    Attributes:
        index: the call's position in issue order (0, 1, ...): deterministic for a given
            program and tool results, also under ``pmap``/``pcalls`` (the program numbers
            its calls before any of them runs). Sub-call signals of the program directive
            carry ``call_id`` ``f"{directive.id}/tool/{index}"``.
        name: the tool.
        args: the arguments as plain JSON data (string keys).
        result: ``Ok(payload)`` with the tool's result as plain data, or ``Err(error)``
            with its :class:`~ptcflow.signals.ErrorEnvelope`.
        duration_ms: how long the call took (``0`` when answered from a record).
    """

    index: int
    name: str
    args: dict[str, Any] = {}
    result: Ok[Any] | Err = Ok(payload=None)
    duration_ms: float = 0.0


class ProgramOutput(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What one program run produced (the ``Ok`` payload of ``ai.program.result``).

    Attributes:
        value: the value of ``(return v)`` or of the last form, as plain data (see the
            module docstring for the conversion).
        returned: the program ended with ``return``.
        failed: the program ended with ``fail``.
        fail_value: the value given to ``fail``, as plain data.
        prints: what ``println`` and friends printed (capped by the program's limits).
        error: the error that ended the program, or ``None``.
        tool_calls: every tool call, in issue order (``index`` 0, 1, ...).
        memory: the memory after the run, ``{name: PTC-Lisp text}``; unchanged from the
            directive's when the run failed (memory is transactional), and when its
            ``return`` ends the agent's run (see ``RunProgram.return_validation``).
        functions: the functions kept for later turns after the run, ``{name: source of
            its top-level defn}``.
        dropped: names the program defined that cannot be kept for later turns, with
            why (a function defined inside ``let``, a function stored in a collection...);
            the model is told.
        memory_bytes: the size of ``memory`` plus ``functions`` in UTF-8 bytes (what the
            SubAgent's memory limit measures).
        duration_ms: how long the run took, tool calls included.
        return_ends_run: the host checked the value of ``return`` as the strategy does
            (the directive's ``return_signature`` in its ``return_validation`` mode,
            :func:`ptcflow.signature.validate_return`) and it matches: the run ends with
            it, its memory was not written, and a SubAgent strategy ends the run without
            checking the value again. ``False``: it does not match, or nothing checked it
            (no ``return_validation``; an output from an older journal).
        return_warnings: that check's warnings (``warn_only``).
    """

    value: Any = None
    returned: bool = False
    failed: bool = False
    fail_value: Any = None
    prints: tuple[str, ...] = ()
    error: ProgramError | None = None
    tool_calls: tuple[ProgramToolCall, ...] = ()
    memory: dict[str, str] = {}
    functions: dict[str, str] = {}
    dropped: dict[str, str] = {}
    memory_bytes: int = 0
    duration_ms: float = 0.0
    return_ends_run: bool = False
    return_warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the program neither raised an error nor called ``fail``."""
        return self.error is None and not self.failed


class ProgramResultData(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """``ai.program.result``: the terminal signal of a ``RunProgram`` directive.

    Attributes:
        result: ``Ok(ProgramOutput)`` when the program ran (whether or not it hit a program
            error), ``Err(error)`` for the infrastructure (``cancelled``, ``timeout`` of
            the directive's deadline, ``internal``).
        attempts: how many attempts the directive took.
        duration_ms: wall time of the directive.
    """

    result: Ok[ProgramOutput] | Err
    attempts: int = 1
    duration_ms: float = 0.0
