"""Finding and reading the model configuration: ``ptcflow.toml`` or ``[tool.ptcflow]``."""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ptcflow.errors import ConfigError

__all__ = ("check_keys", "find_config", "read_config", "table_name")


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


def table_name(location: str | os.PathLike[str] | None, table: str = "") -> str:
    """How a message names ``table`` of the config at ``location`` (``[providers.x]``,
    ``[tool.ptcflow.providers.x]`` in a ``pyproject.toml``; the top level is ``the top
    level`` of a ``ptcflow.toml``)."""
    prefix = (
        "tool.ptcflow" if location is not None and Path(location).name == "pyproject.toml" else ""
    )
    dotted = ".".join(p for p in (prefix, table) if p)
    return f"[{dotted}]" if dotted else "the top level"


def check_keys(
    found: Mapping[str, Any],
    valid: Iterable[str],
    *,
    location: str | os.PathLike[str] | None,
    table: str = "",
) -> None:
    """Raise a :class:`ConfigError` naming the file, the table, the unknown key and the
    nearest valid one, for the first key of ``found`` that is not in ``valid``.

    Example:
        >>> check_keys({"aliasses": {}}, ["aliases", "default_model"], location="ptcflow.toml")
        Traceback (most recent call last):
        ...
        ptcflow.errors.ConfigError: ptcflow.toml: unknown key 'aliasses' at the top level; did you mean 'aliases'? Valid keys there: aliases, default_model
    """
    known = list(valid)
    for key in found:
        if key in known:
            continue
        hint = difflib.get_close_matches(str(key), known, n=1, cutoff=0.5)
        did = f"; did you mean {hint[0]!r}?" if hint else ""
        raise ConfigError(
            f"{location}: unknown key {key!r} {_where(location, table)}{did} "
            f"Valid keys there: {', '.join(sorted(known))}"
        )


def _where(location: str | os.PathLike[str] | None, table: str) -> str:
    name = table_name(location, table)
    return "at the top level" if name == "the top level" else f"in {name}"
