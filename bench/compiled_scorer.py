"""Records/s of a compiled agent against the same logic written in plain Python.

    .venv/bin/python bench/compiled_scorer.py                 # 10,000 records, 3 repeats
    .venv/bin/python bench/compiled_scorer.py --records 200 --repeats 1   # smoke

The workload is examples/compiled_scorer/score_reports.py's scorer: per record a tool call
(``lookup_threshold``, a pure inline tool), a division and a ``cond``, the result checked
against the signature. Measured in the same run, interleaved per repeat (median):

- **python**: the same logic as a plain Python function over the list of dicts (no
  validation, no sandbox): the floor;
- **compiled**: ``CompiledAgent.execute_many`` (chunks of 256 records per program);
- **compiled, alone**: ``execute_many(chunk_size=1)``: one program run per record (what
  each ``execute`` call costs).

Each prints records/s and its ratio to the floor (how many times slower).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "compiled_scorer"))

from score_reports import MODEL_ANSWER, SAMPLES, THRESHOLDS, reports, scorer

from ptcflow.testing import ScriptedLLM


def python_score(record: dict[str, Any]) -> dict[str, Any]:
    """The compiled function's logic, written in Python."""
    report = record["report"]
    amount = report["amount"]
    if amount < 0:
        raise ValueError(f"report {report['id']} has a negative amount")
    score = amount / THRESHOLDS.get(report["region"], 1000.0)
    level = "critical" if score >= 2.0 else "high" if score >= 1.0 else "normal"
    return {"score": score, "level": level}


def python_batch(records: list[dict[str, Any]]) -> int:
    ok = 0
    for record in records:
        try:
            python_score(record)
            ok += 1
        except ValueError:
            pass
    return ok


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    ok = fn()
    return time.perf_counter() - started, ok


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    compiled = scorer.compile_sync(llm=ScriptedLLM([MODEL_ANSWER]), sample=SAMPLES)
    records = reports(args.records)
    alone_records = records[: max(1, args.records // 10)]  # the slow one on a tenth
    runs: dict[str, list[float]] = {"python": [], "compiled": [], "compiled, alone": []}
    oks: dict[str, int] = {}
    for _ in range(args.repeats):
        seconds, oks["python"] = timed(lambda: python_batch(records))
        runs["python"].append(len(records) / seconds)
        seconds, oks["compiled"] = timed(
            lambda: sum(s.ok for s in compiled.execute_many_sync(records))
        )
        runs["compiled"].append(len(records) / seconds)
        seconds, oks["compiled, alone"] = timed(
            lambda: sum(s.ok for s in compiled.execute_many_sync(alone_records, chunk_size=1))
        )
        runs["compiled, alone"].append(len(alone_records) / seconds)
    assert oks["python"] == oks["compiled"], oks  # the same results
    floor = statistics.median(runs["python"])
    result: dict[str, Any] = {"records": len(records), "repeats": args.repeats}
    print(f"compiled scorer: {len(records)} records, median of {args.repeats}")
    for name, rates in runs.items():
        rate = statistics.median(rates)
        ratio = floor / rate
        result[name] = {"records_per_s": rate, "ratio": ratio}
        print(f"  {name:<16} {rate:>12,.0f} records/s   {ratio:>8.1f}x python")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
