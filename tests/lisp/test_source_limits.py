"""Program text is bounded, and reading, analysis and compilation are charged to the run:
its steps, its deadline, and the event loop's turns."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from ptcflow.lisp import PARSE_MAX_CHARS, LimitExceeded, Limits, analyze, parse, run_sync
from ptcflow.lisp.limits import Budget

LONG = " ".join(f"(+ {i} 1)" for i in range(1800))  # ~18,700 characters, 7,200 tokens


def test_source_over_the_limit_is_refused_before_it_is_read() -> None:
    big_string = '(count "' + "x" * 5_000_000 + '")'
    big_map = "(count {" + " ".join(f":k{i} {i}" for i in range(100_000)) + "})"
    for source in (big_string, big_map):
        tracemalloc.start()
        start = time.perf_counter()
        try:
            result = run_sync(source)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert result.error is not None and getattr(result.error, "limit", "") == "max_source_chars"
        assert "over the limit of 20000" in result.error.message
        assert time.perf_counter() - start < 1
        assert peak < 1_000_000  # nothing was read or built


def test_the_source_limit_is_configurable() -> None:
    source = "(count [" + " ".join(["1"] * 30_000) + "])"  # 60,000 characters
    assert run_sync(source).error is not None
    result = run_sync(source, limits=Limits(max_source_chars=100_000))
    assert result.error is None and result.value == 30_000


def test_reading_and_analysis_count_steps() -> None:
    called = []

    def tool(args: dict[str, object]) -> int:
        called.append(args)
        return 1

    source = '(call "t" {}) ' + LONG
    result = run_sync(source, tools={"t": tool}, limits=Limits(max_steps=5_000))
    assert result.error is not None and getattr(result.error, "limit", "") == "max_steps"
    assert result.error.line is None  # before any form ran: no tool was called
    assert called == []


def test_reading_and_analysis_count_against_the_deadline() -> None:
    start = time.perf_counter()
    result = run_sync(LONG, limits=Limits(timeout_ms=5))
    assert result.error is not None and result.error.category == "timeout"
    assert time.perf_counter() - start < 1


def test_a_regex_compilation_counts_steps() -> None:
    source = '(count (map #(re-pattern (str "a" % "b")) (range 3000)))'
    assert run_sync(source).value == 3000
    result = run_sync(source, limits=Limits(max_steps=50_000))
    assert result.error is not None and getattr(result.error, "limit", "") == "max_steps"


def test_parse_and_analyze_outside_a_run_are_not_charged() -> None:
    budget = Budget(Limits())
    assert len(parse(LONG)) == 1800
    assert analyze(LONG).nslots == 0
    assert budget.steps == 0


def test_parse_refuses_a_text_over_max_chars_before_reading_it() -> None:
    big = '(count "' + "x" * 5_000_000 + '")'
    for read in (parse, analyze):
        tracemalloc.start()
        try:
            with pytest.raises(LimitExceeded) as info:
                read(big)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert info.value.limit == "max_source_chars"
        assert f"over max_chars={PARSE_MAX_CHARS}" in info.value.message
        assert peak < 1_000_000  # nothing was read
    assert len(parse("(+ 1 2)", max_chars=7)) == 1
    with pytest.raises(LimitExceeded):
        parse("(+ 1 2)", max_chars=6)


def test_a_long_string_literal_reads_in_memory_proportional_to_its_length() -> None:
    # The token pattern once kept backtracking state per character: 5 MB of string
    # literal took 1.1 GB and 4 s to read.
    text = "x" * 2_000_000 + '\\n\\"'
    tracemalloc.start()
    try:
        (form,) = parse(f'"{text}"', max_chars=3_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert form.value == "x" * 2_000_000 + '\n"'  # type: ignore[attr-defined]
    assert peak < 20_000_000
