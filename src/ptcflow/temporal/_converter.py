"""How ptcflow's data crosses Temporal: msgspec JSON, compressed, size-checked.

* :class:`MsgspecPayloadConverter`: every value as ``json/plain`` written by msgspec, so
  directives, signals and Steps (frozen msgspec structs) travel exactly and decode typed
  (the workflow's and activities' annotations give the type); the Temporal UI shows them
  as JSON.
* :class:`ZlibCodec`: payloads above a threshold are compressed (``binary/zlib``): model
  conversations and tool results are text and shrink 3-10x.
* :class:`FileStorageDriver`: a Temporal external-storage driver that keeps large payloads
  in a directory every worker and client can read (a shared volume); history then holds a
  reference only. Any other driver of the SDK (S3, GCS) plugs in the same way.
* :func:`payload_size`: the size a value will have in history, checked against
  ``TemporalOptions.max_payload_bytes`` before Temporal refuses it.
* :func:`prepare_struct_types`: msgspec's decoding information for the shared types,
  built on one thread before a worker's threads decode them.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    BinaryNullPayloadConverter,
    BinaryPlainPayloadConverter,
    BinaryProtoPayloadConverter,
    CompositePayloadConverter,
    DataConverter,
    EncodingPayloadConverter,
    ExternalStorage,
    JSONPlainPayloadConverter,
    JSONProtoPayloadConverter,
    PayloadCodec,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

__all__ = (
    "COMPRESS_OVER",
    "FileStorageDriver",
    "MsgspecPayloadConverter",
    "ZlibCodec",
    "data_converter",
    "prepare_struct_types",
)

COMPRESS_OVER = 4096
"""Payloads of more bytes than this are compressed."""

_ENCODER = msgspec.json.Encoder()
_ZLIB = b"binary/zlib"


class _MsgspecJSON(EncodingPayloadConverter):
    """``json/plain`` through msgspec (the SDK's JSON converter for what msgspec refuses)."""

    def __init__(self) -> None:
        self._fallback = JSONPlainPayloadConverter()

    @property
    def encoding(self) -> str:
        return "json/plain"

    def to_payload(self, value: Any) -> Payload | None:
        try:
            data = _ENCODER.encode(value)
        except TypeError:
            return self._fallback.to_payload(value)
        return Payload(metadata={"encoding": b"json/plain"}, data=data)

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        if type_hint is None or type_hint is Any:
            return msgspec.json.decode(payload.data)
        return msgspec.json.decode(payload.data, type=type_hint)


class MsgspecPayloadConverter(CompositePayloadConverter):
    """The SDK's default converters, with msgspec writing and reading ``json/plain``."""

    def __init__(self) -> None:
        super().__init__(
            BinaryNullPayloadConverter(),
            BinaryPlainPayloadConverter(),
            JSONProtoPayloadConverter(),
            BinaryProtoPayloadConverter(),
            _MsgspecJSON(),
        )


class ZlibCodec(PayloadCodec):
    """Compress payloads larger than ``threshold`` bytes (and only when that helps).

    Args:
        threshold: payloads up to this size are left as they are.
    """

    def __init__(self, threshold: int = COMPRESS_OVER) -> None:
        self.threshold = threshold

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Compress each large payload (its whole protobuf, metadata included)."""
        out = []
        for p in payloads:
            if p.ByteSize() > self.threshold:
                packed = zlib.compress(p.SerializeToString(), 6)
                if len(packed) < p.ByteSize():
                    p = Payload(metadata={"encoding": _ZLIB}, data=packed)
            out.append(p)
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decompress what :meth:`encode` compressed; pass the rest through."""
        out = []
        for p in payloads:
            if p.metadata.get("encoding") == _ZLIB:
                inner = Payload()
                inner.ParseFromString(zlib.decompress(p.data))
                p = inner
            out.append(p)
        return out


class FileStorageDriver(StorageDriver):
    """Keep large payloads as files in ``directory`` (shared by every worker and client).

    Files are named by the SHA-256 of their content, so storing the same payload twice
    writes one file. Nothing is deleted: clean the directory with the retention of your
    namespace in mind.

    Args:
        directory: a directory every process of the deployment reads and writes.
        name: the driver's name in references (keep it stable).

    Example:
        >>> driver = FileStorageDriver("/tmp/ptcflow-payloads")
        >>> driver.name()
        'ptcflow-files'
    """

    def __init__(self, directory: str | os.PathLike[str], *, name: str = "ptcflow-files") -> None:
        self.directory = Path(directory)
        self._name = name

    def name(self) -> str:
        """The driver's name."""
        return self._name

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        """Write each payload to its file; return the claims (file names)."""
        claims = []
        folder = anyio.Path(self.directory)
        await folder.mkdir(parents=True, exist_ok=True)
        for p in payloads:
            data = p.SerializeToString()
            key = hashlib.sha256(data).hexdigest()
            target = folder / key
            if not await target.exists():
                partial = folder / f"{key}.partial"
                await partial.write_bytes(data)
                await partial.rename(target)
            claims.append(StorageDriverClaim(claim_data={"key": key}))
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Read the payloads back."""
        out = []
        for claim in claims:
            p = Payload()
            p.ParseFromString(
                await (anyio.Path(self.directory) / claim.claim_data["key"]).read_bytes()
            )
            out.append(p)
        return out


def data_converter(
    *, compress_over: int = COMPRESS_OVER, storage: ExternalStorage | None = None
) -> DataConverter:
    """The data converter of ptcflow's clients, workers and replayers (all must agree).

    Args:
        compress_over: payloads larger than this are compressed.
        storage: keep payloads larger than its threshold outside history (for example
            ``ExternalStorage(drivers=[FileStorageDriver(path)])``).

    Example:
        >>> type(data_converter().payload_codec).__name__
        'ZlibCodec'
    """
    return DataConverter(
        payload_converter_class=MsgspecPayloadConverter,
        payload_codec=ZlibCodec(compress_over),
        external_storage=storage,
    )


def prepare_struct_types(modules: Sequence[str] = ()) -> int:
    """Build msgspec's decoding information for every ``msgspec.Struct`` class of
    ptcflow and of ``modules`` (names or prefixes) now, on the calling thread; return how
    many classes were prepared.

    Why: msgspec (0.22, on CPython with the GIL) publishes a Struct class's decoding
    information before it has filled it in. A second thread that decodes the same class
    at that moment reads a field type that is not there yet, and the process dies of a
    segmentation fault. A Temporal worker decodes on its workflow threads and on its
    event loop at once, the same classes (ptcflow's, shared through the sandbox's
    passthrough), most of all right after it starts: workers died so, at random, in
    tests. Once built, the information is only read, so one pass before the threads
    start closes the race. A class msgspec cannot decode is left alone (it fails the same
    way when it is used).
    """
    prefixes = ("ptcflow", *modules)

    def wanted(cls: type) -> bool:
        return any(cls.__module__ == p or cls.__module__.startswith(p + ".") for p in prefixes)

    seen: set[type] = set()
    todo = [msgspec.Struct]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    prepared = 0
    for cls in seen:
        if wanted(cls):
            try:
                msgspec.json.Decoder(cls)
            except (TypeError, ValueError, NameError):
                continue
            prepared += 1
    return prepared
