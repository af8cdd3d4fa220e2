"""Compile an anomaly scorer once, then score 10,000 expense reports without a model.

    .venv/bin/python examples/compiled_scorer/score_reports.py [scorer.clj]

The model (here a ScriptedLLM answering with the function a model would write) is asked
once; the CompiledAgent then runs the function on every report, calling the pure
``lookup_threshold`` tool, each report validated against the signature on the way in
and out. A report the function refuses (a negative amount) gets a failed Step and the
batch goes on. The compiled source is saved as a reviewable ``.clj`` file and loaded back.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ptcflow import CompiledAgent, SubAgent, tool
from ptcflow.testing import ScriptedLLM

THRESHOLDS = {"eu": 1000.0, "us": 1500.0, "apac": 800.0}


@tool(blocking=False)  # a quick pure function: called inline, no worker thread
def lookup_threshold(region: str) -> float:
    """The spending threshold of a region, in EUR."""
    return THRESHOLDS.get(region, 1000.0)


scorer = SubAgent(
    prompt="Calculate the anomaly score of the expense report {{report}}",
    signature="(report {id :int, region :string, amount :float}) -> {score :float, level :string}",
    tools=[lookup_threshold],
    name="scorer",
    description="Scores how anomalous an expense report is.",
)

# What a model answers to the compile prompt (a real model writes something like it).
MODEL_ANSWER = """The score is the amount over the region's threshold:
```clojure
(defn level [score]
  (cond (>= score 2.0) "critical"
        (>= score 1.0) "high"
        :else "normal"))

(defn score-report [report]
  (let [amount (:amount report)]
    (when (neg? amount)
      (fail {:reason :invalid_amount :message (str "report " (:id report) " has a negative amount")}))
    (let [threshold (call "lookup_threshold" {:region (:region report)})
          score (/ amount threshold)]
      {:score score :level (level score)})))
```"""

SAMPLES = [
    {"report": {"id": 1, "region": "eu", "amount": 2500.0}},
    {"report": {"id": 2, "region": "us", "amount": 300.0}},
]


def reports(n: int) -> list[dict[str, object]]:
    """``n`` expense reports; every 1000th has a negative amount."""
    regions = ["eu", "us", "apac", "latam"]
    return [
        {
            "report": {
                "id": i,
                "region": regions[i % 4],
                "amount": -5.0 if i % 1000 == 999 else float((i * 37) % 3000),
            }
        }
        for i in range(n)
    ]


def main(path: Path) -> int:
    """Compile, score 10,000 reports, save and load; the exit code is 0 when all went well."""
    llm = ScriptedLLM([MODEL_ANSWER])
    compiled = scorer.compile_sync(llm=llm, sample=SAMPLES)
    print(f"compiled with {len(llm.requests)} model call ({compiled.metadata})")
    print(compiled.source)

    records = reports(10_000)
    started = time.perf_counter()
    steps = compiled.execute_many_sync(records)
    seconds = time.perf_counter() - started
    levels = Counter(s.value["level"] for s in steps if s.ok)
    failed = [s for s in steps if not s.ok]
    print(f"scored {len(steps)} reports in {seconds:.2f} s ({len(steps) / seconds:,.0f}/s)")
    print(f"levels: {dict(sorted(levels.items()))}; failed: {len(failed)}")
    print(f"first failure: {failed[0].run_id} {failed[0].fail}")

    compiled.save(path)
    again = CompiledAgent.load(path, agent=scorer)
    same = again.execute_sync(records[0]).value == steps[0].value
    print(f"saved to {path.name} and loaded back: same result {same}")
    return 0 if same and len(failed) == 10 and len(llm.requests) == 1 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(main(Path(tmp) / "scorer.clj"))
