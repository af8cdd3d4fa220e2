"""CompiledAgent: execute on input maps, batches that survive failures, as_tool, save/load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from ptcflow import CompiledAgent, SubAgent, Tool
from ptcflow.agent import CompiledFileError, CompiledMetadata
from ptcflow.errors import UsageError
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio

SIG = "(n :int) -> {half :int}"
HALVE = """(defn halve [n]
  (cond
    (neg? n) (fail {:reason :negative :message "n must be >= 0" :op "halve"})
    (= n 7) {:half "seven"}
    (= n 13) (/ n 0)
    :else {:half (quot n 2)}))"""


def halver(**kw: Any) -> CompiledAgent:
    return CompiledAgent(source=HALVE, signature=SIG, name="halver", **kw)


async def test_execute_takes_a_map_and_returns_a_step() -> None:
    step = await halver().execute({"n": 10})
    assert step.ok and step.value == {"half": 5} and step.reason == "returned"
    assert step.signature == SIG and step.turns == 0 and step.run_id == "halver/execute"


@pytest.mark.parametrize(
    ("given_input", "reason", "says"),
    [
        ({"n": "x"}, "invalid_input", 'n: expected int, got string "x"'),
        (
            [10],
            "invalid_input",
            'an input must be a map of the signature\'s parameters ({"n": ...})',
        ),
        ({}, "invalid_input", "n"),
        ({"n": -1}, "negative", "n must be >= 0"),
        ({"n": 7}, "invalid_return", 'half: expected int, got string "seven"'),
        ({"n": 13}, "program_error", "arithmetic error (line 5"),
    ],
)
async def test_a_failing_input_is_a_failed_step(given_input: Any, reason: str, says: str) -> None:
    step = await halver().execute(given_input)
    assert not step.ok and step.fail is not None
    assert step.fail.reason == reason and says in step.fail.message
    assert step.error is not None


async def test_the_programs_own_fail_is_reason_fail() -> None:
    step = await halver().execute({"n": -4})
    assert step.reason == "fail" and step.fail is not None and step.fail.op == "halve"
    assert step.error is not None and step.error.type == "fail"
    bad = CompiledAgent(source="(defn f [n] (fail 5))", signature=SIG)
    step = await bad.execute({"n": 1})
    assert step.fail is not None and step.fail.reason == "invalid_fail"
    returned = await halver().execute({"n": 7})
    assert returned.fail is not None and returned.fail.details["value"] == {"half": "seven"}


async def test_execute_many_keeps_order_and_isolates_failures() -> None:
    inputs: list[Any] = [{"n": i} for i in range(-2, 600)]
    inputs.insert(100, "not a map")
    steps = await halver().execute_many(inputs, chunk_size=64)
    assert len(steps) == len(inputs)
    assert [s.run_id for s in steps[:3]] == ["halver/0", "halver/1", "halver/2"]
    by_n = {inp["n"]: s for inp, s in zip(inputs, steps, strict=True) if isinstance(inp, dict)}
    assert by_n[10].value == {"half": 5} and by_n[599].value == {"half": 299}
    failed = {n: s.fail.reason for n, s in by_n.items() if s.fail is not None}
    assert failed == {-2: "negative", -1: "negative", 7: "invalid_return", 13: "program_error"}
    assert steps[100].fail is not None and steps[100].fail.reason == "invalid_input"


@given(st.lists(st.integers(min_value=-3, max_value=20), max_size=12), st.integers(1, 5))
def test_a_batch_gives_each_input_the_step_it_gets_alone(ns: list[int], chunk: int) -> None:
    agent = halver()
    inputs = [{"n": n} for n in ns]
    batched = agent.execute_many_sync(inputs, chunk_size=chunk)
    alone = [agent.execute_sync(i) for i in inputs]
    assert [(s.ok, s.value, s.fail) for s in batched] == [(s.ok, s.value, s.fail) for s in alone]


def test_a_chunk_that_fails_does_not_call_its_tools_again() -> None:
    calls: list[int] = []

    def rate(n: int) -> int:
        """A pure lookup."""
        calls.append(n)
        return n * 10

    agent = CompiledAgent(
        source='(defn f [n] (let [r (call "rate" {:n n})] (if (= n 3) (fail {:reason :three :message "3"}) {:half r})))',
        signature=SIG,
        tools=[Tool.from_function(rate, blocking=False)],
    )
    steps = agent.execute_many_sync([{"n": n} for n in range(6)], chunk_size=6)
    assert [s.ok for s in steps] == [True, True, True, False, True, True]
    assert steps[5].value == {"half": 50}
    # the chunk stopped at 3 and its inputs ran again alone: 0-3 answered from the chunk's
    # calls, 4 and 5 called once each
    assert sorted(calls) == [0, 1, 2, 3, 4, 5]


def test_a_runaway_input_fails_alone_within_its_limits() -> None:
    agent = CompiledAgent(
        source="(defn f [n] (if (= n 2) (loop [i 0] (recur (inc i))) {:half n}))",
        signature=SIG,
        program_limits={"max_loop_iterations": 1000},
    )
    steps = agent.execute_many_sync([{"n": n} for n in range(5)])
    assert [s.ok for s in steps] == [True, True, False, True, True]
    assert steps[2].fail is not None and "limit" in steps[2].fail.message


def test_execute_many_checks_chunk_size_and_sync_forms_refuse_a_loop() -> None:
    with pytest.raises(UsageError, match="chunk_size"):
        halver().execute_many_sync([], chunk_size=0)
    assert halver().execute_many_sync([]) == []
    assert halver().execute_sync({"n": 4}, backend="trio").value == {"half": 2}


async def test_sync_forms_refuse_a_running_loop() -> None:
    with pytest.raises(UsageError, match=r"await compiled\.execute"):
        halver().execute_sync({"n": 1})
    with pytest.raises(UsageError, match=r"await compiled\.execute_many"):
        halver().execute_many_sync([])


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("", "non-empty string"),
        ("(defn f [n] 1) (f 2)", "line 1: a compiled program holds only definitions"),
        ("(def k 2)", "defines no function"),
        ("(defn f [n] (memory/get :k))", "keeps no state"),
        ("(defn f [n] (defn g [] 1) n)", "(defn ...) inside a function"),
        ("(defn f [n] ctx/n)", "reads its input from its arguments"),
        ("(defn f [n] (nope n))", "unable to resolve symbol nope"),
        ('(defn f [n] (call "x" {}))', 'unknown tool "x"'),
    ],
)
def test_the_constructor_checks_the_program_once(source: str, says: str) -> None:
    with pytest.raises(UsageError) as info:
        CompiledAgent(source=source, signature=SIG)
    assert says in str(info.value)


def test_tools_that_call_a_model_and_bad_limits_are_refused() -> None:
    ask = Tool("ask", lambda q: q, signature="(q :string) -> :string", calls_model=True)
    with pytest.raises(UsageError, match="tool 'ask' calls a model"):
        CompiledAgent(source=HALVE, signature=SIG, tools=[ask])
    with pytest.raises(UsageError, match="program_limits"):
        CompiledAgent(source=HALVE, signature=SIG, program_limits={"nope": 1})


async def test_as_tool_needs_no_llm_and_reports_failures_as_tool_errors() -> None:
    tool = halver().as_tool(description="Halve a number.")
    assert tool.name == "halver" and not tool.calls_model
    assert tool.description == "Halve a number."
    parent = SubAgent(
        prompt="Halve {{a}} and {{b}}",
        signature="(a :int, b :int) -> {sum :int}",
        tools=[tool],
    )
    llm = ScriptedLLM(
        [
            '(call "halver" {:n -1})',
            '(return {:sum (+ (:half (call "halver" {:n ctx/a})) (:half (call "halver" {:n ctx/b})))})',
        ]
    )
    step = await parent.run(llm=llm, context={"a": 10, "b": 4})
    assert step.ok and step.value == {"sum": 7}
    assert "n must be >= 0" in llm.requests[1].messages[-1].content
    named = halver().as_tool(name="half_of")
    assert named.name == "half_of" and named.signature is not None


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    def rate(n: int) -> int:
        """A pure lookup."""
        return n

    meta = CompiledMetadata(compiled_at=_at(), tokens_used=12, llm_model="m")
    agent = CompiledAgent(
        source='(defn f [n] {:half (call "rate" {:n n})})',
        signature=SIG,
        tools=[rate],
        metadata=meta,
        name="rater",
        description="Rates\nthings.",
    )
    path = agent.save(tmp_path / "rater.clj")
    text = path.read_text()
    assert text.startswith(";; ptcflow compiled agent")
    assert ";; signature: (n :int) -> {half :int}\n" in text and ";; tools: rate\n" in text
    assert ";; description: Rates things.\n" in text
    assert text.endswith('(defn f [n] {:half (call "rate" {:n n})})\n')
    loaded = CompiledAgent.load(path, tools=[rate])
    assert loaded.source == agent.source and loaded.signature == SIG and loaded.name == "rater"
    assert loaded.metadata == meta
    assert loaded.execute_sync({"n": 8}).value == {"half": 8}


def _at() -> Any:
    from datetime import UTC, datetime

    return datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def test_load_refuses_tampered_and_mismatched_files(tmp_path: Path) -> None:
    path = halver().save(tmp_path / "halver.clj")
    good = path.read_text()
    path.write_text(good.replace("(quot n 2)", "(quot n 3)"))
    with pytest.raises(CompiledFileError, match="changed after it was saved"):
        CompiledAgent.load(path)
    reviewed = "\n".join(line for line in good.splitlines() if "sha256" not in line)
    path.write_text(reviewed.replace("(quot n 2)", "(quot n 3)"))
    assert CompiledAgent.load(path).execute_sync({"n": 9}).value == {"half": 3}

    other = SubAgent(prompt="Halve {{n}}", signature="(n :float) -> {half :float}")
    path.write_text(good)
    with pytest.raises(CompiledFileError, match=r"compiled for the signature \(n :int\)"):
        CompiledAgent.load(path, agent=other)
    same = SubAgent(prompt="Halve {{n}}", signature=SIG, name="agent-name")
    assert CompiledAgent.load(path, agent=same).name == "halver"

    path.write_text(good.replace(";; name: halver", ";; name: halver\n;; tools: rate"))
    with pytest.raises(CompiledFileError, match="uses the tool 'rate', which was not given"):
        CompiledAgent.load(path)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda t: t.replace(";; ptcflow", ";; other"), "not a saved compiled agent"),
        (lambda t: t.replace(";; turns: 1", ";; turns: one"), "metadata line"),
        (lambda t: t.replace(";; turns: 1", ";; color: red"), "is not a header line"),
        (lambda t: t.replace(";; turns: 1", ";; turns: 1\n;; turns: 2"), "given twice"),
        (lambda t: t.replace(";; signature: (n :int) -> {half :int}\n", ""), "no ';; signature:'"),
        (lambda t: t.replace(";; signature: (n :int)", ";; signature: (n :nope)"), "signature"),
    ],
)
def test_load_explains_a_malformed_header(tmp_path: Path, edit: Any, says: str) -> None:
    path = halver().save(tmp_path / "h.clj")
    path.write_text(edit(path.read_text()))
    with pytest.raises(CompiledFileError, match=says):
        CompiledAgent.load(path)


def test_load_checks_the_program_again(tmp_path: Path) -> None:
    path = tmp_path / "h.clj"
    halver().save(path)
    text = "\n".join(line for line in path.read_text().splitlines() if "sha256" not in line)
    path.write_text(text + "\n(halve 3)\n")
    with pytest.raises(CompiledFileError, match="only definitions"):
        CompiledAgent.load(path)
    assert "halver" in repr(halver()) and "chars" in repr(halver())
