"""What :func:`~ptcflow.tools.call_tool` needs to know about a tool, decided once per tool.

A :class:`ToolPlan` is built when the :class:`~ptcflow.tools.Tool` is built. It answers, for
the common call, three questions without looking at the signature again:

* are these arguments valid *exactly as they are*? (``accepts``: every required parameter
  present, no other key, each value of the one Python type the signature accepts
  unchanged, so validation would neither change nor warn about them);
* how is the function called? (awaited, inline, or in a worker thread);
* is the returned value valid exactly as it is? (``output``: the one type the declared
  output accepts unchanged, ``None`` when no output is declared).

Anything the plan cannot answer goes to the general path, which is :func:`dispatch` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from ptcflow.signature import Prim, Signature
from ptcflow.tools._binding import Binding

__all__ = ("ASYNC", "INLINE", "THREAD", "Never", "ToolPlan", "make_plan")

#: How the function runs.
ASYNC: Final = 0
INLINE: Final = 1
THREAD: Final = 2


class Never:
    """A type no value has: the ``output`` of a plan whose outputs always take the long way."""


class _Missing:
    """The type of the "key absent" marker: never a parameter's accepted type."""


_MISSING: Final = _Missing()

# The Python type each primitive accepts unchanged. Inputs: as a signature's fields see
# them (``_validate._EXACT``: a ``:keyword`` field takes a plain str as it is). Outputs: as
# a top-level value (a ``:keyword`` output checks the value further, so it has none).
_INPUT_EXACT: Final[dict[str, type]] = {
    "string": str,
    "keyword": str,
    "int": int,
    "float": float,
    "bool": bool,
    "map": dict,
}
_OUTPUT_EXACT: Final[dict[str, type]] = {
    "string": str,
    "int": int,
    "float": float,
    "bool": bool,
    "map": dict,
}

Accepts = Callable[[dict[str, Any]], bool]


class ToolPlan(msgspec.Struct, frozen=True):
    """A tool's call plan (see the module docstring), built with the tool.

    Attributes:
        fn: the tool's function.
        how: :data:`ASYNC`, :data:`INLINE` or :data:`THREAD`.
        count: how many parameters input can fill (at most as many arguments).
        accepts: ``accepts(arguments)`` is True when a dict of arguments may be passed
            to ``fn`` as keyword arguments unchanged; ``None``: never.
        context: the name of the ``ToolContext`` parameter, if any.
        output: the type of return value that is valid unchanged; ``None`` when the
            output is not validated, :class:`Never` when no value is (ask the signature).
        typed: for a tool whose every parameter is a Python type: builds the keyword
            arguments from the model's, or says ``None`` (take the general path).
    """

    fn: Callable[..., Any]
    how: int
    count: int
    accepts: Accepts | None
    context: str | None
    output: type | None
    typed: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None

    def __repr__(self) -> str:
        fast = "never" if self.accepts is None else f"{self.count} argument(s)"
        return f"ToolPlan(how={('async', 'inline', 'thread')[self.how]}, fast_input={fast})"


def make_plan(
    fn: Callable[..., Any],
    *,
    is_async: bool,
    blocking: bool,
    signature: Signature | None,
    validates_output: bool,
    binding: Binding,
    converts_input: bool = False,
    converts_output: bool = False,
    typed: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
) -> ToolPlan:
    """Decide once how :func:`~ptcflow.tools.call_tool` runs this tool.

    Args:
        fn: the tool's function.
        is_async: whether calling ``fn`` returns an awaitable.
        blocking: whether a sync ``fn`` runs in a worker thread.
        signature: the tool's signature (``None``: input is not validated, no fast path).
        validates_output: whether :func:`dispatch` validates outputs (a signature and an
            output schema).
        binding: how input reaches ``fn``'s parameters.
        converts_input: some parameter is built into a Python type (no fast input).
        converts_output: the return value is turned into plain data first (no fast
            output).
        typed: the typed tool's one-step argument builder (see ``ToolTypes.fast_load``).
    """
    how = ASYNC if is_async else (THREAD if blocking else INLINE)
    fields = None if converts_input else _fast_fields(signature, binding)
    output: type | None = None
    if converts_output:
        output = Never
    elif validates_output and signature is not None:
        node = signature.output
        output = Never
        if isinstance(node, Prim):
            output = _OUTPUT_EXACT.get(node.name, Never)
    return ToolPlan(
        fn=fn,
        how=how,
        count=0 if fields is None else len(fields),
        accepts=None if fields is None else _accepts(fields),
        context=binding.context,
        output=output,
        typed=typed,
    )


_FastField = tuple[str, "type | None", bool, bool]
"""``(name, exact type or None for :any, required, a null means "use the default")``."""


def _fast_fields(signature: Signature | None, binding: Binding) -> tuple[_FastField, ...] | None:
    """How to check each parameter, when every one can be checked by its exact type and
    the signature's parameters are exactly the function's."""
    if signature is None:
        return None
    direct = binding.direct_names()
    if direct is None:
        return None
    slots = {name: (required, drop_none) for name, required, drop_none in direct}
    if len(slots) != len(direct) or len(direct) != len(signature.params):
        return None
    fields: list[_FastField] = []
    for param in signature.params:
        node = param.type
        if param.name not in slots or not isinstance(node, Prim):
            return None
        required, drop_none = slots[param.name]
        # A parameter the signature lets the model omit is left out of the call so the
        # Python default applies; if the function has no default, dispatch reports it.
        required = required or not node.optional
        if node.name == "any":
            fields.append((param.name, None, required, drop_none))
        elif node.name in _INPUT_EXACT:
            fields.append((param.name, _INPUT_EXACT[node.name], required, False))
        else:  # pragma: no cover - the primitive family is closed
            return None
    return tuple(fields)


def _accepts(fields: tuple[_FastField, ...]) -> Accepts:
    """Build ``accepts`` for ``fields``.

    A dict is accepted when each key names a parameter, each required parameter is there,
    and each value has the parameter's exact type (for ``:any``, a null is refused where it
    would mean "use the default"). Closures for one to three required typed parameters
    avoid a loop: with as many keys as parameters and every parameter found, the keys are
    exactly the parameter names.
    """
    count = len(fields)
    if all(exact is not None and required for _, exact, required, _ in fields):
        spec = tuple((name, exact) for name, exact, _, _ in fields)
        if not spec:
            return _no_arguments
        if len(spec) == 1:
            ((n0, t0),) = spec

            def accepts_1(a: dict[str, Any]) -> bool:
                return len(a) == 1 and type(a.get(n0, _MISSING)) is t0

            return accepts_1
        if len(spec) == 2:
            (n0, t0), (n1, t1) = spec

            def accepts_2(a: dict[str, Any]) -> bool:
                get = a.get
                return (
                    len(a) == 2 and type(get(n0, _MISSING)) is t0 and type(get(n1, _MISSING)) is t1
                )

            return accepts_2
        if len(spec) == 3:
            (n0, t0), (n1, t1), (n2, t2) = spec

            def accepts_3(a: dict[str, Any]) -> bool:
                get = a.get
                return (
                    len(a) == 3
                    and type(get(n0, _MISSING)) is t0
                    and type(get(n1, _MISSING)) is t1
                    and type(get(n2, _MISSING)) is t2
                )

            return accepts_3

    def accepts_n(a: dict[str, Any]) -> bool:
        if len(a) > count:
            return False
        get = a.get
        found = 0
        for name, exact, required, drop_none in fields:
            value = get(name, _MISSING)
            if value is _MISSING:
                if required:
                    return False
                continue
            found += 1
            if exact is None:
                if value is None and drop_none:
                    return False
            elif type(value) is not exact:
                return False
        return found == len(a)

    return accepts_n


def _no_arguments(a: dict[str, Any]) -> bool:
    return not a
