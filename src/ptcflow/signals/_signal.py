"""The ``Signal``: a CloudEvents 1.0 event with ptcflow's correlation fields."""

from __future__ import annotations

import itertools
import os
import time
from typing import Any, Final

import msgspec

__all__ = ("Signal", "new_id", "uuid7")


# Id and timestamp generation is on the runtime's hot path (every signal), so it avoids a
# syscall, a lock and a datetime object per call, and does its formatting once per
# millisecond. A UUIDv7 here is 48 bits of Unix milliseconds, then 42 bits that are 42
# random bits drawn once per process XOR a multiplicative hash of that millisecond, then a
# 32-bit counter (random start) in the last 8 hex digits. Within one process every id of a
# millisecond has the same first 24 hex digits and differs in the counter, so ids increase
# in creation order (RFC 9562 section 6.2, monotonic within a millisecond), also across
# threads: threads that refresh the per-millisecond prefix at once compute the same one.
# Ids of two processes made in the same millisecond differ in those 42 bits unless the
# processes drew the same random bits (probability 2**-42), and then almost surely in the
# counter. The bits are not secret (the mix is public): they keep processes apart, they do
# not make ids unguessable. ``next()`` on the counter is atomic under the GIL, so threads
# need no lock; a forked child draws new random bits and a new counter.
_MASK32: Final = 0xFFFF_FFFF
_MASK42: Final = (1 << 42) - 1
_GOLDEN64: Final = 0x9E37_79B9_7F4A_7C15  # Fibonacci hashing: 2**64 / the golden ratio
_bits = int.from_bytes(os.urandom(6), "big") & _MASK42
_counter = itertools.count(int.from_bytes(os.urandom(4), "big"))
# (millisecond, id prefix, second, "YYYY-MM-DDTHH:MM:SS." prefix, the millisecond's whole
# time "YYYY-MM-DDTHH:MM:SS.mmmZ"), replaced as a whole.
_cache: tuple[int, str, int, str, str] = (-1, "", -1, "", "")


def _reseed() -> None:
    global _bits, _counter, _cache
    _bits = int.from_bytes(os.urandom(6), "big") & _MASK42
    _counter = itertools.count(int.from_bytes(os.urandom(4), "big"))
    _cache = (-1, "", -1, "", "")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


def _refresh(ms: int) -> tuple[int, str, int, str, str]:
    # The first 96 bits: 48-bit ms | ver 7 | 12 bits | var 0b10 | 30 bits, where the 42
    # bits are the process's random bits XOR the top 42 bits of (ms * golden) mod 2**64
    # (bits 22..63 of the product). Formatted once: 12 bytes to hex with a dash every 4
    # digits, then the first dash dropped (UUID groups are 8-4-4-4-12; the last group's
    # other 8 digits are the counter's).
    global _cache
    r = _bits ^ ((ms * _GOLDEN64 >> 22) & _MASK42)
    v = ((ms & 0xFFFF_FFFF_FFFF) << 48) | 0x7000_8000_0000 | ((r >> 30) << 32) | (r & 0x3FFF_FFFF)
    h = v.to_bytes(12, "big").hex("-", 2)
    id_prefix = h[:4] + h[5:]
    sec = ms // 1000
    old_sec, time_prefix = _cache[2], _cache[3]
    if sec != old_sec:
        time_prefix = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(sec))
    _cache = cache = (ms, id_prefix, sec, time_prefix, f"{time_prefix}{ms % 1000:03d}Z")
    return cache


def stamp() -> tuple[str, str]:
    """Return a fresh ``(id, time)`` pair: a UUIDv7 and the RFC 3339 time it was made.

    One clock read for both; the time is UTC with milliseconds
    (``2026-01-02T03:04:05.123Z``), the precision of the id itself, formatted once per
    millisecond. Internal: the default ``stamp`` of the run core (one call per signal).
    """
    ms = time.time_ns() // 1_000_000
    cache = _cache
    if ms != cache[0]:
        cache = _refresh(ms)
    # the counter's 8 digits: hex() of it with a 33rd bit set, zero-padded for free
    return cache[1] + hex(next(_counter) & _MASK32 | 0x1_0000_0000)[3:], cache[4]


def uuid7() -> str:
    """Return a new time-ordered UUIDv7 (RFC 9562) as text.

    48 bits of Unix milliseconds, 42 bits that mix them with bits drawn at random once per
    process (so processes differ), then a 32-bit counter: ids made by one process sort in
    creation order (while the system clock does not go back and short of the counter
    wrapping, once per 4 billion ids).
    """
    ms = time.time_ns() // 1_000_000
    cache = _cache
    if ms != cache[0]:
        cache = _refresh(ms)
    return cache[1] + hex(next(_counter) & _MASK32 | 0x1_0000_0000)[3:]  # as in stamp()


def new_id(prefix: str = "") -> str:
    """Return a fresh unique id (a UUIDv7), optionally prefixed (``run_...``)."""
    return prefix + uuid7()


class Signal(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One event on the bus: CloudEvents 1.0 attributes plus correlation.

    CloudEvents fields: ``id`` (UUIDv7), ``source``, ``type`` (see the catalogue),
    ``subject``, ``time`` (RFC 3339), ``data`` (a typed struct from
    :mod:`ptcflow.signals`), ``specversion``. Correlation: ``run_id``, ``request_id``,
    ``call_id`` (the LLM or tool call), ``iteration``, ``seq`` (strictly increasing per
    run), ``parent_run_id`` (nested agents), ``causation_id`` (the directive that caused
    it) and the W3C ``traceparent``. ``metadata`` is the causing directive's own
    ``metadata`` (``origin``, ``operation``, ...: observability data the strategy attached),
    ``None`` when it has none and on run-level signals.

    Signals are created by the runtime; use :meth:`create` to fill ``id`` and ``time``.
    """

    type: str
    source: str
    id: str
    time: str
    data: Any = None
    subject: str | None = None
    specversion: str = "1.0"
    run_id: str = ""
    request_id: str | None = None
    call_id: str | None = None
    iteration: int = 0
    seq: int = 0
    parent_run_id: str | None = None
    causation_id: str | None = None
    traceparent: str | None = None
    metadata: dict[str, Any] | None = None

    @classmethod
    def create(
        cls,
        type: str,
        data: Any = None,
        *,
        source: str = "ptcflow",
        subject: str | None = None,
        specversion: str = "1.0",
        run_id: str = "",
        request_id: str | None = None,
        call_id: str | None = None,
        iteration: int = 0,
        seq: int = 0,
        parent_run_id: str | None = None,
        causation_id: str | None = None,
        traceparent: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Signal:
        """Create a signal with a fresh ``id`` and the current ``time``.

        Every other field is a keyword argument (explicit rather than ``**fields``: this
        is on the runtime's hot path).

        Example:
            >>> s = Signal.create("ai.usage", run_id="run_1", seq=3)
            >>> s.specversion, s.seq
            ('1.0', 3)
        """
        id, now = stamp()
        return cls(
            type=type,
            source=source,
            id=id,
            time=now,
            data=data,
            subject=subject,
            specversion=specversion,
            run_id=run_id,
            request_id=request_id,
            call_id=call_id,
            iteration=iteration,
            seq=seq,
            parent_run_id=parent_run_id,
            causation_id=causation_id,
            traceparent=traceparent,
            metadata=metadata,
        )
