"""Finding and reading the model configuration: ``ptcflow.toml`` or ``[tool.ptcflow]``."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from ptcflow.errors import ConfigError

__all__ = ("find_config", "read_config")


def _has_table(pyproject: Path) -> bool:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("ptcflow"), dict)


def find_config(start: str | os.PathLike[str] | None = None) -> str | None:
    """Return the nearest ``ptcflow.toml``, or ``pyproject.toml`` with a ``[tool.ptcflow]``
    table, in ``start`` (default: the current directory) or its parents; ``None`` if none."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / "ptcflow.toml"
        if own.is_file():
            return str(own)
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_table(pyproject):
            return str(pyproject)
    return None


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the ptcflow table of ``path``: the whole file for ``ptcflow.toml`` (or any
    other name), ``[tool.ptcflow]`` for a ``pyproject.toml``.

    Raises:
        ConfigError: the file cannot be read or is not valid TOML.
    """
    location = Path(path)
    try:
        data = tomllib.loads(location.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read model config {location}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{location} is not valid TOML: {exc}") from None
    if location.name == "pyproject.toml":
        tool = data.get("tool")
        table = tool.get("ptcflow") if isinstance(tool, dict) else None
        return dict(table) if isinstance(table, dict) else {}
    return data
