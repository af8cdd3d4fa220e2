"""Strategies stay pure: nothing in ptcflow.strategies may reach a clock, randomness, I/O,
the event loop or telemetry. Temporal replays them as workflow code, so this is a contract."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ptcflow.strategies

FORBIDDEN = {
    "anyio", "asyncio", "trio", "time", "datetime", "random", "secrets", "uuid", "os",
    "socket", "threading", "subprocess", "opentelemetry", "structlog", "logging",
    "ptcflow.runtime", "ptcflow.testing", "ptcflow.providers", "ptcflow.mcp",
}  # fmt: skip
SOURCES = sorted(Path(ptcflow.strategies.__file__).parent.rglob("*.py"))


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


ROOT = Path(ptcflow.strategies.__file__).parent


def test_every_strategy_module_is_seen() -> None:
    # strategies live in sub-packages (ptc/, react/, json_agent/): a glob of one folder
    # would check the face alone and still pass
    assert {p.parent.name for p in SOURCES} >= {"strategies", "ptc", "react", "json_agent"} or (
        len(SOURCES) >= 15
    ), [str(p.relative_to(ROOT)) for p in SOURCES]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_strategy_modules_import_nothing_impure(path: Path) -> None:
    imported = _imports(ast.parse(path.read_text(encoding="utf-8")))
    bad = {
        name
        for name in imported
        for banned in FORBIDDEN
        if name == banned or name.startswith(banned + ".")
    }
    assert not bad, f"{path.name} imports {sorted(bad)}: strategies must stay pure"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_strategy_modules_have_no_async_code(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    asyncs = [n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef | ast.Await)]
    assert not asyncs, f"{path.name} has async code at line {asyncs[0].lineno}"
