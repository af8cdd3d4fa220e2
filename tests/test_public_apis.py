"""ptcflow uses only the public APIs of other libraries, and ``runtime/`` has no import cycle.

Checked on the source with ``ast`` (like anyio's and trio's export tests check their own
surfaces): no import of another library's private module (a dotted path with a part that
starts with ``_``), and no private attribute (``obj._name``, ``getattr(obj, "_name")``)
that ptcflow does not define itself. One release of another library can change its
private names; cancellation, the property everything else stands on, must not depend on
them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ptcflow"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _own_names(trees: list[ast.Module]) -> set[str]:
    """Every private name ptcflow itself defines (attributes, functions, slots, fields)."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[-1])
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)  # __slots__ entries, msgspec field names
    return {n for n in names if _private(n)}


def _foreign_private_imports(path: Path, tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "ptcflow" and node.module != "__future__":
                if any(_private(p) for p in parts):
                    yield f"{path.name}:{node.lineno}: from {node.module} import ..."
                for alias in node.names:
                    if _private(alias.name):
                        yield f"{path.name}:{node.lineno}: from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] != "ptcflow" and any(_private(p) for p in parts):
                    yield f"{path.name}:{node.lineno}: import {alias.name}"


def _foreign_private_attributes(path: Path, tree: ast.Module, own: set[str]) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            yield f"{path.name}:{node.lineno}: .{node.attr}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and node.args[1].value not in own
        ):
            yield f"{path.name}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})"


def test_no_private_module_of_another_library_is_imported() -> None:
    found = [hit for path, tree in _modules() for hit in _foreign_private_imports(path, tree)]
    assert found == [], "private imports of other libraries:\n" + "\n".join(found)


def test_no_private_attribute_of_another_library_is_used() -> None:
    modules = list(_modules())
    own = _own_names([tree for _, tree in modules])
    found = [hit for path, tree in modules for hit in _foreign_private_attributes(path, tree, own)]
    assert found == [], "private attributes ptcflow does not define:\n" + "\n".join(found)


def test_the_checks_catch_what_the_old_runtime_did() -> None:
    """The checks can fail: the private names the runtime once used are caught."""
    old = ast.parse(
        "from anyio._backends._asyncio import _task_states\n"
        "import anyio._core._eventloop\n"
        "def f(scope, task):\n"
        "    return scope._deadline, task._fut_waiter, getattr(task, '_must_cancel')\n"
    )
    path = Path("old.py")
    assert len(list(_foreign_private_imports(path, old))) == 3
    assert len(list(_foreign_private_attributes(path, old, set()))) == 3


def test_runtime_modules_import_each_other_without_a_cycle() -> None:
    """``ptcflow.runtime``'s modules form a DAG (imports under TYPE_CHECKING included)."""
    package = SRC / "runtime"
    graph: dict[str, set[str]] = {}
    for path in package.glob("_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = set()
        for node in ast.walk(tree):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and module.startswith("ptcflow.runtime._"):
                deps.add(module.rsplit(".", 1)[1])
        graph[path.stem] = deps
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, trail: list[str]) -> None:
        state = seen.get(module)
        if state == 2:
            return
        assert state != 1, "import cycle: " + " -> ".join([*trail, module])
        seen[module] = 1
        for dep in sorted(graph.get(module, ())):
            visit(dep, [*trail, module])
        seen[module] = 2

    for module in sorted(graph):
        visit(module, [])
