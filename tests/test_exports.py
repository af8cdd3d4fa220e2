"""Each public package keeps a tuple ``__all__`` that matches what it exports."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import ptcflow


def _public_modules() -> list[str]:
    names = ["ptcflow"]
    for info in pkgutil.walk_packages(ptcflow.__path__, "ptcflow."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf.startswith("_") or ".test" in info.name or leaf == "__main__":
            continue
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return names


@pytest.mark.parametrize("module_name", _public_modules())
def test_all_is_a_tuple_of_real_documented_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.skip(f"{module_name} exports nothing")
    assert isinstance(exported, tuple), f"{module_name}.__all__ must be a tuple"
    assert len(set(exported)) == len(exported), f"{module_name}.__all__ has duplicates"
    for name in exported:
        assert hasattr(module, name), f"{module_name}.__all__ names missing {name!r}"
        obj = getattr(module, name)
        if callable(obj) and not name.startswith("__"):
            assert obj.__doc__, f"{module_name}.{name} has no docstring"
