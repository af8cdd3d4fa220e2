"""The ``Signal``: a CloudEvents 1.0 event with ptcflow's correlation fields."""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any, Final

import msgspec

__all__ = ("Signal", "new_id", "uuid7")


# Id and timestamp generation is on the runtime's hot path (every signal), so it avoids a
# syscall and a datetime object per call. The generator state below is process-global on
# purpose (ids must be unique and increasing across every run of the process), guarded by
# a lock, and reseeded in a forked child so two workers never share a random stream.
_MASK62: Final = (1 << 62) - 1
_rng = random.Random(os.urandom(32))
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0
_time_prefix: tuple[int, str] = (-1, "")


def _reseed() -> None:
    global _rng, _lock
    _rng = random.Random(os.urandom(32))
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


def _uuid7_at(ns: int) -> str:
    global _last_ms, _last_rand
    ms = ns // 1_000_000
    with _lock:
        rand = _rng.getrandbits(74)
        if ms <= _last_ms:  # same millisecond (or the clock went back): keep ids increasing
            ms = _last_ms
            rand = _last_rand + 1
            if rand >> 74:  # the 74 bits are exhausted for this millisecond
                ms += 1
                rand = 0
        _last_ms, _last_rand = ms, rand
    value = (
        (ms & 0xFFFF_FFFF_FFFF) << 80
        | 0x7 << 76  # version
        | (rand >> 62) << 64  # rand_a (12 bits)
        | 0b10 << 62  # variant
        | rand & _MASK62  # rand_b (62 bits)
    )
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid7() -> str:
    """Return a new time-ordered UUIDv7 (RFC 9562) as text.

    48 bits of Unix milliseconds, then 74 random bits. Ids from one process are strictly
    increasing (within a millisecond the random part counts up, RFC 9562 section 6.2
    method 2), so they sort in creation order.
    """
    return _uuid7_at(time.time_ns())


def new_id(prefix: str = "") -> str:
    """Return a fresh unique id (a UUIDv7), optionally prefixed (``run_...``)."""
    return f"{prefix}{uuid7()}"


def _format_time(ns: int) -> str:
    """RFC 3339 UTC with microseconds, e.g. ``2026-01-02T03:04:05.123456Z``."""
    global _time_prefix
    sec, frac = divmod(ns, 1_000_000_000)
    cached_sec, prefix = _time_prefix
    if sec != cached_sec:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        _time_prefix = (sec, prefix)
    return f"{prefix}.{frac // 1000:06d}Z"


def _now() -> str:
    return _format_time(time.time_ns())


class Signal(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One event on the bus: CloudEvents 1.0 attributes plus correlation.

    CloudEvents fields: ``id`` (UUIDv7), ``source``, ``type`` (see the catalogue),
    ``subject``, ``time`` (RFC 3339), ``data`` (a typed struct from
    :mod:`ptcflow.signals`), ``specversion``. Correlation: ``run_id``, ``request_id``,
    ``call_id`` (the LLM or tool call), ``iteration``, ``seq`` (strictly increasing per
    run), ``parent_run_id`` (nested agents), ``causation_id`` (the directive that caused
    it) and the W3C ``traceparent``.

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

    @classmethod
    def create(
        cls, type: str, data: Any = None, *, source: str = "ptcflow", **fields: Any
    ) -> Signal:
        """Create a signal with a fresh ``id`` and the current ``time``.

        Example:
            >>> s = Signal.create("ai.usage", run_id="run_1", seq=3)
            >>> s.specversion, s.seq
            ('1.0', 3)
        """
        ns = time.time_ns()
        return cls(
            type=type, source=source, id=_uuid7_at(ns), time=_format_time(ns), data=data, **fields
        )
