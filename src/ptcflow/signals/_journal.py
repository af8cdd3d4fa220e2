"""The run journal: signals as JSON lines, written with one msgspec encoder and read back typed.

Each line is one :class:`~ptcflow.signals.Signal` encoded as JSON. Reading decodes in two
passes: first the CloudEvents and correlation fields with ``data`` kept as raw JSON, then
``data`` with the decoder of its signal type (:data:`~ptcflow.signals.DATA_TYPES`), built
once per type. So a journal reads back to exactly the typed structs that were published;
signal types outside the catalogue keep their ``data`` as plain JSON values.
"""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import IO, Any, Final, Self

import anyio
import msgspec

from ptcflow.errors import UsageError
from ptcflow.signals._bus import SignalBus, SignalOverflowError, Subscription
from ptcflow.signals._data import DATA_TYPES
from ptcflow.signals._runs import JournalError, select_run
from ptcflow.signals._sanitize import sanitize
from ptcflow.signals._secrets import Secrets
from ptcflow.signals._signal import Signal

__all__ = (
    "JournalWriter",
    "decode_signal",
    "decode_signals",
    "encode_signal",
    "read_journal",
    "record_journal",
)


def _enc_hook(obj: Any) -> Any:
    # A payload msgspec cannot encode (a user object in a tool result) is written as its
    # sanitized form rather than failing the journal.
    return sanitize(obj)


_ENCODER: Final = msgspec.json.Encoder(enc_hook=_enc_hook)

_RawSignal: Any = msgspec.defstruct(
    "_RawSignal",
    [
        (f.name, msgspec.Raw, msgspec.Raw(b"null"))
        if f.name == "data"
        else (
            (f.name, f.type)
            if f.required
            else (f.name, f.type, f.default if f.default is not msgspec.NODEFAULT else None)
        )
        for f in msgspec.structs.fields(Signal)
    ],
    kw_only=True,
)
_SIGNAL_FIELDS: Final = tuple(f.name for f in msgspec.structs.fields(Signal))
_RAW_DECODER: Final = msgspec.json.Decoder(_RawSignal)
_ANY_DECODER: Final = msgspec.json.Decoder()
_DATA_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _data_decoder(type: str) -> msgspec.json.Decoder[Any]:
    struct = DATA_TYPES.get(type)
    if struct is None:
        return _ANY_DECODER
    decoder = _DATA_DECODERS.get(struct)
    if decoder is None:
        decoder = _DATA_DECODERS[struct] = msgspec.json.Decoder(struct)
    return decoder


def encode_signal(signal: Signal) -> bytes:
    """Return one journal line for ``signal`` (JSON, without the trailing newline)."""
    return _ENCODER.encode(signal)


def decode_signal(line: str | bytes, *, lineno: int = 1) -> Signal:
    """Decode one journal line back to a :class:`Signal` with typed ``data``.

    Raises:
        JournalError: the line is not a JSON signal, or its ``data`` does not match the
            struct of its type; the message gives ``lineno`` and the JSON path.
    """
    try:
        raw = _RAW_DECODER.decode(line)
    except (msgspec.DecodeError, UnicodeError) as exc:
        raise JournalError(
            f"journal line {lineno} is not a signal: {_reason(exc)}; each line must be one "
            "JSON object written by JournalWriter"
        ) from None
    fields = {name: getattr(raw, name) for name in _SIGNAL_FIELDS}
    data = raw.data
    if len(data) == 4 and bytes(data) == b"null":
        fields["data"] = None
    else:
        try:
            fields["data"] = _data_decoder(raw.type).decode(data)
        except (msgspec.DecodeError, UnicodeError) as exc:
            struct = DATA_TYPES[raw.type].__name__ if raw.type in DATA_TYPES else "JSON value"
            raise JournalError(
                f"journal line {lineno}: data of the {raw.type!r} signal is not a valid "
                f"{struct}: {_reason(exc).replace('`$', '`$.data')}"
            ) from None
    return Signal(**fields)


_RAW_LIST: Final = msgspec.json.Decoder(list[_RawSignal])


def decode_signals(lines: Sequence[bytes]) -> list[Signal]:
    """Decode journal lines (JSON objects, without newlines) back to typed signals, as
    :func:`decode_signal` does for each, in one pass over the envelopes: a paused run reads
    its whole journal back this way when it resumes.

    Raises:
        JournalError: a line is not a signal (the message is :func:`decode_signal`'s, with
            its line number).
    """
    try:
        raws = _RAW_LIST.decode(b"[" + b",".join(lines) + b"]")
    except (msgspec.DecodeError, UnicodeError):
        for n, line in enumerate(lines, 1):
            decode_signal(line, lineno=n)  # raises, naming the line
        raise JournalError("the journal lines are not signals") from None  # pragma: no cover
    out = []
    asdict = msgspec.structs.asdict
    for n, raw in enumerate(raws, 1):
        fields = asdict(raw)
        data = raw.data
        if len(data) == 4 and bytes(data) == b"null":
            fields["data"] = None
        else:
            try:
                fields["data"] = _data_decoder(raw.type).decode(data)
            except (msgspec.DecodeError, UnicodeError):
                return [decode_signal(line, lineno=i) for i, line in enumerate(lines[n - 1 :], n)]
        out.append(Signal(**fields))
    return out


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError | UnicodeEncodeError):
        return f"text that is not valid UTF-8 ({exc.reason})"
    if isinstance(exc, UnicodeError):
        return "text that is not valid UTF-8"
    return str(exc)


def read_journal(
    source: str | os.PathLike[str] | Iterable[str | bytes],
    *,
    run_id: str | None = None,
    all_runs: bool = False,
) -> list[Signal]:
    """Read a journal back into the signals of one run, each ``data`` decoded to its struct.

    A journal may hold several runs (one file appended to, or a whole bus recorded): pass
    ``run_id`` to read one of them (with its child runs), or ``all_runs=True`` for every
    signal. Without either, a journal holding more than one run is an error that lists
    them, so runs are never mixed silently.

    Args:
        source: a file path, or the lines themselves (an open file, a list of str/bytes).
            Blank lines are skipped.
        run_id: the run to read; its child runs (agents used as tools) come with it.
        all_runs: read every signal, whichever run it belongs to.

    Returns:
        The signals in journal order.

    Raises:
        JournalError: a line is malformed (the message gives its number); ``run_id`` is
            not in the journal; or the journal holds several runs and neither ``run_id``
            nor ``all_runs`` says which (the message lists them).
        OSError: the file cannot be read.

    Example:
        >>> from ptcflow.signals import Signal, UsageData, Usage
        >>> line = encode_signal(Signal.create("ai.usage", UsageData(usage=Usage(input_tokens=3))))
        >>> read_journal([line])[0].data
        UsageData(usage=Usage(input_tokens=3, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0), model='')
    """
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            signals = _read_lines(f)
        where = f"journal {os.fspath(source)}"
    else:
        signals = _read_lines(source)
        where = "the journal"
    return select_run(signals, run_id=run_id, all_runs=all_runs, where=where)


def _read_lines(lines: Iterable[str | bytes]) -> list[Signal]:
    out: list[Signal] = []
    for lineno, line in enumerate(lines, 1):
        if isinstance(line, str | bytes) and not line.strip():
            continue
        if not isinstance(line, str | bytes):
            raise JournalError(
                f"journal line {lineno} is a {type(line).__name__}, not str or bytes; "
                "pass a path or an iterable of lines"
            )
        out.append(decode_signal(line, lineno=lineno))
    return out


class JournalWriter:
    """Write signals as JSON lines to a file path or any text or binary stream.

    A path is created and closed by :meth:`close`; a path that already holds a journal is
    refused unless ``append=True`` (runs appended to one file are then told apart by
    ``read_journal(path, run_id=...)``). A stream passed in is written to as it is,
    flushed but left open. Writes are synchronous (buffered file I/O). Use it as a context
    manager, or with :func:`record_journal` to journal what a bus carries.

    Args:
        target: a path, or a writable stream (``io.StringIO``, ``sys.stdout``, a file
            opened in ``"wb"``...).
        append: add to a file that already holds signals instead of refusing it.
        secrets: scrubbed from every line written (see :class:`~ptcflow.signals.Secrets`;
            a provider's ``secrets``); nothing is scanned when empty.

    Raises:
        UsageError: ``target`` is neither a path nor a writable stream, or it is a file
            that already holds signals and ``append`` is false.

    Example:
        >>> import io
        >>> from ptcflow.signals import Signal
        >>> out = io.StringIO()
        >>> with JournalWriter(out) as journal:
        ...     journal.write(Signal.create("ai.request.started", run_id="run_1"))
        >>> read_journal(io.StringIO(out.getvalue()))[0].run_id
        'run_1'
    """

    __slots__ = ("_binary", "_count", "_owned", "_scrub", "_stream")

    def __init__(
        self,
        target: str | os.PathLike[str] | IO[str] | IO[bytes],
        *,
        append: bool = False,
        secrets: Secrets | None = None,
    ) -> None:
        self._scrub = secrets.scrub if secrets else None
        if isinstance(target, str | os.PathLike):
            mode = "ab" if append else "xb"
            try:
                self._stream: IO[Any] = open(target, mode)  # noqa: SIM115 - closed by close()
            except FileExistsError:
                if os.path.getsize(target) > 0:
                    raise UsageError(
                        f"{os.fspath(target)} already holds a journal; pass append=True to "
                        "add this run to it (read one run back with read_journal(path, "
                        "run_id=...)), or write to a new file"
                    ) from None
                self._stream = open(target, "ab")  # noqa: SIM115 - an empty file: reuse it
            self._owned = True
            self._binary = True
        elif callable(getattr(target, "write", None)):
            self._stream = target
            self._owned = False
            self._binary = not isinstance(target, io.TextIOBase) and (
                isinstance(target, io.RawIOBase | io.BufferedIOBase)
                or "b" in str(getattr(target, "mode", ""))
            )
        else:
            raise UsageError(
                f"JournalWriter needs a file path or a writable stream, got {type(target).__name__}"
            )
        self._count = 0

    @property
    def count(self) -> int:
        """How many signals were written."""
        return self._count

    def write(self, signal: Signal) -> None:
        """Append one signal as a JSON line."""
        line = _ENCODER.encode(signal) + b"\n"
        if self._scrub is not None:
            line = self._scrub(line.decode("utf-8")).encode("utf-8")
        self._stream.write(line if self._binary else line.decode("utf-8"))
        self._count += 1

    def write_all(self, signals: Iterable[Signal]) -> int:
        """Append several signals in one write; return how many."""
        buf = bytearray()
        n = 0
        for signal in signals:
            _ENCODER.encode_into(signal, buf, -1)
            buf += b"\n"
            n += 1
        if n:
            if self._scrub is None:
                self._stream.write(bytes(buf) if self._binary else buf.decode("utf-8"))
            else:
                text = self._scrub(buf.decode("utf-8"))
                self._stream.write(text.encode("utf-8") if self._binary else text)
            self._count += n
        return n

    def flush(self) -> None:
        """Flush the underlying stream."""
        self._stream.flush()

    def close(self) -> None:
        """Flush, and close the file if this writer opened it. Idempotent."""
        if self._stream.closed:
            return
        self._stream.flush()
        if self._owned:
            self._stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@asynccontextmanager
async def record_journal(
    bus: SignalBus,
    target: str | os.PathLike[str] | IO[str] | IO[bytes] | JournalWriter,
    *,
    pattern: str = "**",
    run_id: str | None = None,
    buffer: int = 65_536,
    append: bool = False,
    secrets: Secrets | None = None,
) -> AsyncIterator[JournalWriter]:
    """Journal every signal the bus carries (matching ``pattern``/``run_id``) while open.

    A path that already holds a journal is refused unless ``append=True``; ``secrets``
    are scrubbed from every line (see :class:`JournalWriter`).

    A task writes the signals as they arrive; on exit the rest of the buffer is written
    and the writer closed. If the journal falls more than ``buffer`` signals behind, it
    fails with :class:`~ptcflow.signals.SignalOverflowError` rather than leave a gap
    that would make the journal unusable for replay (raised when the block exits; an
    exception raised by the block itself propagates unchanged).

    Example:
        >>> import anyio, io
        >>> from ptcflow.signals import Signal, SignalBus
        >>> async def main() -> int:
        ...     bus, out = SignalBus(), io.StringIO()
        ...     async with record_journal(bus, out, run_id="run_1") as journal:
        ...         bus.publish(Signal.create("ai.request.started", run_id="run_1"))
        ...         bus.publish(Signal.create("ai.request.started", run_id="run_2"))
        ...     return journal.count
        >>> anyio.run(main)
        1
    """
    writer = (
        target
        if isinstance(target, JournalWriter)
        else JournalWriter(target, append=append, secrets=secrets)
    )
    sub = bus.subscribe(pattern, run_id=run_id, buffer=buffer, overflow="error")
    failed: list[SignalOverflowError] = []
    inner: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_follow, sub, writer, failed)
            yield writer
            sub.close()  # the follower drains the buffer, then ends
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        inner = group.exceptions[0]  # the body's own exception: re-raised unwrapped below
    finally:
        sub.close()
        if not failed:
            writer.write_all(sub.drain_nowait())
        writer.close()
    if inner is not None:
        raise inner
    if failed:
        raise failed[0]


async def _follow(
    sub: Subscription, writer: JournalWriter, failed: list[SignalOverflowError]
) -> None:
    try:
        async for signal in sub:
            writer.write(signal)
            writer.write_all(sub.drain_nowait())
    except SignalOverflowError as exc:
        failed.append(exc)
