"""Journal a run to JSON lines, then rebuild the strategy's final state from the journal.

    .venv/bin/python examples/replay_journal.py [run.jsonl]

Nothing is performed again during the replay: no model call, no tool call.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from ptcflow.demo import demo_agent, demo_model, demo_tools, question_for
from ptcflow.runtime import Runtime
from ptcflow.signals import SignalBus, read_journal, record_journal
from ptcflow.strategies import replay
from ptcflow.testing import Recording


async def main(path: Path) -> None:
    live = Recording(demo_agent())
    bus = SignalBus()
    async with (
        record_journal(bus, path),
        Runtime(llm=demo_model(), tools=demo_tools(), bus=bus) as rt,
    ):
        step = await rt.run(live, question_for("Dana"))
    print(f"live run: {step.value}")

    journal = read_journal(path)
    print(f"journal:  {len(journal)} signals in {path}")
    assert live.run is not None
    state = replay(demo_agent(), journal, tools=live.run.tools)
    print(f"replayed: status={state.status} iteration={state.iteration} text={state.text!r}")
    print(f"same final state as the live run: {state == live.state}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        anyio.run(main, Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            anyio.run(main, Path(tmp) / "run.jsonl")
