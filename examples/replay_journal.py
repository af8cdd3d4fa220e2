"""Journal a run to JSON lines, then rebuild the strategy's final state from the journal.

    .venv/bin/python examples/replay_journal.py [run.jsonl]

Nothing is performed again during the replay: no model call, no tool call. The exit code
is 0 when the replayed state equals the live run's, 1 when it does not; a journal file
that already exists is refused (exit code 2).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from ptcflow.demo import demo_agent, demo_model, demo_tools, question_for
from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.signals import SignalBus, read_journal, record_journal
from ptcflow.strategies import replay
from ptcflow.testing import Recording


async def main(path: Path) -> bool:
    """Run the demo agent journaled to ``path``, replay the journal, compare the states."""
    live = Recording(demo_agent())
    bus = SignalBus()
    async with (
        record_journal(bus, path),
        Runtime(llm=demo_model(), tools=demo_tools(), bus=bus) as rt,
    ):
        step = await rt.run(live, question_for("Dana"))
    print(f"live run: {step.value}")

    journal = read_journal(path, run_id=step.run_id)
    print(f"journal:  {len(journal)} signals in {path}")
    assert live.run is not None
    state = replay(demo_agent(), journal, tools=live.run.tools)
    print(f"replayed: status={state.status} iteration={state.iteration} text={state.text!r}")
    same = state == live.state
    print(f"same final state as the live run: {same}")
    return same


def cli(argv: list[str]) -> int:
    """The exit code for ``replay_journal.py [run.jsonl]``."""
    try:
        if argv:
            same = anyio.run(main, Path(argv[0]))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                same = anyio.run(main, Path(tmp) / "run.jsonl")
    except UsageError as exc:
        print(f"replay_journal.py: {exc}", file=sys.stderr)
        return 2
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
