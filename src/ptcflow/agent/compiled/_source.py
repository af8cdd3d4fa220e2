"""A compiled agent's source: what it may contain, and the reviewable file it is saved as.

A compiled program is definitions only: ``(def ...)`` and ``(defn ...)`` at the top level,
the last ``defn`` being the entry function, called with the signature's parameters in
order. It reads its input from its arguments (never ``ctx/``) and keeps no state between
inputs (no ``memory/``, no ``def`` inside a function), so running it on many inputs, alone
or in chunks, gives the same result for each.

The file format is the source itself behind a header of ``;;`` comment lines: one
``.clj`` file a reviewer reads like code, that any Clojure-aware editor highlights::

    ;; ptcflow compiled agent: review it like code; load it with CompiledAgent.load
    ;; name: scorer
    ;; signature: (report :map) -> {score :float, reason :string}
    ;; tools: lookup_threshold
    ;; compiled_at: 2026-01-05T10:00:00+00:00
    ;; llm_model: openai:gpt-4.1-mini
    ;; tokens_used: 1234
    ;; turns: 1
    ;; sha256: 5f1c...
    (defn score [report] ...)
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator
from typing import Final

from ptcflow.errors import UsageError
from ptcflow.lisp import Form, LispError, ListForm, MapForm, SetForm, Sym, VecForm, analyze, parse

__all__ = (
    "HEADER_KEYS",
    "CompiledFileError",
    "SourceProblem",
    "check_source",
    "digest",
    "read_file_text",
    "render_file",
)

_DEFS: Final = frozenset({"def", "defn"})
_FIRST_LINE: Final = (
    ";; ptcflow compiled agent: review it like code; load it with CompiledAgent.load"
)
HEADER_KEYS: Final = (
    "name",
    "description",
    "signature",
    "tools",
    "compiled_at",
    "llm_model",
    "tokens_used",
    "turns",
    "sha256",
)
"""The header lines of a saved compiled agent, in the order they are written."""


class CompiledFileError(UsageError):
    """A saved compiled agent cannot be loaded: the message names the file, the problem
    (a changed source, another signature, a tool that is missing) and the fix.

    Example:
        >>> str(CompiledFileError("scorer.clj: no ';; signature:' line"))
        "scorer.clj: no ';; signature:' line"
    """


class SourceProblem(ValueError):
    """A compiled program breaks a rule: ``reason`` is ``unreadable``, ``not_definitions``,
    ``no_function``, ``stateful`` or ``invalid_program``; the message says how to fix it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def check_source(source: str, params: int, tool_names: Collection[str]) -> str:
    """Check a compiled program and return the name of its entry function.

    Args:
        source: the program text.
        params: how many arguments the entry function takes (the signature's parameters).
        tool_names: the tools the program may call.

    Returns:
        The name of the last top-level ``defn``.

    Raises:
        SourceProblem: what is wrong and how to fix it (the caller names the source).
    """
    try:
        forms = parse(source)
    except LispError as err:
        raise SourceProblem("unreadable", f"the program does not read: {err}") from None
    entry = None
    for form in forms:
        head = _head(form)
        if head not in _DEFS:
            raise SourceProblem(
                "not_definitions",
                f"line {form.line}: a compiled program holds only definitions, (def ...) and "
                f"(defn ...); found {_show(form)} at the top level. Remove it: the entry "
                "function is called for each input",
            )
        if head == "defn" and isinstance(form, ListForm) and len(form.items) > 1:
            name = form.items[1]
            if isinstance(name, Sym):
                entry = name.name
    if entry is None:
        raise SourceProblem(
            "no_function",
            "the program defines no function: write the logic as one top-level "
            f"(defn name [{' '.join(f'arg{i + 1}' for i in range(params))}] ...)",
        )
    for form in forms:
        _check_stateless(form, top=True)
    call = f"\n({entry}{''.join(f' {i}' for i in range(params))})"
    try:
        analyze(source + call, tool_names=tool_names, ctx_keys=())
    except LispError as err:
        if err.category == "unbound" and "ctx/" in err.message:
            raise SourceProblem(
                "invalid_program",
                f"{err}; a compiled function reads its input from its arguments, not ctx/",
            ) from None
        raise SourceProblem("invalid_program", str(err)) from None
    return entry


def _check_stateless(form: Form, *, top: bool) -> None:
    """Refuse ``memory/`` and definitions inside functions (state kept between inputs).

    Raises:
        SourceProblem: reason ``stateful``.
    """
    for sub in _walk(form):
        if isinstance(sub, Sym) and sub.ns == "memory":
            raise SourceProblem(
                "stateful",
                f"line {sub.line}: {sub.name}: a compiled function keeps no state between "
                "inputs; compute the value from the arguments instead of memory/",
            )
        if sub is not form or not top:
            head = _head(sub)
            if head in _DEFS:
                raise SourceProblem(
                    "stateful",
                    f"line {sub.line}: ({head} ...) inside a function would keep state "
                    "between inputs; use let for local values, or move the definition "
                    "to the top level",
                )


def _walk(form: Form) -> Iterator[Form]:
    stack = [form]
    while stack:
        f = stack.pop()
        yield f
        if isinstance(f, ListForm | VecForm | MapForm | SetForm):
            stack.extend(f.items)


def _head(form: Form) -> str | None:
    if isinstance(form, ListForm) and form.items and isinstance(form.items[0], Sym):
        return form.items[0].name
    return None


def _show(form: Form) -> str:
    head = _head(form)
    return f"({head} ...)" if head is not None else f"a {type(form).__name__} form"


def digest(source: str) -> str:
    """The sha256 of a program's text (the header's ``sha256`` line)."""
    return hashlib.sha256(source.encode()).hexdigest()


def render_file(header: dict[str, str], source: str) -> str:
    """The text of a saved compiled agent: the header lines, then the source."""
    lines = [_FIRST_LINE]
    for key in HEADER_KEYS:
        value = header.get(key)
        if value is not None and value != "":
            lines.append(f";; {key}: {value}")
    return "\n".join(lines) + "\n" + source.rstrip("\n") + "\n"


def read_file_text(text: str, where: str) -> tuple[dict[str, str], str]:
    """Split a saved compiled agent into its header (``{key: value}``) and source.

    Raises:
        CompiledFileError: the first line is not the ptcflow header, or a header line is
            malformed or repeated.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != _FIRST_LINE:
        raise CompiledFileError(
            f"{where}: not a saved compiled agent (its first line should be {_FIRST_LINE!r}); "
            "save one with compiled.save(path)"
        )
    header: dict[str, str] = {}
    n = 1
    for n, line in enumerate(lines[1:], start=1):
        if not line.startswith(";;"):
            break
        key, sep, value = line[2:].strip().partition(":")
        key = key.strip()
        if not sep or key not in HEADER_KEYS:
            raise CompiledFileError(
                f"{where}, line {n + 1}: {line!r} is not a header line; the header holds "
                f"';; key: value' lines with the keys {', '.join(HEADER_KEYS)}"
            )
        if key in header:
            raise CompiledFileError(f"{where}, line {n + 1}: ';; {key}:' is given twice")
        header[key] = value.strip()
    else:
        n = len(lines)
    return header, "\n".join(lines[n:]).strip("\n")
