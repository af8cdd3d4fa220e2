"""Turn feedback: what the model reads after each program.

One user message per turn, bounded by :class:`PromptLimit` whatever the program produced:
"Turn N of M" (and a warning before the last turn), the error with its line, column and
the offending source line, or the value (a preview), what it printed and a summary of its
tool calls. Values are never re-sent in full, so the conversation grows by at most a
bounded amount per turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from ptcflow.errors import ConfigError
from ptcflow.signals import Err, Ok, ProgramError, ProgramOutput, ProgramToolCall
from ptcflow.strategies._subagent import call_warnings, header
from ptcflow.strategies.ptc._preview import preview

__all__ = ("PromptLimit", "feedback")


class PromptLimit(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """How much of the data the model sees (the spec's ``prompt_limit``).

    Args:
        value_chars: the longest preview of a program's value.
        print_chars: the most printed output shown per turn.
        tool_result_chars: the longest preview of one tool result in the turn summary.
        tool_calls_shown: the most tool calls listed per turn (the rest are counted).
        sample_chars: the longest sample of a ``ctx/`` value in the data inventory.

    Raises:
        ConfigError: a value is not a positive integer.

    Example:
        >>> PromptLimit(value_chars=200).print_chars
        500
    """

    value_chars: int = 500
    print_chars: int = 500
    tool_result_chars: int = 150
    tool_calls_shown: int = 8
    sample_chars: int = 120

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"PromptLimit.{name} must be a positive integer, got {value!r}")


def feedback(
    *,
    next_turn: int,
    max_turns: int,
    source: str | None,
    output: ProgramOutput | None,
    problem: ProgramError | None,
    limits: PromptLimit,
    tool_inputs: Mapping[str, str] | None = None,
) -> str:
    """The user message that opens turn ``next_turn``.

    Args:
        next_turn: the turn about to start (2 after the first program).
        max_turns: the turn budget.
        source: the program of the turn that ended (for the error's source line).
        output: what the program did, if it ran.
        problem: the error or the problem to fix, if any.
        limits: the prompt limits.
        tool_inputs: the tools' coercible arguments (see ``coercible_inputs``): the
            coercions of the turn's calls are listed as "Tool validation warnings".
    """
    parts = [header(next_turn, max_turns)]
    if output is not None and output.tool_calls:
        parts.append(_tool_summary(output.tool_calls, limits))
        if tool_inputs:
            notes = [
                f"- {call.name}: {warning}"
                for call in output.tool_calls[: limits.tool_calls_shown]
                if isinstance(call.result, Ok)
                for warning in call_warnings(tool_inputs, call.name, call.args)
            ]
            if notes:
                parts.append("Tool validation warnings:\n" + "\n".join(notes))
    if output is not None and output.prints:
        text = "".join(output.prints)
        shown = text[: limits.print_chars]
        more = f"\n[... {len(text) - len(shown)} more characters]" if len(text) > len(shown) else ""
        parts.append("Printed:\n" + shown.rstrip("\n") + more)
    if problem is not None:
        parts.append(_problem(problem, source))
    elif output is not None:
        shown, cut = preview(output.value, limits.value_chars)
        note = " (truncated: print or return only the fields you need)" if cut else ""
        parts.append(f"Value of your program:{note}\n{shown}")
        parts.append(
            "The task is not finished: continue, and call (return value) with the answer "
            "when you have it."
        )
    if output is not None and output.dropped:
        parts.append(
            "Not kept for the next turn:\n" + "\n".join(f"- {w}" for w in output.dropped.values())
        )
    return "\n\n".join(parts)


def _problem(problem: ProgramError, source: str | None) -> str:
    if problem.category == "validation":
        return "Your (return ...) was not accepted: " + problem.message
    if problem.category == "fail":
        return "Your (fail ...) was not accepted: " + problem.message
    if problem.category == "no_code":
        return problem.message
    text = "Your program failed: " + problem.describe()
    excerpt = _excerpt(source, problem.line, problem.column)
    if excerpt:
        text += "\n" + excerpt
    return text + "\nFix the program and send it again (this error is also ctx/fail)."


def _excerpt(source: str | None, line: int | None, column: int | None) -> str:
    if not source or line is None:
        return ""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1]
    if len(text) > 160:
        return ""
    prefix = f"{line} | "
    caret = " " * (len(prefix) + max(0, (column or 1) - 1)) + "^"
    return f"{prefix}{text}\n{caret}"


def _tool_summary(calls: Sequence[ProgramToolCall], limits: PromptLimit) -> str:
    lines = [f"Tool calls ({len(calls)}):"]
    for call in calls[: limits.tool_calls_shown]:
        args, _ = preview(call.args, 80)
        result = call.result
        if isinstance(result, Err):
            got = f"error {result.error.type}: {result.error.message}"[: limits.tool_result_chars]
        else:
            body, _ = preview(result.payload, limits.tool_result_chars)
            count = f"{len(result.payload)} items: " if isinstance(result.payload, list) else ""
            got = count + body
        lines.append(f"- {call.name} {args} -> {got}")
    hidden = len(calls) - limits.tool_calls_shown
    if hidden > 0:
        lines.append(f"- ... and {hidden} more")
    return "\n".join(lines)
