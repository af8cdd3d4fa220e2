"""The runtime's two faces: users' (``ptcflow.runtime``) and drivers' and kind authors'
(``ptcflow.runtime.lowlevel``), and the Temporal driver built on public faces only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ptcflow.runtime
import ptcflow.temporal
from ptcflow.runtime import lowlevel


@pytest.mark.parametrize("name", ["DirectiveContext", "Executor", "Handler"])
def test_a_name_moved_to_lowlevel_keeps_its_old_spelling_with_a_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"ptcflow.runtime.lowlevel import {name}"):
        old = getattr(ptcflow.runtime, name)
    assert old is getattr(lowlevel, name)
    assert name not in ptcflow.runtime.__all__


def test_an_unknown_name_of_the_runtime_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = ptcflow.runtime.Nope


def test_the_temporal_driver_imports_no_private_module_of_another_package() -> None:
    package = Path(ptcflow.temporal.__file__).parent
    found = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                outside = parts[0] == "ptcflow" and parts[:2] != ["ptcflow", "temporal"]
                if outside and any(p.startswith("_") for p in parts):
                    found.append(f"{path.name}: {module}")
    assert found == []
