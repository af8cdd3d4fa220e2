"""Real npm packages for the protocol tests: installed by the test itself, from a pinned
version, into a cache folder (``PTCFLOW_NPM_CACHE``, default ``~/.cache/ptcflow-tests/npm``).
The test skips, saying why, when node or npm is missing or the registry cannot be reached."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def npm_folder(*specs: str) -> Path:
    """A folder whose ``node_modules`` holds ``specs`` (``name@version``), installed once."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to test against the real npm client")
    root = Path(os.environ.get("PTCFLOW_NPM_CACHE", Path.home() / ".cache/ptcflow-tests/npm"))
    folder = root / "_".join(s.replace("/", "+") for s in specs)
    stamp = folder / ".installed"
    if not stamp.exists():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", *specs],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.skip(f"npm install {' '.join(specs)} failed (registry unreachable?): "
                        f"{done.stderr.strip()[-300:]}")  # fmt: skip
        stamp.write_text("\n".join(specs))
    return folder


def node_script(folder: Path, name: str) -> Path:
    """Copy ``name`` (next to this file) into ``folder`` so that node resolves its imports
    from the folder's node_modules; return the copy."""
    target = folder / name
    shutil.copyfile(HERE / name, target)
    return target
