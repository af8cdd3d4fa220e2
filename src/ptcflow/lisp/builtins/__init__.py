"""The whitelisted builtin functions of PTC-Lisp.

``BUILTINS`` maps every name a program can call (aliases such as ``str/join`` and
``clojure.string/join`` included) to its :class:`~ptcflow.lisp.values.Builtin`. Builtins with
``needs_budget`` take the run's :class:`~ptcflow.lisp.limits.Budget` as first argument: the
runner binds them per run with :meth:`~ptcflow.lisp.values.Builtin.bind`.

The generated reference is ``docs/lisp-builtins.md``
(``python -m ptcflow.lisp.builtins.reference``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ptcflow.lisp.builtins import (
    _aggregate,
    _build,
    _compare,
    _extras,
    _format,
    _hof,
    _host,
    _maps,
    _math,
    _output,
    _preds,
    _regex,
    _seqs,
    _sets,
    _sort,
    _strings,
)
from ptcflow.lisp.builtins._host import HOST_CONSTANTS as HOST_CONSTANTS
from ptcflow.lisp.builtins._regex import compile_regex as compile_regex
from ptcflow.lisp.builtins._registry import Registry
from ptcflow.lisp.values import Builtin

__all__ = ("BUILTINS", "CATEGORIES", "HOST_CONSTANTS", "compile_regex")

_REGISTRIES: Final[tuple[Registry, ...]] = (
    _math.REGISTRY,
    _compare.REGISTRY,
    _preds.REGISTRY,
    _seqs.REGISTRY,
    _build.REGISTRY,
    _sort.REGISTRY,
    _hof.REGISTRY,
    _maps.REGISTRY,
    _sets.REGISTRY,
    _strings.REGISTRY,
    _format.REGISTRY,
    _regex.REGISTRY,
    _aggregate.REGISTRY,
    _extras.REGISTRY,
    _output.REGISTRY,
    _host.REGISTRY,
)


def _collect() -> dict[str, Builtin]:
    table: dict[str, Builtin] = {}
    for reg in _REGISTRIES:
        for b in reg.builtins:
            if b.name in table:
                raise RuntimeError(f"builtin {b.name!r} is registered twice")
            table[b.name] = b
    for java, name in _host.HOST_ALIASES.items():  # the Java spelling of a builtin
        b = table[name]
        table[java] = Builtin(
            java,
            b.fn,
            min_arity=b.min_arity,
            max_arity=b.max_arity,
            needs_budget=b.needs_budget,
            doc=f"Same as {name}.",
            signature=b.signature.replace(f"({name}", f"({java}"),
            category="host",
        )
    return table


BUILTINS: Final[Mapping[str, Builtin]] = MappingProxyType(_collect())
"""Every builtin by the name programs use, aliases included."""

CATEGORIES: Final[Mapping[str, str]] = MappingProxyType(
    {reg.category: reg.title for reg in _REGISTRIES}
)
"""Category name -> heading, in reference order."""
