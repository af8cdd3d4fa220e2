"""``bench/ptc_turn.py``'s ratio in instructions (Valgrind), which a shared machine does not blur.

Run it with::

    .venv/bin/python bench/_ptc_turn_instructions.py                   # about 2 minutes
    .venv/bin/python bench/_ptc_turn_instructions.py --without memory  # the turn, memory not written

CPU time on a machine that other jobs share moves by 20-40% from run to run; the number of
instructions a run executes does not. This runs the same workload as ``ptc_turn.py`` (its
two-turn SubAgent run and its two ``lisp.run`` programs) under ``valgrind --tool=cachegrind``:
each side once after the warm-up and once with ``--runs`` more, and the difference, per turn
(per program), is its cost. ``--without memory`` replaces the runtime's memory writer
(``memory_out``) by one that keeps nothing (the programs still run the same: each turn defines
all it uses), which measures the writer's share of a turn. Instructions are not cycles: a turn
that touches more memory loses more to cache misses, so the CPU-time ratio is usually a little
higher than this one.
"""

from __future__ import annotations

import argparse
import gc
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent


async def _workload(side: str, runs: int, without: str | None) -> None:
    sys.path.insert(0, str(HERE))
    import ptc_turn
    from ptcflow.runtime import Runtime
    from ptcflow.testing import ScriptedLLM

    if without == "memory":
        from ptcflow.program import ProgramCache, _perform

        def keep_nothing(
            memory: Mapping[str, Any], cache: ProgramCache, limit: int | None
        ) -> tuple[dict[str, str], dict[str, str]]:
            return {}, {}

        vars(_perform)["memory_out"] = keep_nothing  # the name perform_program calls
    async with Runtime(llm=ScriptedLLM(ptc_turn._model, record=False)) as rt:
        await ptc_turn.agent_runs(rt, 5)  # warm-up: imports, caches, the agent's prompt
        await ptc_turn.direct_runs(5)
        gc.collect()
        if side == "agent":
            await ptc_turn.agent_runs(rt, runs)
        else:
            await ptc_turn.direct_runs(runs)
        gc.collect()


def _instructions(side: str, runs: int, without: str | None) -> int:
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        side,
        str(runs),
    ]
    if without is not None:
        command += ["--without", without]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="two-turn runs counted (default 20)")
    parser.add_argument("--without", choices=("memory",), help="leave a part of the turn out")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        anyio.run(_workload, args.child[0], int(args.child[1]), args.without)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    per: dict[str, float] = {}
    for side in ("agent", "direct"):
        base = _instructions(side, 0, args.without)
        more = _instructions(side, args.runs, args.without)
        per[side] = (more - base) / (2 * args.runs)  # two turns (programs) a run
    left_out = f", without {args.without}" if args.without else ""
    print(f"ptc_turn in instructions ({args.runs} two-turn runs{left_out})")
    print(f"  one PTC turn (SubAgent on a Runtime):   {per['agent'] / 1e6:6.2f} M")
    print(f"  the same program with lisp.run:         {per['direct'] / 1e6:6.2f} M")
    print(f"  ratio: {per['agent'] / per['direct']:.3f}x")


if __name__ == "__main__":
    main()
