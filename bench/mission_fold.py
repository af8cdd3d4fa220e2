"""``Mission.add``: the fold of signals into the mission tree, against a baseline checkout.

```
.venv/bin/python bench/mission_fold.py --baseline /tmp/old/src                 # µs, ~1 min
.venv/bin/python bench/mission_fold.py --baseline /tmp/old/src --instructions  # callgrind
```

The workloads: the 8 signals of a streamed ReAct run that the fold sees (its ``ai.llm.delta``
signals left out, as ``AGUIStream`` leaves them out; the run ``stream_encode.py`` records),
and the 91 signals of the viewer tests' 3-level mission (``tests/trace_viewer/data``:
SubAgent programs with sub-calls, nested agents). Each is folded into a new ``Mission`` in a
subprocess whose ``PYTHONPATH`` is this checkout's ``src`` or the baseline's, the two in
alternating rounds (medians of 5). Per signal: the fold up to and including it minus the
fold up to it (the fastest of 5 repeats of 2,000 folds). ``--instructions`` counts the
CPU's instructions per fold under callgrind instead (the difference of 100 and 600 folds;
of the mission 10 and 60):
load-independent, for two checkouts compared to a fraction of a percent.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
MISSION = HERE.parent / "tests" / "trace_viewer" / "data" / "mission.jsonl"

WORKER = r"""
import json, sys, timeit
from ptcflow.signals import read_journal
from ptcflow.trace import Mission

signals = read_journal(sys.argv[1], all_runs=True)

def fold(upto=len(signals)):
    mission = Mission()
    for signal in signals[:upto]:
        mission.add(signal)
    return mission

def best(upto, number):
    return min(timeit.repeat(lambda: fold(upto), number=number, repeat=5)) / number * 1e6

if sys.argv[2] == "steps":  # µs of each signal, then of the whole fold
    folds = [best(n, 2000) for n in range(len(signals) + 1)]
    print(json.dumps([b - a for a, b in zip(folds, folds[1:])] + [folds[-1] - folds[0]]))
elif sys.argv[2] == "total":
    print(json.dumps([best(len(signals), 200) - best(0, 200)]))
else:  # under callgrind
    for _ in range(int(sys.argv[2])):
        fold()
"""


def _record(path: Path) -> None:
    """The streamed ReAct run of stream_encode.py, its non-delta signals journaled to ``path``."""
    import anyio

    sys.path.insert(0, str(HERE))
    import stream_encode
    from ptcflow.signals import encode_signal

    signals = anyio.run(stream_encode._record)
    lines = [encode_signal(s) + b"\n" for s in signals if s.type != "ai.llm.delta"]
    path.write_bytes(b"".join(lines))


def _run(src: Path, args: list[str], script: Path, prefix: tuple[str, ...] = ()) -> str:
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    cmd = [*prefix, sys.executable, str(script), *args]
    return subprocess.run(cmd, check=True, env=env, capture_output=True, text=True).stdout


def _instructions(src: Path, journal: Path, script: Path, tmp: Path, small: int) -> float:
    counts = []
    for n in (small, 6 * small):
        out = tmp / f"cg.{n}.out"
        valgrind = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}")
        _run(src, [str(journal), str(n)], script, valgrind)
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if match is None:
            raise RuntimeError(f"no instruction total in {out}")
        counts.append(int(match.group(1)))
    return (counts[1] - counts[0]) / (5 * small)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout's src")
    parser.add_argument("--instructions", action="store_true", help="callgrind counts")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        script, react = tmp / "worker.py", tmp / "react.jsonl"
        script.write_text(WORKER)
        _record(react)
        sides = {"baseline": args.baseline.resolve(), "this": SRC}
        workloads = (("streamed ReAct (8 signals)", react), ("mission (91 signals)", MISSION))
        small = {react: 100, MISSION: 10}  # folds under callgrind (and six times as many)
        if args.instructions:
            if shutil.which("valgrind") is None:
                print("valgrind is not installed: nothing measured")
                return 0
            print(f"{'instructions per fold':<30}{'baseline':>12}{'this':>12}{'ratio':>8}")
            for name, journal in workloads:
                got = {
                    side: _instructions(src, journal, script, tmp, small[journal])
                    for side, src in sides.items()
                }
                ratio = got["baseline"] / got["this"]
                print(f"{name:<30}{got['baseline']:>12,.0f}{got['this']:>12,.0f}{ratio:>7.2f}x")
            return 0
        from ptcflow.signals import read_journal

        for (name, journal), mode in zip(workloads, ("steps", "total"), strict=True):
            rounds: dict[str, list[list[float]]] = {side: [] for side in sides}
            for _ in range(args.rounds):
                for side, src in sides.items():
                    rounds[side].append(json.loads(_run(src, [str(journal), mode], script)))
            median = {
                side: [statistics.median(column) for column in zip(*runs, strict=True)]
                for side, runs in rounds.items()
            }
            print(f"{name}: µs, median of {args.rounds} alternating rounds   baseline    this")
            if mode == "steps":
                types = [s.type for s in read_journal(journal)]
                for n, kind in enumerate(types):
                    print(f"  {kind:<40}{median['baseline'][n]:>10.2f}{median['this'][n]:>8.2f}")
            old, new = median["baseline"][-1], median["this"][-1]
            print(f"  {'whole fold':<40}{old:>10.2f}{new:>8.2f}  {old / new:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
