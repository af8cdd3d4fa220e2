"""The ``Signal``: a CloudEvents 1.0 event with ptcflow's correlation fields."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

import msgspec

__all__ = ("Signal", "new_id", "uuid7")


def uuid7() -> str:
    """Return a new time-ordered UUIDv7 (RFC 9562) as text.

    48 bits of Unix milliseconds, then 74 random bits; ids sort by creation time.
    """
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a (12 bits)
    value |= 0b10 << 62  # variant
    value |= rand & 0x3FFF_FFFF_FFFF_FFFF  # rand_b (62 bits)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_id(prefix: str = "") -> str:
    """Return a fresh unique id (a UUIDv7), optionally prefixed (``run_...``)."""
    return f"{prefix}{uuid7()}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


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
        return cls(type=type, source=source, id=uuid7(), time=_now(), data=data, **fields)
