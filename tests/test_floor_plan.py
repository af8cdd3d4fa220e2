"""The floor plan holds: every import of ``src/ptcflow`` is read (AST, lazy and ``TYPE_CHECKING``
imports included) and held against three rules written in docs/architecture.md:

(a) a package takes another package's names from its public face, never from a ``_private``
    module (``ptcflow.runtime.lowlevel`` is a declared face; ``ptcflow.runtime._run`` is not);
(b) dependencies point down the layer order (a package imports only packages on lower floors;
    ``directives`` is data: beside ``signals`` it uses only the leaves' parsers);
(c) no import circle joins files of different packages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import ptcflow

SRC = Path(ptcflow.__file__).parent

# The layer order, bottom up (docs/architecture.md, "Layers"); one floor may not import another
# package on the same floor or above.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"errors"}),
    frozenset({"signals", "signature", "lisp"}),
    frozenset({"directives", "tools", "providers"}),
    frozenset({"core", "program", "mcp", "sessions"}),
    frozenset({"strategies", "runtime"}),
    frozenset({"agent", "trace", "testing"}),
    frozenset({"temporal", "demo", "serve"}),
    frozenset({"cli", "__init__"}),
)
FLOOR = {package: level for level, packages in enumerate(FLOORS) for package in packages}
DATA_ONLY = {"directives": frozenset({"errors", "signals", "signature", "lisp"})}
"""``directives`` is data: it takes its vocabulary from ``signals`` and checks its own text
fields with the leaves' parsers (a RunProgram's return signature, its limits), and imports
nothing that performs anything (``program``, ``runtime``, ...)."""


def _package(path: Path) -> str:
    """The top-level package a file belongs to (``errors``, ``cli`` and ``__init__`` are their own)."""
    part = path.relative_to(SRC).parts[0]
    return part.removesuffix(".py")


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["ptcflow", *parts])


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every absolute or relative import of a ptcflow module in ``path``,
    including ``from package import submodule``."""
    text = path.read_text(encoding="utf-8")
    return _imports_of(text, _module(path), is_package=path.name == "__init__.py")


def _imports_of(text: str, module: str, *, is_package: bool) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ptcflow"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                drop = node.level - (1 if is_package else 0)
                base = base[: len(base) - drop] if drop else base
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if not target.startswith("ptcflow"):
                continue
            yield node.lineno, target
            for alias in node.names:  # `from ptcflow.x import _y` may name a module
                if (SRC / Path(*target.split(".")[1:], alias.name + ".py")).exists() or (
                    SRC / Path(*target.split(".")[1:], alias.name, "__init__.py")
                ).exists():
                    yield node.lineno, f"{target}.{alias.name}"


FILES = sorted(SRC.rglob("*.py"))
EDGES = {path: list(_imports(path)) for path in FILES}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_walk_sees_the_whole_package() -> None:
    assert len(FILES) > 150
    assert {_package(p) for p in FILES} <= set(FLOOR), "a new package needs a floor in FLOORS"


def test_no_private_module_of_another_package_is_imported() -> None:
    bad = [
        f"{path.relative_to(SRC)}:{line}: {target}"
        for path, edges in EDGES.items()
        for line, target in edges
        if _top(target) != _package(path)
        and any(part.startswith("_") for part in target.split(".")[2:])
    ]
    assert not bad, "take these names from the package's face:\n" + "\n".join(bad)


def test_imports_point_down_the_floors() -> None:
    bad = []
    for path, edges in EDGES.items():
        own = _package(path)
        for line, target in edges:
            other = _top(target)
            if other == own or target == "ptcflow":
                continue
            allowed = DATA_ONLY.get(own)
            if (allowed is not None and other not in allowed) or FLOOR[other] >= FLOOR[own]:
                bad.append(f"{path.relative_to(SRC)}:{line}: {own} (floor {FLOOR[own]}) -> "
                           f"{target} (floor {FLOOR[other]})")  # fmt: skip
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def _module_files() -> dict[str, Path]:
    return {_module(path): path for path in FILES}


def _circles() -> list[list[Path]]:
    """Strongly connected groups of files (Tarjan), imports resolved to the file they load."""
    by_module = _module_files()
    graph: dict[Path, set[Path]] = {}
    for path, edges in EDGES.items():
        graph[path] = set()
        for _, target in edges:
            while target and target not in by_module:
                target = target.rpartition(".")[0]
            if target and by_module[target] != path:
                graph[path].add(by_module[target])
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    groups: list[list[Path]] = []

    def visit(node: Path) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in graph:
        if node not in index:
            visit(node)
    return groups


def test_no_import_circle_crosses_a_package_line() -> None:
    crossing = [
        sorted(str(p.relative_to(SRC)) for p in group)
        for group in _circles()
        if len({_package(p) for p in group}) > 1
    ]
    assert not crossing, f"import circles across packages: {crossing}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ptcflow.runtime._run import LocalRun", ["ptcflow.runtime._run"]),
        ("from ptcflow.lisp import values, run", ["ptcflow.lisp", "ptcflow.lisp.values"]),
        ("import ptcflow.core._core", ["ptcflow.core._core"]),
        ("from ._errors import malformed", ["ptcflow.agent._errors"]),
        ("from .. import errors", ["ptcflow", "ptcflow.errors"]),
        ("if TYPE_CHECKING:\n    from ptcflow.core import Step", ["ptcflow.core"]),
        ("def f():\n    from ptcflow.trace import _text", ["ptcflow.trace", "ptcflow.trace._text"]),
    ],
)
def test_the_walk_reads_each_kind_of_import(source: str, expected: list[str]) -> None:
    # the rules above are only as good as the walk: it must see these spellings
    found = [target for _, target in _imports_of(source, "ptcflow.agent._x", is_package=False)]
    assert found == expected
