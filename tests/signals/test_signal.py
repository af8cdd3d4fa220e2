"""Signal: CloudEvents fields, correlation defaults, create(), uuid7 ids."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from hypothesis import given, strategies as st

from ptcflow.signals import Signal, _signal as _sig, new_id, uuid7

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_uuid7_format_version_and_variant() -> None:
    for _ in range(200):
        text = uuid7()
        assert UUID_RE.match(text), text
        parsed = uuid.UUID(text)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122


def test_uuid7_carries_the_unix_millisecond_time() -> None:
    before = time.time_ns() // 1_000_000
    value = uuid.UUID(uuid7()).int
    after = time.time_ns() // 1_000_000
    assert before <= value >> 80 <= after


def test_uuid7_is_time_ordered_and_unique() -> None:
    ids = []
    for _ in range(5):
        ids.append(uuid7())
        ms = time.time_ns() // 1_000_000
        while time.time_ns() // 1_000_000 == ms:  # step into the next millisecond
            pass
    assert ids == sorted(ids)
    many = [uuid7() for _ in range(10_000)]
    assert len(set(many)) == len(many)


def test_new_id_prefix() -> None:
    rid = new_id("run_")
    assert rid.startswith("run_") and UUID_RE.match(rid[4:])
    assert UUID_RE.match(new_id())


def test_create_fills_id_time_and_defaults() -> None:
    s = Signal.create("ai.usage", {"x": 1}, run_id="run_1", seq=3, iteration=2)
    assert UUID_RE.match(s.id)
    assert s.time.endswith("Z")
    parsed = datetime.fromisoformat(s.time.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None
    assert (s.type, s.source, s.data, s.specversion) == ("ai.usage", "ptcflow", {"x": 1}, "1.0")
    assert (s.run_id, s.seq, s.iteration) == ("run_1", 3, 2)
    assert s.request_id is s.call_id is s.parent_run_id is s.causation_id is None
    assert s.traceparent is None and s.subject is None
    assert Signal.create("x", source="me").source == "me"


def test_signal_fields_cover_cloudevents_and_correlation() -> None:
    fields = set(Signal.__struct_fields__)
    assert {"id", "source", "type", "subject", "time", "data", "specversion"} <= fields
    assert {
        "run_id",
        "request_id",
        "call_id",
        "iteration",
        "seq",
        "parent_run_id",
        "causation_id",
        "traceparent",
    } <= fields


def test_signals_are_frozen_and_hashable_without_data() -> None:
    s = Signal.create("ai.usage")
    with pytest.raises(AttributeError):
        s.seq = 1  # type: ignore[misc]
    assert hash(s) == hash(msgspec.structs.replace(s))
    assert msgspec.structs.replace(s, seq=9).seq == 9


def test_signal_json_carries_specversion_and_round_trips() -> None:
    s = Signal(type="ai.usage", source="s", id="i", time="t")
    encoded = msgspec.json.decode(msgspec.json.encode(s))
    assert encoded["specversion"] == "1.0"  # CloudEvents JSON requires it, even at its default
    assert msgspec.json.decode(msgspec.json.encode(s), type=Signal) == s


def test_uuid7_is_strictly_increasing_within_a_millisecond() -> None:
    ids = [uuid7() for _ in range(20_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(UUID_RE.match(i) for i in ids[::997])


def test_signal_time_is_rfc3339_utc_with_milliseconds() -> None:
    before = datetime.now(UTC)
    s = Signal.create("ai.usage")
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s.time)
    stamp = datetime.fromisoformat(s.time.replace("Z", "+00:00"))
    assert before - timedelta(milliseconds=1) <= stamp <= after + timedelta(milliseconds=1)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert uuid.UUID(s.id).int >> 80 == (stamp - epoch) // timedelta(milliseconds=1)


def test_uuid7_is_unique_across_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(lambda _: [uuid7() for _ in range(5_000)], range(4)))
    ids = [i for batch in batches for i in batch]
    assert len(set(ids)) == len(ids)
    for batch in batches:
        assert batch == sorted(batch)


def test_create_accepts_every_field_but_id_and_time() -> None:
    fields = {
        "subject": "sub",
        "specversion": "1.0",
        "run_id": "r",
        "request_id": "q",
        "call_id": "c",
        "iteration": 4,
        "seq": 9,
        "parent_run_id": "p",
        "causation_id": "d",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "metadata": {"origin": "action"},
    }
    s = Signal.create("ai.usage", 1, source="src", **fields)  # type: ignore[arg-type]
    assert {k: getattr(s, k) for k in fields} == fields
    assert (s.type, s.data, s.source) == ("ai.usage", 1, "src")
    assert set(fields) | {"type", "data", "source", "id", "time"} == set(Signal.__struct_fields__)
    with pytest.raises(TypeError):
        Signal.create("ai.usage", id="mine")  # type: ignore[call-arg]


# -- the per-millisecond prefix (_refresh) ------------------------------------------------

MS = st.integers(min_value=0, max_value=(1 << 48) - 1)
BITS = st.integers(min_value=0, max_value=(1 << 42) - 1)


def _prefix(ms: int, bits: int) -> str:
    """The id prefix ``_refresh`` makes for ``ms`` with the process's random ``bits``."""
    saved = (_sig._bits, _sig._cache)
    try:
        _sig._bits = bits
        return _sig._refresh(ms)[1]
    finally:
        _sig._bits, _sig._cache = saved


def _mix(ms: int) -> int:
    return ((ms * 0x9E3779B97F4A7C15) % (1 << 64)) >> 22  # an independent spelling


@given(MS, BITS)
def test_refresh_lays_out_time_version_variant_and_random_bits(ms: int, bits: int) -> None:
    text = _prefix(ms, bits) + "00000000"
    assert UUID_RE.match(text), text
    value = uuid.UUID(text).int
    assert value >> 80 == ms
    assert (value >> 76) & 0xF == 7 and (value >> 62) & 0b11 == 0b10
    random_bits = ((value >> 64) & 0xFFF) << 30 | (value >> 32) & 0x3FFF_FFFF
    assert random_bits == bits ^ _mix(ms)
    assert value & 0xFFFF_FFFF == 0


@given(MS, MS, BITS)
def test_prefixes_sort_by_millisecond(a: int, b: int, bits: int) -> None:
    if a != b:
        assert (_prefix(a, bits) < _prefix(b, bits)) == (a < b)


@given(MS, BITS, BITS)
def test_processes_with_different_bits_differ_in_every_millisecond(
    ms: int, mine: int, theirs: int
) -> None:
    assert (_prefix(ms, mine) == _prefix(ms, theirs)) == (mine == theirs)


def test_the_random_bits_vary_from_one_millisecond_to_the_next() -> None:
    # Not constant per process: the 42 bits change with the millisecond.
    assert len({_mix(ms) for ms in range(1_700_000_000_000, 1_700_000_001_000)}) == 1000
    assert len({_prefix(ms, 0)[-14:] for ms in range(1_700_000_000_000, 1_700_000_000_100)}) == 100


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_draws_new_bits_and_a_new_counter() -> None:
    # In a fresh interpreter (single-threaded, so forking is safe there).
    script = """
import os, sys
from ptcflow.signals import _signal as s
s.uuid7()
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, f"{s._bits} {next(s._counter)}".encode())
    os._exit(0)
os.waitpid(pid, 0)
child_bits, child_count = map(int, os.read(read, 100).split())
print(child_bits != s._bits, child_count != next(s._counter))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True"]
