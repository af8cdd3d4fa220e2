"""A throwaway PostgreSQL server for tests: Debian's ``postgresql`` package, ``initdb``
into a temporary directory, ``pg_ctl start`` on a free port of 127.0.0.1.

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user
(``runuser``), in a directory that user owns. When the package is missing, it is installed
with ``apt-get`` if this process is root, else :func:`find_bin` says why it cannot run.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def find_bin() -> tuple[Path | None, str]:
    """The directory of ``initdb`` and ``pg_ctl``, or ``None`` and why not."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "postgresql"],
            capture_output=True,
            timeout=600,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        return None, "Debian's postgresql package is not installed (and cannot be: not root)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return None, "running as root and there is no 'postgres' user to run the server"
    return Path(found[-1]).parent, ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One server: :meth:`start`, :meth:`stop` (also mid-test), :meth:`destroy`."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="ptcflow-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            self.user = "postgres"
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    @property
    def dsn(self) -> str:
        """A connection URL (trust authentication, no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def start(self) -> None:
        """Start (or restart) the server on its port; returns once it accepts connections."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                  "-w", "start")  # fmt: skip

    def stop(self) -> None:
        """Stop the server at once (``-m immediate``: as if it went away)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def destroy(self) -> None:
        """Stop the server if it runs and delete its directory."""
        try:
            self.stop()
        except RuntimeError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
