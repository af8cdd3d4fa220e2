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
from typing import Any, ClassVar, NotRequired, TypedDict

import msgspec

from ptcflow.signature import parse
from ptcflow.signature._validate import _Ctx, compile_type

SIGNATURE = "[{id :int, name :string, tags [:string], owner {id :int, email :string?}}]"


class Keyword:
    """A stand-in for the PTC-Lisp keyword (``:id``): interned, hashed by identity."""

    __slots__ = ("name",)
    _interned: ClassVar[dict[str, Keyword]] = {}

    def __new__(cls, name: str) -> Keyword:
        found = cls._interned.get(name)
        if found is None:
            found = object.__new__(cls)
            found.name = name
            cls._interned[name] = found
        return found

    name: str


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


def median_us(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median wall time (µs) of each case over ``repeats`` rounds.

    The cases are interleaved round by round, so a change in machine load affects all of
    them alike and the ratios stay meaningful on a busy machine.
    """
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(repeats):
        for label, fn in cases.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            times[label].append((time.perf_counter() - start) * 1e6)
    return {label: statistics.median(values) for label, values in times.items()}


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

    isig = parse(f"(records {SIGNATURE}) -> :any")
    args = {"records": valid}
    assert isig.validate_input(args).ok
    slow = compile_type(sig.output, coerce=False, strict=False).check
    lisp_data = keywordize(valid)
    assert sig.validate_output(lisp_data).ok

    cases: dict[str, Callable[[], object]] = {
        "msgspec.convert -> list[Struct]": lambda: msgspec.convert(valid, list[Record]),
        "msgspec.convert -> list[TypedDict]": lambda: msgspec.convert(valid, list[RecordTD]),
        "validate_output (enabled)": lambda: sig.validate_output(valid),
        "validate_output (strict)": lambda: sig.validate_output(valid, mode="strict"),
        "validate_input (enabled)": lambda: isig.validate_input(args),
        "slow path only (closures), str keys": lambda: slow(valid, None, _Ctx()),
        "validate_output, keyword keys": lambda: sig.validate_output(lisp_data),
    }
    medians = median_us(cases, repeats)
    floor = min(
        medians["msgspec.convert -> list[Struct]"], medians["msgspec.convert -> list[TypedDict]"]
    )
    rows = list(medians.items())

    print(f"signature: {SIGNATURE}")
    print(f"valid data, {count:,} records, median of {repeats} runs:")
    for label, micros in rows:
        print(f"  {label:<38} {micros:>12,.0f} µs   {micros / floor:5.2f}x msgspec")

    print("invalid data (every owner.id is a string; every error collected):")
    for size in (count // 10, count):
        bad = make_records(size, invalid=True)
        result = sig.validate_output(bad)
        assert len(result.errors) == size, len(result.errors)
        micros = median_us({"bad": lambda bad=bad: sig.validate_output(bad)}, repeats)["bad"]  # type: ignore[misc]
        print(f"  {size:>9,} records {micros:>14,.0f} µs   {micros / size:6.2f} µs/record")


if __name__ == "__main__":
    main()
