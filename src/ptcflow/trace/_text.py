"""The boxed text view of a mission (``ptcflow trace show``): ``print_trace``'s boxes per turn,
child runs nested inside the turn of the call that started them."""

from __future__ import annotations

from typing import Final

from ptcflow.strategies.ptc import clj
from ptcflow.trace._mission import Mission
from ptcflow.trace._node import Node
from ptcflow.trace._summary import AgentSummary, Prices

__all__ = ("format_mission", "format_run", "format_summary", "format_turn")

_WIDTH: Final = 60
_VALUE_CHARS: Final = 200
_CODES: Final = {"dim": "2", "bold": "1", "red": "31", "green": "32", "cyan": "36", "yellow": "33"}
_NEST: Final = "│     "


class _Paint:
    __slots__ = ("on",)

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m" if self.on else text


def _short(text: str, limit: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(value: object, limit: int = _VALUE_CHARS) -> str:
    if isinstance(value, str):
        return _short(value, limit)
    return clj(value, limit)[0]


def _ms(node: Node, mission: Mission) -> str:
    end = node.end_ms if node.end_ms is not None else mission.last_ms or node.start_ms
    return f"{max(0.0, end - node.start_ms):.0f}ms"


def format_mission(mission: Mission, *, color: bool = False, prices: Prices | None = None) -> str:
    """Every top-level run of ``mission`` in boxes (the text ``ptcflow trace show`` prints).

    Example:
        >>> format_mission(Mission())
        '(no runs in this journal)'
    """
    if not mission.roots:
        return "(no runs in this journal)"
    paint = _Paint(color)
    lines: list[str] = []
    for root in mission.roots:
        node = mission.nodes[root]
        if node.kind == "run":
            lines.extend(_run(mission, node, paint, prices))
    return "\n".join(lines)


def format_run(
    mission: Mission, run: Node, *, color: bool = False, prices: Prices | None = None
) -> str:
    """One run and its child runs in boxes."""
    return "\n".join(_run(mission, run, _Paint(color), prices))


def format_turn(mission: Mission, turn: Node, *, color: bool = False) -> str:
    """One turn's box, without its child runs (``--follow`` prints them as they end)."""
    return "\n".join(_turn(mission, turn, _Paint(color), None, nest=False))


def _header(mission: Mission, run: Node, paint: _Paint) -> str:
    return paint(f"══ {run.name} ({run.id}) ══", "bold")


def _footer(mission: Mission, run: Node, paint: _Paint, prices: Prices | None) -> str:
    status = {
        "ok": paint("ok", "green"),
        "running": paint("running", "yellow"),
        "paused": paint("paused", "yellow"),
    }.get(run.status) or paint(run.status if run.status != "error" else "failed", "red")
    pending = (run.detail.get("pending") or []) if run.status == "paused" else []
    if pending:
        n = len(pending)
        reason = f"{n} call{'s' if n > 1 else ''} wait{'' if n > 1 else 's'} for a decision"
    else:
        reason = run.detail.get("reason") or run.status
    text = f"{status}: {reason}"
    if run.error:
        text += f" ({_short(run.error, 200)})"
    turns = sum(1 for c in run.children if mission.nodes[c].kind == "turn")
    text += (
        f" | {turns} turns | {_ms(run, mission)} | "
        f"Tokens: {run.input_tokens} in / {run.output_tokens} out"
    )
    if prices:
        cost = _cost(mission, run, prices)
        if cost is not None:
            text += f" | ${cost:.4f}"
    waited = [p for p in run.detail.get("pauses", []) if "resumed_ms" in p and "paused_ms" in p]
    if waited:
        total = sum(p["resumed_ms"] - p["paused_ms"] for p in waited)
        times = f"{len(waited)} times" if len(waited) > 1 else "once"
        text += f" | paused {times}, waited {_duration(total)}"
    for p in pending:
        text += "\n" + paint(
            f"  ‖ {p['call_id']} {p['tool']}({_value(p['arguments'], 120)}): {p['reason']}",
            "yellow",
        )
    return text


def _duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.1f}min"
    return f"{ms / 3_600_000:.1f}h"


_DECIDED: Final = {
    "approve": "approved",
    "deny": "denied",
    "supply": "result supplied",
    "expired": "expired undecided",
}


def _approval(tool: Node, paint: _Paint) -> str | None:
    """The line of a call that waits, or waited, for a decision."""
    approval = tool.detail.get("approval")
    if not isinstance(approval, dict):
        return None
    decision = approval.get("decision")
    if decision is None:
        what = "its result" if approval.get("kind") == "deferred" else "approval"
        return paint(f"‖ waits for {what}: {approval.get('reason', '')}", "yellow")
    said = approval.get("decision_reason")
    text = f"‖ {_DECIDED.get(decision, decision)}"
    return paint(text + (f": {_short(str(said), 160)}" if said else ""), "yellow")


def _cost(mission: Mission, run: Node, prices: Prices) -> float | None:
    total = 0.0
    for turn in run.children:
        for call in mission.nodes[turn].children:
            node = mission.nodes[call]
            if node.kind == "llm":
                cost = prices.cost(
                    node.model,
                    node.input_tokens,
                    node.output_tokens,
                    node.cache_read_tokens,
                    node.cache_write_tokens,
                )
                if cost is None:
                    return None
                total += cost
    return total


def _run(mission: Mission, run: Node, paint: _Paint, prices: Prices | None) -> list[str]:
    lines = [_header(mission, run, paint)]
    input_ = run.detail.get("input")
    if input_ is not None:
        lines.append(f"{paint('Input:', 'bold')} {_value(input_, 160)}")
    for child_id in run.children:
        child = mission.nodes[child_id]
        if child.kind == "turn":
            lines.extend(_turn(mission, child, paint, prices, nest=True))
        elif child.kind == "run":
            lines.extend(_NEST + line for line in _run(mission, child, paint, prices))
    lines.extend(_footer(mission, run, paint, prices).split("\n"))
    return lines


def _turn(
    mission: Mission, turn: Node, paint: _Paint, prices: Prices | None, *, nest: bool
) -> list[str]:
    bar = paint("│", "dim")
    title = f"┌─ Turn {turn.detail.get('turn', '?')} "
    lines = [paint(title + "─" * max(4, _WIDTH - len(title)), "dim")]

    def row(text: str = "") -> None:
        lines.append(f"{bar} {text}".rstrip())

    calls = [mission.nodes[c] for c in turn.children]
    program = next((c for c in calls if c.kind == "program"), None)
    for llm in (c for c in calls if c.kind == "llm"):
        if llm.attempts > 1:
            row(
                f"{paint('Model:', 'bold')} {llm.name}, {paint(f'{llm.attempts} attempts', 'yellow')}"
            )
        text = str(llm.detail.get("text", ""))
        if llm.error:
            row(f"{paint('Model error:', 'red')} {_short(llm.error, 200)}")
        elif text and (program is None or "source" not in program.detail):
            row(f"{paint('Response:', 'bold')} {_short(text, 160)}")
    tools = [c for c in calls if c.kind == "tool"]
    if program is not None:
        source = program.detail.get("source")
        if isinstance(source, str):
            row(paint("Program:", "bold"))
            for line in source.splitlines():
                row(f"  {paint(line, 'cyan')}")
        tools = [mission.nodes[c] for c in program.children] + tools
    if tools:
        row(paint("Tools:", "bold"))
        for tool in tools:
            row(f"  → {tool.name}({_value(tool.detail.get('arguments', {}), 120)})")
            waited = _approval(tool, paint)
            if waited is not None:
                row(f"    {waited}")
            if tool.error:
                row(f"    ← {paint('error', 'red')} {_short(tool.error, 200)}")
            elif "result" in tool.detail:
                row(f"    ← {_value(tool.detail['result'])}")
            if nest:
                for child in tool.children:
                    if mission.nodes[child].kind == "run":
                        nested = _run(mission, mission.nodes[child], paint, prices)
                        lines.extend(f"{bar}     {line}" for line in nested)
    if program is not None:
        for printed in program.detail.get("prints", [])[:10]:
            row(f"{paint('Printed:', 'bold')} {_short(str(printed), 160)}")
        error = program.detail.get("error")
        if program.error and isinstance(error, dict) and "category" in error:
            where = (
                f" at line {error['line']}, column {error.get('column')}"
                if error.get("line")
                else ""
            )
            row(
                f"{paint('Error:', 'red')} {error['category']}{where}: {_short(error['message'], 300)}"
            )
        elif program.error:
            row(f"{paint('Error:', 'red')} {_short(program.error, 300)}")
        elif "value" in program.detail:
            row(f"{paint('Result:', 'bold')} {_value(program.detail['value'])}")
    row(
        f"Duration: {_ms(turn, mission)} | Tokens: {turn.input_tokens} in / "
        f"{turn.output_tokens} out"
    )
    lines.append(paint("└" + "─" * (_WIDTH - 1), "dim"))
    return lines


def format_summary(rows: list[AgentSummary]) -> str:
    """The per-agent summary as a small table (with a ``paused`` column when a run
    paused).

    Example:
        >>> print(format_summary([AgentSummary(agent="bot", runs=1, ok=1, turns=2)]))
        agent     runs  ok  failed  turns  tokens in  tokens out  duration  cost
        bot          1   1       0      2          0           0       0ms     -
    """
    paused = any(r.paused for r in rows)  # the column only where a run paused
    head = ["agent", "runs", "ok", "failed", "turns", "tokens in", "tokens out", "duration", "cost"]
    if paused:
        head.insert(4, "paused")
    table = [head]
    for r in rows:
        cost = "-" if r.cost is None else f"${r.cost:.4f}"
        cells = [
            r.agent,
            str(r.runs),
            str(r.ok),
            str(r.failed),
            str(r.turns),
            str(r.input_tokens),
            str(r.output_tokens),
            f"{r.duration_ms:.0f}ms",
            cost,
        ]
        if paused:
            cells.insert(4, str(r.paused))
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    out = []
    for row in table:
        cells = [row[0].ljust(max(widths[0], 8))]
        cells += [cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)
