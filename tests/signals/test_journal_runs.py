"""Journals never mix runs silently: writing refuses a used file, reading names the run."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, strategies as st

from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.signals import (
    JournalError,
    JournalWriter,
    Secrets,
    Signal,
    SignalBus,
    encode_signal,
    journal_runs,
    read_journal,
    record_journal,
)
from ptcflow.strategies import ReAct, replay
from ptcflow.testing import ScriptedLLM

ROOT = Path(__file__).resolve().parents[2]


async def two_runs(path: Path, append: bool) -> None:
    for run_id in ("run_a", "run_b"):
        bus = SignalBus()
        async with (
            record_journal(bus, path, run_id=run_id, append=append),
            Runtime(llm=ScriptedLLM(["hello"]), bus=bus) as rt,
        ):
            await rt.run(ReAct(), f"question {run_id}", run_id=run_id)


def test_a_used_file_is_refused_unless_appending(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with pytest.raises(UsageError, match="already holds a journal; pass append=True"):
        anyio.run(two_runs, path, False)
    assert journal_runs(read_journal(path, all_runs=True)) == ["run_a"]
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    with JournalWriter(empty) as journal:  # an empty file is no journal yet
        journal.write(Signal.create("ai.usage", run_id="r"))
    assert len(read_journal(empty)) == 1


def test_several_runs_are_named_and_selected_by_id(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    anyio.run(two_runs, path, True)
    with pytest.raises(JournalError) as info:
        read_journal(path)
    assert str(info.value) == (
        f"journal {path} holds 2 runs ('run_a', 'run_b'); pass run_id=... to read one of "
        "them, or all_runs=True to read every signal"
    )
    a = read_journal(path, run_id="run_a")
    assert {s.run_id for s in a} == {"run_a"}
    assert a[0].data.input == "question run_a"
    every = read_journal(path, all_runs=True)
    assert len(every) == len(a) + len(read_journal(path, run_id="run_b"))
    with pytest.raises(JournalError, match="has no run 'run_c'; the runs in it: 'run_a', 'run_b'"):
        read_journal(path, run_id="run_c")
    with pytest.raises(UsageError, match=r"replay\(\) got the signals of 2 runs"):
        replay(ReAct(), every)
    assert replay(ReAct(), every, run_id="run_b").status == "completed"
    with pytest.raises(UsageError, match="of run 'run_z'"):
        replay(ReAct(), every, run_id="run_z")


def test_child_runs_come_with_their_parent() -> None:
    lines = [
        encode_signal(Signal.create("ai.request.started", run_id="p", seq=1)),
        encode_signal(Signal.create("ai.request.started", run_id="c", parent_run_id="p")),
        encode_signal(Signal.create("ai.usage", run_id="g", parent_run_id="c")),
        encode_signal(Signal.create("ai.usage", run_id="other")),
    ]
    assert journal_runs(read_journal(lines, all_runs=True)) == ["p", "other"]
    assert {s.run_id for s in read_journal(lines, run_id="p")} == {"p", "c", "g"}
    assert {s.run_id for s in read_journal(lines, run_id="c")} == {"c", "g"}


def test_secrets_are_scrubbed_from_every_line() -> None:
    key = "sk-journal-0123456789abcdef"
    out = io.StringIO()
    with JournalWriter(out, secrets=Secrets([key])) as journal:
        journal.write(Signal.create("app.note", {"echo": key[:12]}, run_id="r"))
        journal.write_all([Signal.create("app.note", {"echo": key}, run_id="r")])
    assert key[:8] not in out.getvalue() and out.getvalue().count("[REDACTED]") == 2
    binary = io.BytesIO()
    with JournalWriter(binary, secrets=Secrets([key])) as journal:
        journal.write_all([Signal.create("app.note", {"echo": key}, run_id="r")])
    assert key[:8].encode() not in binary.getvalue()


@given(st.binary(max_size=200))
def test_any_bytes_are_a_signal_or_a_journal_error(line: bytes) -> None:
    try:
        read_journal([line], all_runs=True)
    except JournalError:
        pass


@given(st.text(max_size=200))
def test_any_text_is_a_signal_or_a_journal_error(line: str) -> None:
    try:
        read_journal([line], all_runs=True)
    except JournalError:
        pass


def mutated(data: Any) -> st.SearchStrategy[bytes]:
    return st.binary(max_size=8).map(lambda junk: data[: len(data) // 2] + junk)


@given(
    st.sampled_from(
        [
            b'{"type":"ai.usage","source":"s","id":"1","time":"t","data":{"model":"\xff"}}',
            b'{"type":"x\xff","source":"s","id":"1","time":"t"}',
            b'{"type":"app.x","source":"s","id":"1","time":"t","data":"\xfe"}',
            '{"type":"ai.usage","source":"s","id":"1","time":"t","data":{"model":"\ud800"}}',
        ]
    )
)
def test_invalid_utf8_inside_a_string_is_a_journal_error(line: str | bytes) -> None:
    with pytest.raises(JournalError, match="not valid UTF-8"):
        read_journal([line])


def test_the_replay_example_exits_non_zero_on_a_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location(
        "replay_example", ROOT / "examples/replay_journal.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    path = tmp_path / "run.jsonl"
    assert example.cli([str(path)]) == 0
    assert example.cli([str(path)]) == 2  # the file holds a journal now
    assert "already holds a journal" in capsys.readouterr().err
    real = example.replay

    def diverging(*args: Any, **kwargs: Any) -> Any:
        state = real(*args, **kwargs)
        return msgspec.structs.replace(state, iteration=state.iteration + 1)

    monkeypatch.setattr(example, "replay", diverging)
    assert example.cli([str(tmp_path / "other.jsonl")]) == 1
    assert "same final state as the live run: False" in capsys.readouterr().out
