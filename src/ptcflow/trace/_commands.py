"""The ``ptcflow trace`` commands: ``show``, ``export`` and ``open``."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import IO

import anyio

from ptcflow.errors import UsageError
from ptcflow.providers import PriceTable
from ptcflow.trace._follow import FollowPrinter, follow_journal
from ptcflow.trace._mission import Mission
from ptcflow.trace._summary import Prices, summarize
from ptcflow.trace._text import format_mission, format_summary

__all__ = ("add_trace_commands", "run_trace_command")


def add_trace_commands(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``trace show|export|open`` to an argparse parser (``add_parser`` is its
    subparsers' ``add_parser``).

    The ``ptcflow`` command line's plumbing, with :func:`run_trace_command`: use them to
    offer ``trace`` in a command line of your own. In code, build a :class:`Mission` and
    use :func:`format_mission`, :func:`send_otlp` or :func:`write_page`.
    """
    trace = add_parser(
        "trace",
        help="see a recorded run: boxes, OpenTelemetry spans, an HTML page",
        description="See a run from its journal (JSON lines written by record_journal).",
    )
    cmds = trace.add_subparsers(dest="trace_command", required=True)
    show = cmds.add_parser("show", help="print every turn in boxes, nested agents indented")
    show.add_argument("journal", type=Path)
    show.add_argument("--run-id", help="only this run (and its child runs)")
    show.add_argument("--follow", action="store_true", help="tail a journal a live run writes")
    show.add_argument("--summary", action="store_true", help="end with the per-agent summary")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    show.add_argument("--prices", type=Path, help="model prices (TOML or JSON) to show costs")
    export = cmds.add_parser("export", help="replay a journal into OpenTelemetry spans (OTLP)")
    export.add_argument("journal", type=Path)
    where = export.add_mutually_exclusive_group(required=True)
    where.add_argument("--otlp", metavar="ENDPOINT", help="OTLP/HTTP endpoint (http://host:4318)")
    where.add_argument("-o", "--output", type=Path, help="write OTLP JSON to this file")
    export.add_argument("--run-id", help="only this run (and its child runs)")
    export.add_argument("--service-name", default="ptcflow", help="service.name of the spans")
    export.add_argument(
        "--capture-content",
        action="store_true",
        help="add arguments, results and responses to the spans (redacted, as telemetry does)",
    )
    export.add_argument("--protocol", choices=("json", "protobuf"), default="json")
    page = cmds.add_parser("open", help="write one self-contained HTML page and open it")
    page.add_argument("journal", type=Path)
    page.add_argument("-o", "--output", type=Path, help="the HTML file (default: JOURNAL.html)")
    page.add_argument("--run-id", help="only this run (and its child runs)")
    page.add_argument("--prices", type=Path, help="model prices (TOML or JSON) to show costs")
    page.add_argument("--no-content", action="store_true", help="names, times and errors only")
    page.add_argument("--no-open", action="store_true", help="write the file, do not open it")


def run_trace_command(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Run a ``trace ...`` command parsed by a parser that :func:`add_trace_commands` set
    up, printing to ``out`` (default: stdout); return its exit code.

    The command line's plumbing (see :func:`add_trace_commands`).
    """
    out = sys.stdout if out is None else out
    try:
        if args.trace_command == "show":
            return _show(args, out)
        if args.trace_command == "export":
            return _export(args, out)
        return _open(args, out)
    except UsageError as exc:
        print(f"ptcflow trace {args.trace_command}: {exc}", file=sys.stderr)
        return 2


def _prices(path: Path | None) -> Prices | None:
    if path is None:
        return Prices.default()
    loaded = Prices.load(path)
    loaded.catalogue = PriceTable()
    return loaded


def _load(args: argparse.Namespace, **options: bool) -> Mission:
    if not args.journal.exists():
        raise UsageError(f"no journal at {args.journal}")
    return Mission.from_journal(args.journal, run_id=args.run_id, **options)


def _color(choice: str, out: IO[str]) -> bool:
    if choice != "auto":
        return choice == "always"
    isatty = getattr(out, "isatty", None)
    return not os.environ.get("NO_COLOR") and bool(isatty and isatty())


def _show(args: argparse.Namespace, out: IO[str]) -> int:
    prices = _prices(args.prices)
    color = _color(args.color, out)
    if args.follow:
        try:
            mission = anyio.run(_follow, args.journal, out, color, prices)
        except KeyboardInterrupt:
            return 130
    else:
        mission = _load(args)
        out.write(format_mission(mission, color=color, prices=prices) + "\n")
    if args.summary:
        out.write("\n" + format_summary(summarize(mission, prices)) + "\n")
    return 0 if all(m.status == "ok" for m in (mission.nodes[r] for r in mission.roots)) else 1


async def _follow(path: Path, out: IO[str], color: bool, prices: Prices | None) -> Mission:
    mission = Mission()
    printer = FollowPrinter(mission, out, color=color, prices=prices)
    async with follow_journal(path) as signals:
        async for signal in signals:
            printer.feed(mission.add(signal))
            # a run that paused may go on below (a resume appended to the journal): read
            # on while there is more; a journal that ends at the pause ends here
            if mission.ended and not (_paused(mission) and await signals.ready()):
                break
    return mission


def _paused(mission: Mission) -> bool:
    return any(node.status == "paused" for node in mission.runs())


def _export(args: argparse.Namespace, out: IO[str]) -> int:
    from ptcflow.trace._otlp import otlp_request, send_otlp

    mission = _load(args)
    body = otlp_request(
        mission, service_name=args.service_name, capture_content=args.capture_content
    )
    spans = sum(len(s["spans"]) for r in body["resourceSpans"] for s in r["scopeSpans"])
    if args.output is not None:
        import json

        args.output.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        out.write(f"wrote {spans} spans to {args.output}\n")
        return 0
    sent = send_otlp(body, args.otlp, protocol=args.protocol)
    out.write(f"sent {spans} spans to {sent}\n")
    return 0


def _open(args: argparse.Namespace, out: IO[str]) -> int:
    from ptcflow.trace._page import write_page

    mission = _load(args, content=not args.no_content)
    target = args.output or args.journal.with_suffix(".html")
    write_page(mission, target, prices=_prices(args.prices), title=args.journal.name)
    out.write(f"wrote {target}\n")
    if not args.no_open:
        webbrowser.open(target.resolve().as_uri())
    return 0
