"""The run journal: typed round-trips, streams and paths, malformed lines, bus recording."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.signals import (
    DATA_TYPES,
    TOOL_RESULT,
    JournalError,
    JournalWriter,
    Ok,
    Signal,
    SignalBus,
    SignalOverflowError,
    ToolResultData,
    Usage,
    UsageData,
    decode_signal,
    decode_signals,
    encode_signal,
    read_journal,
    record_journal,
)

from .strategies import signals


@pytest.mark.parametrize("kind", sorted(DATA_TYPES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip_is_exact_for_every_data_type(kind: str, data: st.DataObject) -> None:
    signal = data.draw(signals(kind))
    back = decode_signal(encode_signal(signal))
    assert back == signal
    assert type(back.data) is type(signal.data) is DATA_TYPES[kind]


@settings(max_examples=30, deadline=None)
@given(st.lists(signals(), max_size=6))
def test_writer_and_reader_round_trip_a_whole_journal(batch: list[Signal]) -> None:
    text, binary = io.StringIO(), io.BytesIO()
    with JournalWriter(text) as a, JournalWriter(binary) as b:
        for s in batch:
            a.write(s)
        assert b.write_all(batch) == len(batch)
    assert a.count == b.count == len(batch)
    assert read_journal(io.StringIO(text.getvalue()), all_runs=True) == batch
    assert read_journal(binary.getvalue().splitlines(), all_runs=True) == batch


@settings(max_examples=40, deadline=None)
@given(st.lists(signals(), max_size=8))
def test_decoding_lines_at_once_equals_decoding_each(batch: list[Signal]) -> None:
    lines = [encode_signal(s) for s in batch]
    assert decode_signals(lines) == [decode_signal(line) for line in lines] == batch


def test_decoding_lines_at_once_names_the_bad_line() -> None:
    good = encode_signal(Signal.create("ai.usage", UsageData(usage=Usage()), run_id="r", seq=1))
    with pytest.raises(JournalError, match="journal line 2 is not a signal"):
        decode_signals([good, b"{not json", good])
    bad_data = good.replace(b'"usage":{', b'"usage":{"input_tokens":"many",', 1)
    with pytest.raises(JournalError, match=r"journal line 2: data of the 'ai.usage' signal"):
        decode_signals([good, bad_data])


def test_path_target_appends_when_asked_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first = Signal.create("ai.usage", UsageData(usage=Usage(input_tokens=1)), run_id="r", seq=1)
    second = Signal.create("ai.request.started", run_id="r", seq=0)
    with JournalWriter(path) as journal:
        journal.write(first)
    with JournalWriter(str(path), append=True) as journal:
        journal.write(second)
        journal.close()  # idempotent
    assert read_journal(path) == [first, second]
    assert read_journal(str(path)) == [first, second]
    with path.open("rb") as f:
        assert read_journal(f) == [first, second]


def test_data_none_and_unknown_types_are_kept() -> None:
    custom = Signal.create("app.custom", {"k": [1, "two"], "n": None}, run_id="r")
    bare = Signal.create("ai.usage", run_id="r")
    assert read_journal([encode_signal(custom), encode_signal(bare)]) == [custom, bare]


def test_unencodable_payloads_are_written_sanitized() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "<Thing>"

    signal = Signal.create(
        TOOL_RESULT, ToolResultData(tool_name="t", result=Ok(payload={"x": Thing()}))
    )
    back = decode_signal(encode_signal(signal))
    assert back.data == ToolResultData(tool_name="t", result=Ok(payload={"x": "<Thing>"}))


def test_blank_lines_are_skipped() -> None:
    line = encode_signal(Signal.create("ai.usage", seq=5))
    assert [s.seq for s in read_journal(["", line, b"\n", "   "])] == [5]


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["not json"], r"journal line 1 is not a signal"),
        (
            ["", '{"source": "x"}'],
            r"journal line 2 is not a signal: Object missing required field `type`",
        ),
        (['["a list"]'], r"journal line 1 is not a signal"),
        (
            [
                '{"type":"ai.usage","source":"s","id":"i","time":"t","data":{"usage":{"input_tokens":"a"}}}'
            ],
            r"journal line 1: data of the 'ai.usage' signal is not a valid UsageData: .*`\$\.data\.usage\.input_tokens`",
        ),
        (
            ['{"type":"ai.tool.result","source":"s","id":"i","time":"t","data":{"tool_name":"x"}}'],
            r"not a valid ToolResultData: Object missing required field `result`",
        ),
        (
            [
                '{"type":"ai.tool.result","source":"s","id":"i","time":"t","data":{"tool_name":"x","result":{"status":"maybe"}}}'
            ],
            r"ToolResultData: Invalid value 'maybe'",
        ),
    ],
)
def test_malformed_lines_name_the_line(lines: list[str], match: str) -> None:
    with pytest.raises(JournalError, match=match):
        read_journal(lines)


def test_non_text_lines_are_rejected() -> None:
    with pytest.raises(JournalError, match="journal line 1 is a int"):
        read_journal([1])  # type: ignore[list-item]


def test_writer_rejects_non_streams() -> None:
    with pytest.raises(UsageError, match="file path or a writable stream"):
        JournalWriter(42)  # type: ignore[arg-type]


def test_missing_file_raises_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_journal(tmp_path / "nope.jsonl")


def test_journal_lines_are_plain_json() -> None:
    signal = Signal.create("ai.usage", UsageData(usage=Usage(output_tokens=2)), run_id="r")
    obj = msgspec.json.decode(encode_signal(signal))
    assert obj["data"] == {
        "usage": {
            "input_tokens": 0,
            "output_tokens": 2,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
        "model": "",
    }


@pytest.mark.anyio
async def test_record_journal_writes_the_run_in_order() -> None:
    bus = SignalBus()
    out = io.StringIO()
    async with record_journal(bus, out, run_id="r1") as journal:
        for n in range(3):
            bus.publish(Signal.create("ai.usage", run_id="r1", seq=n))
            await anyio.wait_all_tasks_blocked()
        bus.publish(Signal.create("ai.usage", run_id="other", seq=99))
        for n in range(3, 6):  # published without yielding: written on exit
            bus.publish(Signal.create("ai.usage", run_id="r1", seq=n))
    assert journal.count == 6
    assert [s.seq for s in read_journal(io.StringIO(out.getvalue()))] == list(range(6))
    assert bus.statistics().subscribers == 0


@pytest.mark.anyio
async def test_record_journal_keeps_what_was_published_when_the_body_fails(
    tmp_path: Path,
) -> None:
    bus = SignalBus()
    path = tmp_path / "j.jsonl"
    with pytest.raises(ZeroDivisionError):
        async with record_journal(bus, path, pattern="ai.*"):
            bus.publish(Signal.create("ai.usage", seq=1))
            bus.publish(Signal.create("other.thing", seq=2))
            1 / 0  # noqa: B018
    assert [s.seq for s in read_journal(path)] == [1]


@pytest.mark.anyio
async def test_record_journal_fails_loudly_when_it_falls_behind() -> None:
    bus = SignalBus()
    out = io.StringIO()
    writer = JournalWriter(out)
    with pytest.raises(SignalOverflowError, match="buffer of 2"):
        async with record_journal(bus, writer, buffer=2):
            for n in range(3):
                bus.publish(Signal.create("ai.usage", seq=n))
            await anyio.wait_all_tasks_blocked()
            bus.publish(Signal.create("ai.usage", seq=3))
    assert [s.seq for s in read_journal(io.StringIO(out.getvalue()))] == [0, 1]


@pytest.mark.anyio
async def test_record_journal_is_cancellable_and_keeps_what_was_published() -> None:
    bus = SignalBus()
    out = io.StringIO()
    with anyio.CancelScope() as scope:
        async with record_journal(bus, out):
            bus.publish(Signal.create("ai.usage", seq=1))
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert [s.seq for s in read_journal(io.StringIO(out.getvalue()))] == [1]
    assert bus.statistics().subscribers == 0


def test_journal_lines_are_cloudevents_json_with_every_required_attribute() -> None:
    signal = Signal.create("ai.usage", UsageData(usage=Usage(input_tokens=1)), run_id="run_1")
    line = msgspec.json.decode(encode_signal(signal))
    for attribute in ("specversion", "id", "source", "type"):
        assert line[attribute], f"CloudEvents JSON requires {attribute!r}"
    assert line["specversion"] == "1.0"
