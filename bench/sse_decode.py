"""Benchmark: the providers' SSE decoder, and why it is not replaced by ``httpx-sse``.

Decodes a body of short events (``data: {"x":1}`` + blank line, 16 bytes each) of 1, 2 and
4 MiB, delivered in reads of the whole body, 64 KiB and 1 KiB, and prints the median time
of several repeats. Next to it, measured in the same run:

* ``httpx-sse`` (``EventSource(...).iter_sse()`` over an ``httpx.Response`` streaming the
  same reads), when it is installed (``pip install httpx-sse``; not a dependency);
* the per-MiB time, which stays flat when decoding is linear in the body size.

Run:  .venv/bin/python bench/sse_decode.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable

from ptcflow.providers._sse import SSEDecoder

EVENT = b'data: {"x":1}\n\n'
MIB = 1 << 20


def ours(body: bytes, read: int) -> int:
    """Events decoded by ptcflow's decoder, fed ``read`` bytes at a time."""
    decoder = SSEDecoder()
    count = 0
    for start in range(0, len(body), read):
        count += len(decoder.feed(body[start : start + read]))
    return count + len(decoder.flush())


def httpx_sse(body: bytes, read: int) -> int:  # pragma: no cover - optional package
    """Events decoded by ``httpx-sse`` from a streamed ``httpx.Response``."""
    import httpx  # type: ignore[import-not-found]
    from httpx_sse import EventSource  # type: ignore[import-not-found]

    reads = [body[start : start + read] for start in range(0, len(body), read)]
    response = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=iter(reads)
    )
    return sum(1 for _ in EventSource(response).iter_sse())


def timed(fn: Callable[[bytes, int], int], body: bytes, read: int, repeats: int) -> float:
    """Median seconds of ``repeats`` calls; checks every event came out."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        count = fn(body, read)
        samples.append(time.perf_counter() - start)
        assert count == len(body) // len(EVENT), (fn.__name__, count)
    return statistics.median(samples)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rivals: list[tuple[str, Callable[[bytes, int], int]]] = [("ptcflow", ours)]
    if importlib.util.find_spec("httpx_sse") is not None:
        rivals.append(("httpx-sse", httpx_sse))
    print(f"{'decoder':<10} {'body':>6} {'read':>8} {'ms':>9} {'ms/MiB':>8} {'vs ptcflow':>11}")
    for size in (1, 2, 4):
        body = EVENT * (size * MIB // len(EVENT))
        for read in (len(body), 64 * 1024, 1024):
            base = 0.0
            for name, fn in rivals:
                seconds = timed(fn, body, read, args.repeats)
                base = base or seconds
                label = "whole" if read == len(body) else str(read)
                print(
                    f"{name:<10} {size:>4}Mi {label:>8} {seconds * 1e3:>9.1f} "
                    f"{seconds * 1e3 / size:>8.1f} {seconds / base:>10.2f}x"
                )


if __name__ == "__main__":
    main()
