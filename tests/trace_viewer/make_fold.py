"""Record the journals ``test_fold_identity.py`` folds (``data/fold/*.jsonl``) and what folding
them must give (``data/fold/expected.json``: made with the fold before a change that must keep its output,
then kept; regenerate it only for a change of the fold's output meant as such).

    .venv/bin/python -m tests.trace_viewer.make_fold             # journals and expected outputs
    .venv/bin/python -m tests.trace_viewer.make_fold --expected  # expected outputs only

The journals: a streamed ReAct run with a tool (``react_stream``); ReAct and SubAgent runs
cancelled mid-call (``react_cancelled``, ``program_cancelled``); approvals that pause and
resume (``approvals_react``: one call approved, ``approvals_denied``: one denied,
``approvals_program``: a program's calls approved and supplied, ``approvals_nested``: an
agent-as-tool's call); hand-made sequences (``handmade``: a program's sub-call signals with
``ai.program.result``, a child run seen before its call, content with a secret, a time that
does not parse, an embedding call, a rejected request); and the 3-level mission of ``data/mission.jsonl`` (SubAgent programs with
sub-calls, a program error, a failing tool, a retried model call, nested agents).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec

from ptcflow.signals import Secrets, Signal, encode_signal, read_journal

HERE = Path(__file__).resolve().parent
FOLD = HERE / "data" / "fold"
EXPECTED = FOLD / "expected.json"
MISSION = HERE / "data" / "mission.jsonl"

OPTIONS: dict[str, dict[str, Any]] = {
    "plain": {},
    "no-content": {"content": False},
    "secrets": {"secrets": Secrets(["sk-live-1234567", "refunded", "word12", "emea"])},
}
"""The ways each journal is folded (secrets that occur in the journals' content)."""


def journals() -> dict[str, list[Signal]]:
    """Every journal the identity test folds, by name."""
    out = {path.stem: read_journal(path, all_runs=True) for path in sorted(FOLD.glob("*.jsonl"))}
    out["mission"] = read_journal(MISSION, all_runs=True)
    return out


def digest(value: Any) -> str:
    """A short fingerprint of JSON-able ``value`` (its bytes as msgspec writes them)."""
    return hashlib.sha256(msgspec.json.encode(value)).hexdigest()[:16]


def fold_record(mission_type: Any, signals: list[Signal], **options: Any) -> dict[str, Any]:
    """What folding ``signals`` one at a time gives: for each signal the ids of the nodes
    ``add`` returned and a fingerprint of those nodes and of the whole mission after it;
    at the end the whole mission."""
    mission = mission_type(**options)
    steps = []
    for signal in signals:
        changed = mission.add(signal)
        state = [
            [n.to_json() for n in changed],
            [n.to_json() for n in mission.walk()],
            mission.roots,
            mission.first_ms,
            mission.last_ms,
        ]
        steps.append([[n.id for n in changed], digest(state)])
    return {
        "steps": steps,
        "nodes": [n.to_json() for n in mission.walk()],
        "roots": mission.roots,
        "first_ms": mission.first_ms,
        "last_ms": mission.last_ms,
        "signals": mission.signals,
    }


def expected() -> dict[str, Any]:
    """The fold's record of every journal under every option set (made with the fold
    as it was before a change meant to keep its output, then kept)."""
    from ptcflow.trace import Mission

    return {
        f"{name}/{option}": fold_record(Mission, signals, **options)
        for name, signals in journals().items()
        for option, options in OPTIONS.items()
    }


# -- recording the journals ----------------------------------------------------------------


async def _journal(path: Path, record: Any) -> None:
    from ptcflow.signals import SignalBus, record_journal

    bus = SignalBus()
    async with record_journal(bus, path):
        await record(bus)


async def react_stream(bus: Any) -> None:
    from ptcflow import ReAct, Runtime
    from ptcflow.testing import ScriptedLLM

    async def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    def model(request: Any) -> Any:
        if any(m.role == "tool" for m in request.messages):
            return " ".join(f"word{n}" for n in range(20))
        return ScriptedLLM.tool_call("add", x=2, y=3)

    async with Runtime(llm=ScriptedLLM(model), tools=[add], bus=bus) as rt:
        await rt.run(ReAct(stream=True), "2 + 3?", run_id="r1")


async def react_cancelled(bus: Any) -> None:
    from ptcflow import ReAct, Runtime
    from ptcflow.testing import ScriptedLLM

    started = anyio.Event()

    async def hang() -> None:
        """Never answers."""
        started.set()
        await anyio.sleep_forever()

    llm = ScriptedLLM([ScriptedLLM.tool_call("hang")])
    async with Runtime(llm=llm, tools=[hang], bus=bus) as rt:
        handle = rt.start(ReAct(), "go", run_id="cancel_react")
        await started.wait()
        handle.cancel()
        await handle.wait()


async def program_cancelled(bus: Any) -> None:
    from ptcflow import Runtime, SubAgent
    from ptcflow.testing import ScriptedLLM

    started = anyio.Event()

    async def orders() -> list[int]:
        """The open orders."""
        return [1, 2]

    async def hang() -> None:
        """Never answers."""
        started.set()
        await anyio.sleep_forever()

    program = '```clojure\n(call "orders" {})\n(call "hang" {})\n(return 1)\n```'
    agent = SubAgent(
        prompt="Count",
        signature="() -> :int",
        tools=[orders, hang],
        llm=ScriptedLLM([program]),
    )
    async with Runtime(bus=bus) as rt:
        handle = rt.start(agent, run_id="cancel_program")
        await started.wait()
        handle.cancel()
        await handle.wait()


async def _approvals(path: Path) -> None:
    from ptcflow import Approve, Deny, Supply

    from .approvals import journal_nested, journal_program, journal_react

    await journal_react(path / "approvals_react.jsonl", {"B": Approve()})
    await journal_react(path / "approvals_denied.jsonl", {"B": Deny("over the limit")})
    await journal_program(
        path / "approvals_program.jsonl", {"B": Approve(), "C": Supply("refunded by hand")}
    )
    await journal_nested(path / "approvals_nested.jsonl", Approve())


def handmade() -> list[Signal]:
    """The hand-made sequences of test_mission.py, one after the other."""
    from ptcflow.directives import RunProgram
    from ptcflow.program import perform_program
    from ptcflow.signals import (
        EmbedResponse,
        EmbedResultData,
        Err,
        ErrorEnvelope,
        Ok,
        ProgramResultData,
        RequestErrorData,
        ToolResultData,
        ToolStartedData,
        Usage,
        UsageData,
    )
    from ptcflow.testing import SignalFactory

    async def orders(name: str, args: dict[str, object], index: int) -> Ok[object] | Err:
        return Ok(payload=[{"amount": 2.5}])

    source = '(return (count (call "orders" {:q 1})))'
    directive = RunProgram(id="h1/program/1", source=source, tool_names=("orders",))
    output = anyio.run(perform_program, directive, orders)
    sig = SignalFactory("h1")
    out = [
        sig.request_started("go"),
        *(
            msgspec.structs.replace(s, iteration=1)
            for s in sig.llm_reply("h1/llm/1", f"```clojure\n{source}\n```")
        ),
        sig.make(
            "ai.tool.started",
            ToolStartedData(tool_name="orders", arguments={"q": 1}),
            call="h1/program/1/tool/1",
            iteration=1,
        ),
        sig.make(
            "ai.tool.result",
            ToolResultData(tool_name="orders", result=Ok(payload=[1]), duration_ms=3.0),
            call="h1/program/1/tool/1",
            iteration=1,
        ),
        sig.make(
            "ai.program.result",
            ProgramResultData(result=Ok(payload=output), duration_ms=5.0),
            call="h1/program/1",
            iteration=1,
        ),
    ]
    parent, child = SignalFactory("h2"), SignalFactory("h2/c1")
    out += [
        parent.request_started("go"),
        msgspec.structs.replace(child.request_started({"prompt": "x"}), parent_run_id="h2"),
        parent.make("ai.tool.started", ToolStartedData(tool_name="helper"), call="c1", iteration=1),
    ]
    sig = SignalFactory("h3")
    out += [
        sig.request_started("hi"),
        sig.make(
            "ai.tool.started",
            ToolStartedData(
                tool_name="login", arguments={"user": "ada", "api_key": "sk-live-1234567"}
            ),
            call="c1",
            iteration=1,
        ),
        sig.make(
            "ai.tool.result",
            ToolResultData(
                tool_name="login",
                result=Err(error=ErrorEnvelope.make("auth", "key sk-live-1234567 rejected")),
            ),
            call="c1",
            iteration=1,
        ),
    ]
    sig = SignalFactory("h4")
    usage = sig.make(
        "ai.usage", UsageData(usage=Usage(input_tokens=3)), call="h4/llm/1", iteration=1
    )
    out += [sig.request_started("hi"), msgspec.structs.replace(usage, time="soon")]
    sig = SignalFactory("h5")
    embed = EmbedResponse(vectors=((0.5, 1.0),), model="embedder")
    out += [
        sig.request_started("embed"),
        sig.make(
            "ai.usage",
            UsageData(usage=Usage(input_tokens=2), model="embedder"),
            call="h5/embed/1",
            iteration=1,
        ),
        sig.make("ai.embed.result", EmbedResultData(result=Ok(payload=embed)), call="h5/embed/1"),
        sig.make(
            "ai.request.error",
            RequestErrorData(error=ErrorEnvelope.make("busy", "too many runs"), reason="busy"),
        ),
        sig.request_failed(),
    ]
    return out


def record_journals() -> None:
    """Record every journal in ``data/fold`` (replaced)."""
    FOLD.mkdir(parents=True, exist_ok=True)
    for old in FOLD.glob("*.jsonl"):
        old.unlink()
    for record in (react_stream, react_cancelled, program_cancelled):
        anyio.run(_journal, FOLD / f"{record.__name__}.jsonl", record)
    anyio.run(_approvals, FOLD)
    (FOLD / "handmade.jsonl").write_bytes(b"".join(encode_signal(s) + b"\n" for s in handmade()))


if __name__ == "__main__":
    if "--expected" not in sys.argv:
        record_journals()
    EXPECTED.write_bytes(msgspec.json.format(msgspec.json.encode(expected()), indent=1) + b"\n")
    print(f"wrote {EXPECTED}")
