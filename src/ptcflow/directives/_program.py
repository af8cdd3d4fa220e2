"""``RunProgram``: the directive to run one PTC-Lisp program, as plain data.

The directive carries everything the program's run depends on: the source, the ``ctx``
values, the memory and functions kept from earlier turns, the callable tools and the
limits. Its terminal signal is ``ai.program.result`` carrying ``Ok(ProgramOutput)`` (the
program ran, maybe into a program error the model must fix) or ``Err`` (cancelled, the
directive's deadline, an internal crash).

Running it is the program host's work (:mod:`ptcflow.program`, ``perform_program``); a
runtime performs the directive by passing its own sub-call function as the tool router.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ptcflow.directives._base import Directive

__all__ = ("RunProgram",)


class RunProgram(Directive, frozen=True, kw_only=True, tag="run_program"):
    """Run one PTC-Lisp program. Signal: ``ai.program.result`` (terminal).

    Its tool calls are sub-calls of the directive: each goes through the runtime's tool
    machinery and publishes ``ai.tool.started`` / ``ai.tool.result`` with ``call_id``
    ``f"{id}/tool/{index}"`` and ``causation_id`` ``id``.

    Attributes:
        source: the program text (one program, already extracted from the response).
        ctx: the values read as ``ctx/key``: plain JSON data with string keys (the run's
            context, earlier results merged in, and ``fail`` after a failed turn).
        memory: values kept from earlier turns, ``{name: PTC-Lisp text}`` (as
            ``ProgramOutput.memory`` returned them).
        functions: functions kept from earlier turns, ``{name: source of its defn}``,
            evaluated before the program.
        tool_names: the tools the program may call (``return`` and ``fail`` are part of
            the language and not listed); any other name is an ``unknown_tool`` error
            found before anything runs.
        limits: overrides of :class:`ptcflow.lisp.Limits` fields, for example
            ``{"timeout_ms": 2000, "max_tool_calls": 10}``. Reaching one is a program
            error (``Ok`` with ``error``), not a failure of the directive.
        memory_limit_bytes: the most memory the output may keep (its ``memory_bytes``);
            a value whose text alone passes it is not written out: the output keeps the
            memory it was given and reports ``memory_bytes`` over the limit. ``None``: a
            value whose text passes 1,000,000 characters is dropped with the reason.
        return_signature: the signature whose output the value of ``(return v)`` must
            match (the agent's), or ``None``: any value.
        return_validation: the mode in which the strategy checks a returned value against
            ``return_signature`` (``enabled``, ``strict``, ``warn_only``, ``disabled``), or
            ``None``: not known. When it is set, a program whose ``return`` the strategy
            will accept (the run ends with it: :func:`ptcflow.signature.validate_return`
            answers for both) does not write its memory: the output keeps the memory and
            functions it was given, and ``memory_limit_bytes`` does not apply to it.
            ``None`` (also a directive from an older journal): the memory is written
            after every program that succeeds.
        stream: publish the program's output as it is printed (``ai.program.print``,
            one signal per ``println`` / ``print`` / ``prn``, before its
            ``ai.program.result``); ``False``: the output is in the result only.
    """

    source: str
    ctx: dict[str, Any] = msgspec.field(default_factory=dict)
    memory: dict[str, str] = msgspec.field(default_factory=dict)
    functions: dict[str, str] = msgspec.field(default_factory=dict)
    tool_names: tuple[str, ...] = ()
    limits: dict[str, Any] = msgspec.field(default_factory=dict)
    memory_limit_bytes: int | None = None
    return_signature: str | None = None
    return_validation: str | None = None
    stream: bool = False

    def problems(self) -> list[str]:
        """Also checks the source, the limit names, the return signature and its mode.

        The last three are the vocabularies of the leaves below this package (the limits of
        :mod:`ptcflow.lisp`, the signature language and its validation modes of
        :mod:`ptcflow.signature`): they are asked, only for the fields that are set.
        """
        out = Directive.problems(self)  # by class, not super(): cheaper, once per directive
        if not self.source.strip():
            out.append("source must be a non-empty program")
        if self.memory_limit_bytes is not None and self.memory_limit_bytes < 1:
            out.append(f"memory_limit_bytes must be >= 1 or None, got {self.memory_limit_bytes}")
        mode, text = self.return_validation, self.return_signature
        if mode is not None or text is not None:
            from ptcflow.signature import MODES, SignatureError, parse

            if mode is not None and mode.lstrip(":") not in MODES:
                out.append(
                    f"return_validation must be one of {sorted(MODES)} or None, got {mode!r}"
                )
            if text is not None:
                try:
                    parse(text)
                except SignatureError as exc:
                    out.append(f"return_signature does not parse: {exc}")
        if self.limits:
            from ptcflow.lisp import Limits

            known = set(Limits.__struct_fields__)
            unknown = sorted(set(self.limits) - known)
            if unknown:
                out.append(f"limits has unknown fields {unknown}; known: {sorted(known)}")
        return out
