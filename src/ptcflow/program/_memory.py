"""What the programs of one run share, and the memory a program reads and writes.

:class:`ProgramCache`, the memory's texts read into values before a program
(:func:`memory_in`) and written back after it (:func:`memory_out`), and whether a
program's ``return`` ends the run, so that its memory is not needed
(:func:`return_ends_run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptcflow.directives import RunProgram
from ptcflow.lisp import memory_from_data, memory_to_data
from ptcflow.signature import Signature, parse, validate_return

__all__ = ("ProgramCache", "memory_in", "memory_out", "return_ends_run", "return_verdict")


class ProgramCache:
    """What the programs of one run share, so that each turn does not redo the last one's work.

    A runtime keeps one per run and passes it to
    :func:`~ptcflow.program.perform_program` for every program
    of the run (program values are immutable, so sharing them is safe):

    * ``converted``: the ``ctx`` values programs converted into PTC-Lisp data,
      ``{key: (ctx value, converted)}``; a later program reading the very same object uses
      the conversion (a 10,000-row context is converted once per run, not once per turn);
    * ``memory``: each memory value with its text, ``{name: (text, value)}``: a text the
      last program wrote is not read again, and a value the program left unchanged is not
      printed again;
    * ``signatures``: the return signatures parsed, ``{text: Signature}`` (see
      :func:`return_ends_run`).

    Everything is still correct without it (or with an empty one): it only saves work.

    Example:
        >>> cache = ProgramCache()
        >>> cache.converted, cache.memory, cache.signatures
        ({}, {}, {})
    """

    __slots__ = ("converted", "memory", "signatures")

    def __init__(self) -> None:
        self.converted: dict[str, tuple[Any, Any]] = {}
        self.memory: dict[str, tuple[str, Any]] = {}
        self.signatures: dict[str, Signature] = {}

    def __repr__(self) -> str:
        return f"<ProgramCache ctx={len(self.converted)} memory={len(self.memory)}>"


def memory_in(texts: Mapping[str, str], cache: ProgramCache) -> dict[str, Any]:
    """The directive's memory as PTC-Lisp values (texts the cache holds are not read)."""
    known = cache.memory
    values: dict[str, Any] = {}
    unread: dict[str, str] = {}
    for name, text in texts.items():
        hit = known.get(name)
        if hit is not None and hit[0] == text:
            values[name] = hit[1]
        else:
            unread[name] = text
    if unread:
        read = memory_from_data(unread)
        for name, value in read.items():
            known[name] = (unread[name], value)
        values = {name: values[name] if name in values else read[name] for name in texts}
    return values


def memory_out(
    memory: Mapping[str, Any], cache: ProgramCache, limit: int | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The memory after a run as texts: a value the program did not change keeps the text
    it came in with (so a text never changes from turn to turn, cache or not), the others
    are printed. With a ``limit``, a value whose text alone passes it raises
    ``LimitExceeded`` (without a limit, such a value is dropped with the reason)."""
    known = cache.memory
    texts: dict[str, str] = {}
    unprinted: dict[str, Any] = {}
    for name, value in memory.items():
        hit = known.get(name)
        if hit is not None and hit[1] is value:
            texts[name] = hit[0]
        else:
            unprinted[name] = value
    printed: dict[str, str] = {}
    dropped: dict[str, str] = {}
    if unprinted and limit is None:
        printed, dropped = memory_to_data(unprinted)
    elif unprinted and limit is not None:
        printed, dropped = memory_to_data(unprinted, max_chars=limit, too_large="raise")
    for name, text in printed.items():
        known[name] = (text, unprinted[name])
    order = {**texts, **printed}
    return {name: order[name] for name in memory if name in order}, dropped


def return_ends_run(directive: RunProgram, value: Any, cache: ProgramCache) -> bool:
    """Whether the strategy accepts ``value`` returned by the directive's program, so that
    the run ends there and the program's memory is never read again.

    The strategy's own answer: :func:`ptcflow.signature.validate_return` of the
    directive's ``return_signature`` (parsed once per cache) in its ``return_validation``
    mode, on the same plain value the strategy receives. A directive without
    ``return_validation`` (one from an older journal, or a debug run that keeps every
    turn's memory) cannot tell: ``False``, and the memory is written as it always was.
    """
    return return_verdict(directive, value, cache) is not None


def return_verdict(
    directive: RunProgram, value: Any, cache: ProgramCache
) -> tuple[str, ...] | None:
    """:func:`return_ends_run` with the check's warnings (``warn_only``): ``None`` when
    the run does not end with ``value`` (or the directive cannot tell), else the warnings
    (empty in the other modes). The host puts them on the ``ProgramOutput``
    (``return_ends_run``, ``return_warnings``), so that the strategy ends the run without
    checking the value a second time."""
    mode = directive.return_validation
    if mode is None:
        return None
    checked = validate_return(_signature(directive, cache), value, mode)
    return tuple(checked.warnings) if checked.ok else None


def _signature(directive: RunProgram, cache: ProgramCache) -> Signature | None:
    """The directive's ``return_signature``, parsed once per cache."""
    text = directive.return_signature
    if text is None:
        return None
    sig = cache.signatures.get(text)
    if sig is None:
        sig = cache.signatures[text] = parse(text)
    return sig
