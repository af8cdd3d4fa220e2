"""Machine instructions per run under callgrind: a load-independent measure of the whole run.

Run: ``.venv/bin/python bench/_instructions.py [--fused] [src-dir]`` (needs ``valgrind``). Runs the
benchmark's two-turn run (see runtime_overhead.py) under ``valgrind --tool=callgrind``
twice, 100 and 600 runs, and prints the difference per run: the instructions the CPU
executes for one run, in C code too (msgspec, dict operations, the allocator, the
garbage collector), which ``_opcodes.py`` does not see. Like the bytecode count it does
not move with the machine's load, so two commits compare to a fraction of a percent
(pass another checkout's ``src`` directory to measure it: ``... _instructions.py
/tmp/old/src``; the workload uses public names only, ``Runtime``, ``ReAct`` and
``ScriptedLLM``, so the ``src`` of d3d3e15, early November, runs it too). ``--fused`` measures the hand-fused loop of ``_fused.py`` instead: the
run's work without the runtime's machinery.

The wall clock is frozen for the measured process (``time.time_ns`` returns one instant):
under callgrind a run takes ~50 times longer, and the per-millisecond refresh of the id
prefix and time text (``signals._signal._refresh``) would then run several times per run
instead of once every ~20 runs.

Takes about a minute.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL, LARGE = 100, 600

WORKLOAD = """
import sys, time, types
import anyio
sys.path.insert(0, {bench!r})
import ptcflow.signals._signal as signal_module
from ptcflow import ReAct, Runtime
from ptcflow.testing import ScriptedLLM
FIXED = 1_800_000_000_000_000_000
try:  # commits before the run core inlined the stamp into the run scope
    import ptcflow.runtime._scope as scope_module
    scope_module._time_ns = lambda: FIXED
except ImportError:
    pass
frozen = types.SimpleNamespace(**{{k: getattr(time, k) for k in dir(time) if not k.startswith("__")}})
frozen.time_ns = lambda: FIXED
signal_module.time = frozen

async def add(x: int, y: int) -> int:
    'Add two integers.'
    return x + y

def answer(request):  # _subject's workload, with public names only: any commit's src runs it
    if request.messages[-1].role == "tool":
        return "5"
    return ScriptedLLM.tool_call("add", x=2, y=3)

async def main(n: int) -> None:
    rt = Runtime(llm=ScriptedLLM(answer, record=False), tools={{"add": add}})
    agent = ReAct()
    async with rt:
        for _ in range(n):
            await rt.run(agent, "What is 2 + 3?")

async def fused(n: int) -> None:
    import _fused
    await _fused.fused(n)

anyio.run(fused if sys.argv[2] == "fused" else main, int(sys.argv[1]))
"""


def instructions(script: Path, runs: int, mode: str, env: dict[str, str], out: Path) -> int:
    """Total instructions callgrind counts for ``runs`` runs of the workload."""
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    cmd += [sys.executable, str(script), str(runs), mode]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(match.group(1))


def main(argv: list[str]) -> int:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return 0
    env = dict(os.environ, PYTHONHASHSEED="0")  # string hashes (dict probes) as in every run
    mode = "fused" if "--fused" in argv else "runtime"
    paths = [a for a in argv if a != "--fused"]
    if paths:
        env["PYTHONPATH"] = str(Path(paths[0]).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "workload.py"
        script.write_text(WORKLOAD.format(bench=str(HERE)))
        small = instructions(script, SMALL, mode, env, Path(tmp) / "small.out")
        large = instructions(script, LARGE, mode, env, Path(tmp) / "large.out")
    what = "the fused loop (_fused.py)" if mode == "fused" else "Runtime.run"
    print(f"{(large - small) / (LARGE - SMALL):,.0f} instructions per run of {what} (callgrind)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
