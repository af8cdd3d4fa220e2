"""``print_trace`` and ``print_chain``: a Step's turns in the spec's boxed view.

Colour is used when the output is a terminal (and ``NO_COLOR`` is not set); piped output
is plain text. Values are shown in full detail for the developer (firewalled fields
included), each cut to a readable length.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO, Final

from ptcflow.runtime import Step
from ptcflow.strategies import TurnTrace
from ptcflow.strategies.ptc import clj

__all__ = ("format_trace", "print_chain", "print_trace")

_WIDTH: Final = 60
_VALUE_CHARS: Final = 200
_CODES: Final = {"dim": "2", "bold": "1", "red": "31", "green": "32", "cyan": "36"}


class _Paint:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        if not self.on:
            return text
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m"


def _use_color(file: IO[str], color: bool | None) -> bool:
    if color is not None:
        return color
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(file, "isatty", None)
    return bool(isatty and isatty())


def print_trace(step: Step, *, file: IO[str] | None = None, color: bool | None = None) -> None:
    """Print every turn of ``step`` in boxes: prompt, program, tool calls, result, cost.

    Args:
        step: a SubAgent run's Step (run with ``trace=True``, the default).
        file: where to print (default ``sys.stdout``).
        color: force colour on or off (default: on for a terminal, unless ``NO_COLOR``).

    Example:
        >>> from ptcflow.runtime import Step
        >>> print_trace(Step(run_id="r1", ok=True, value=1))
        (no trace: run the agent with trace=True)
    """
    out = sys.stdout if file is None else file
    out.write(format_trace(step, color=_use_color(out, color)) + "\n")


def print_chain(
    steps: Sequence[Step], *, file: IO[str] | None = None, color: bool | None = None
) -> None:
    """Print the traces of a chain of Steps (``then``), each under a header.

    Example:
        >>> from ptcflow.runtime import Step
        >>> print_chain([Step(run_id="a", ok=True, value={"n": 1})], color=False)
        ══ Step 1 of 1: ok (completed), 0 turns, 0 ms ══
        (no trace: run the agent with trace=True)
    """
    out = sys.stdout if file is None else file
    paint = _Paint(_use_color(out, color))
    for i, step in enumerate(steps, 1):
        status = paint("ok", "green") if step.ok else paint("failed", "red")
        reason = step.reason or ("completed" if step.ok else "failed")
        head = (
            f"══ Step {i} of {len(steps)}: {status} ({reason}), {step.turns} turns, "
            f"{step.duration_ms:.0f} ms ══"
        )
        out.write(paint(head, "bold") + "\n")
        out.write(format_trace(step, color=paint.on) + "\n")


def format_trace(step: Step, *, color: bool = False) -> str:
    """The text :func:`print_trace` prints."""
    paint = _Paint(color)
    trace = step.trace
    if trace is None:
        return "(no trace: run the agent with trace=True)"
    lines: list[str] = []
    for turn in trace.turns:
        lines.extend(_turn(turn, paint))
    status = paint("ok", "green") if step.ok else paint("failed", "red")
    summary = f"{status}: {step.reason}"
    if step.fail is not None:
        summary += f" ({step.fail.reason}: {step.fail.message})"
    tokens = trace.total_tokens
    summary += (
        f" | {len(trace.turns)} turns | {step.duration_ms:.0f}ms | "
        f"Tokens: {tokens.input} in / {tokens.output} out"
    )
    lines.append(summary)
    return "\n".join(lines)


def _turn(turn: TurnTrace, paint: _Paint) -> list[str]:
    bar = paint("│", "dim")
    title = f"┌─ Turn {turn.turn} "
    lines = [paint(title + "─" * max(4, _WIDTH - len(title)), "dim")]

    def row(text: str = "") -> None:
        lines.append(f"{bar} {text}".rstrip())

    users = [m for m in turn.prompt.messages if m.role == "user"]
    prompt = users[-1].content if users else turn.prompt.expanded_template
    row(f"{paint('Prompt:', 'bold')} {_short(prompt.replace(chr(10), ' '), 160)}")
    program = turn.program
    if program.source is not None:
        row(paint("Program:", "bold"))
        for line in program.source.splitlines():
            row(f"  {paint(line, 'cyan')}")
    else:
        row(f"{paint('Response:', 'bold')} {_short(turn.llm_response.replace(chr(10), ' '), 160)}")
    if program.ast is not None:
        row(f"{paint('AST:', 'bold')} {_short(program.ast, 160)}")
    execution = turn.execution
    if execution.tool_calls:
        row(paint("Tools:", "bold"))
        for call in execution.tool_calls:
            args, _ = clj(call.args, 120)
            row(f"  → {call.name}({args})")
            if call.error is not None:
                row(f"    ← {paint('error', 'red')} {call.error.category}: {call.error.message}")
            else:
                got, _ = clj(call.result, _VALUE_CHARS)
                row(f"    ← {got}")
            child = call.child
            if isinstance(child, Step):  # an agent used as a tool: its own turns, indented
                state = "ok" if child.ok else f"failed: {child.reason}"
                row(f"    {paint('Agent', 'bold')} {call.name} ({state}, {child.turns} turns):")
                for line in format_trace(child, color=paint.on).splitlines():
                    row(f"      {line}")
    for printed in "".join(execution.prints).splitlines()[:10]:
        row(f"{paint('Printed:', 'bold')} {_short(printed, 160)}")
    if execution.error is not None:
        err = execution.error
        where = f" at line {err.line}, column {err.column}" if err.line is not None else ""
        row(f"{paint('Error:', 'red')} {err.category}{where}: {_short(err.message, 300)}")
    elif program.source is not None or execution.result is not None:
        shown, _ = clj(execution.result, _VALUE_CHARS)
        row(f"{paint('Result:', 'bold')} {shown}")
    if execution.context_snapshot is not None:
        shown, _ = clj(execution.context_snapshot, _VALUE_CHARS)
        row(f"{paint('Context:', 'bold')} {shown}")
    row(
        f"Duration: {turn.duration_ms:.0f}ms | Tokens: {turn.tokens.input} in / "
        f"{turn.tokens.output} out"
    )
    lines.append(paint("└" + "─" * (_WIDTH - 1), "dim"))
    return lines


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
