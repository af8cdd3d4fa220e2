"""Benchmark: signature validation against ``msgspec.convert`` on equivalent types.

Validates 100,000 nested records of
``[{id :int, name :string, tags [:string], owner {id :int, email :string?}}]`` and prints
the median time (µs) of several repeats next to ``msgspec.convert`` into equivalent msgspec
Structs and TypedDicts, measured in the same run. Invalid data (one bad field per record)
is timed at 10k and 100k records to show the slow path stays linear.

Run:  .venv/bin/python bench/signature_validate.py [--repeats 7] [--records 100000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

import msgspec

from ptcflow.signature import parse
from ptcflow.signature._validate import _Ctx, compile_type

SIGNATURE = "[{id :int, name :string, tags [:string], owner {id :int, email :string?}}]"


class Keyword:
    """A stand-in for the PTC-Lisp keyword type (keys as ``:id``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name) ^ 0x5BD1E995

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyword) and other.name == self.name


def keywordize(value: Any) -> Any:
    """Turn every str map key into a :class:`Keyword`, as PTC-Lisp data has them."""
    if isinstance(value, dict):
        return {Keyword(k): keywordize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keywordize(v) for v in value]
    return value


class Owner(msgspec.Struct):
    id: int
    email: str | None = None


class Record(msgspec.Struct):
    id: int
    name: str
    tags: list[str]
    owner: Owner


class OwnerTD(TypedDict):
    id: int
    email: NotRequired[str | None]


class RecordTD(TypedDict):
    id: int
    name: str
    tags: list[str]
    owner: OwnerTD


def make_records(count: int, *, invalid: bool = False) -> list[dict[str, Any]]:
    """Build ``count`` records; with ``invalid`` every record has a string owner id."""
    records: list[dict[str, Any]] = []
    for i in range(count):
        owner: dict[str, Any] = {"id": f"x{i}" if invalid else i % 97}
        if i % 2:
            owner["email"] = f"user{i}@example.com"
        records.append(
            {"id": i, "name": f"item {i}", "tags": ["a", "b", str(i % 7)], "owner": owner}
        )
    return records


def median_us(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, in microseconds."""
    times: list[float] = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def main() -> None:
    """Run the benchmark and print a small table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--records", type=int, default=100_000)
    options = parser.parse_args()
    repeats = max(5, options.repeats)
    count = options.records

    sig = parse(SIGNATURE)
    valid = make_records(count)
    assert sig.validate_output(valid).ok
    assert sig.validate_output(valid, mode="strict").ok
    assert msgspec.convert(valid, list[Record])

    rows: list[tuple[str, float]] = []
    t_struct = median_us(lambda: msgspec.convert(valid, list[Record]), repeats)
    t_td = median_us(lambda: msgspec.convert(valid, list[RecordTD]), repeats)
    rows.append(("msgspec.convert -> list[Struct]", t_struct))
    rows.append(("msgspec.convert -> list[TypedDict]", t_td))
    floor = min(t_struct, t_td)
    rows.append(
        ("validate_output (enabled)", median_us(lambda: sig.validate_output(valid), repeats))
    )
    rows.append(
        (
            "validate_output (strict)",
            median_us(lambda: sig.validate_output(valid, mode="strict"), repeats),
        )
    )
    isig = parse(f"(records {SIGNATURE}) -> :any")
    args = {"records": valid}
    assert isig.validate_input(args).ok
    rows.append(("validate_input (enabled)", median_us(lambda: isig.validate_input(args), repeats)))

    slow = compile_type(sig.output, coerce=False, strict=False).check
    rows.append(
        (
            "slow path only (closures), str keys",
            median_us(lambda: slow(valid, None, _Ctx()), repeats),
        )
    )
    lisp_data = keywordize(valid)
    assert sig.validate_output(lisp_data).ok
    rows.append(
        (
            "validate_output, keyword keys",
            median_us(lambda: sig.validate_output(lisp_data), repeats),
        )
    )

    print(f"signature: {SIGNATURE}")
    print(f"valid data, {count:,} records, median of {repeats} runs:")
    for label, micros in rows:
        print(f"  {label:<38} {micros:>12,.0f} µs   {micros / floor:5.2f}x msgspec")

    print("invalid data (every owner.id is a string; every error collected):")
    for size in (count // 10, count):
        bad = make_records(size, invalid=True)
        result = sig.validate_output(bad)
        assert len(result.errors) == size, len(result.errors)
        micros = median_us(lambda bad=bad: sig.validate_output(bad), repeats)  # type: ignore[misc]
        print(f"  {size:>9,} records {micros:>14,.0f} µs   {micros / size:6.2f} µs/record")


if __name__ == "__main__":
    main()
