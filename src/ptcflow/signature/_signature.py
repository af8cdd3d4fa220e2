"""The :class:`Signature` struct: parameters, output type, and what you can do with them."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import msgspec

from ptcflow.signature._ast import ANY, NAME_RE, AnyType, Fields, Param
from ptcflow.signature._errors import SignatureError
from ptcflow.signature._render import View, check_view, render_type
from ptcflow.signature._schema import type_schema
from ptcflow.signature._validate import Compiled, ValidationResult, check_mode, compile_type

__all__ = ("Signature", "render_signature", "validate_return")

_NEVER_REJECTS = frozenset(("warn_only", "disabled"))


class Signature(msgspec.Struct, frozen=True, kw_only=True, cache_hash=True):
    """A parsed signature: named input parameters and an output type.

    Build one with :func:`ptcflow.signature.parse`. Signatures are immutable, hashable
    and compared by value; for every signature built by :func:`parse` or
    :func:`signature_from_callable`, ``parse(sig.render()) == sig``.

    Attributes:
        params: the input parameters, in order.
        output: the output type.
        name: an optional name, rendered as a prefix (``search(q :string) -> :int``).

    Example:
        >>> from ptcflow.signature import parse
        >>> sig = parse("(id :int) -> {name :string}")
        >>> sig.validate_input({"id": "42"}).value
        {'id': 42}
    """

    params: tuple[Param, ...] = ()
    output: AnyType = ANY
    name: str | None = None

    # -- structure -------------------------------------------------------------------------
    @property
    def input_type(self) -> Fields:
        """The parameters seen as one map type ``{param :t, ...}``."""
        return Fields(fields=self.params)

    def param(self, name: str) -> Param | None:
        """Return the parameter called ``name``, or ``None``."""
        for param in self.params:
            if param.name == name:
                return param
        return None

    def with_name(self, name: str | None) -> Signature:
        """Return a copy with another name (``None`` removes it).

        Raises:
            SignatureError: ``name`` cannot be written in a signature.
        """
        if name is not None and (not isinstance(name, str) or NAME_RE.fullmatch(name) is None):
            raise SignatureError(
                f"signature name {name!r} is not a name: use letters, digits, _ and -, "
                "starting with a letter or _"
            )
        return msgspec.structs.replace(self, name=name)

    # -- validation ------------------------------------------------------------------------
    def validate_input(
        self, args: Mapping[Any, Any] | None, mode: str = "enabled"
    ) -> ValidationResult:
        """Validate (and leniently coerce) tool-call arguments against the parameters.

        Strings holding numbers or booleans are coerced with a warning (``"42"`` to
        ``42``), ints become floats silently for ``:float``; keys may be strings, ``":k"``
        or keyword objects and come back as plain field names.

        Args:
            args: a map from parameter name to value (``None`` means no arguments).
            mode: ``"enabled"`` (default: extra arguments allowed), ``"strict"`` (extra
                arguments rejected), ``"warn_only"`` (errors become warnings, ``ok`` stays
                True) or ``"disabled"`` (no checks).

        Returns:
            A :class:`ValidationResult` whose ``value`` is the coerced argument map.

        Raises:
            UsageError: ``mode`` is unknown.
        """
        checked = check_mode(mode)
        if args is None:
            args = {}
        if checked == "disabled":
            return ValidationResult(ok=True, value=args, errors=[], warnings=[])
        compiled = _input_validator(self, checked == "strict")
        return compiled.run(args, warn_only=checked == "warn_only")

    def validate_output(self, value: Any, mode: str = "enabled") -> ValidationResult:
        """Validate a returned value against the output type, strictly (no coercion).

        Args:
            value: the value to check.
            mode: as for :meth:`validate_input`.

        Returns:
            A :class:`ValidationResult` whose ``value`` is ``value`` itself.

        Raises:
            UsageError: ``mode`` is unknown.

        Example:
            >>> from ptcflow.signature import parse
            >>> parse("{count :int}").validate_output({"count": "5"}).errors
            ['count: expected int, got string "5"']
        """
        checked = check_mode(mode)
        if checked == "disabled":
            return ValidationResult(ok=True, value=value, errors=[], warnings=[])
        compiled = compile_type(self.output, False, checked == "strict")
        return compiled.run(value, warn_only=checked == "warn_only")

    # -- rendering and schemas ---------------------------------------------------------------
    def render(self, view: View = "full") -> str:
        """Render canonical compact text, e.g. ``search(query :string) -> [{id :int}]``.

        Args:
            view: ``"full"`` (everything), ``"prompt"`` (firewalled ``_fields`` of the
                output shown as ``<Firewalled>``) or ``"parent"`` (they are left out).

        Raises:
            UsageError: ``view`` is unknown.
        """
        return render_signature(self, check_view(view))

    def __str__(self) -> str:
        return self.render()

    def input_schema(self) -> dict[str, Any]:
        """JSON Schema (draft 2020-12 subset) of the parameters as one object."""
        return type_schema(self.input_type)

    def output_schema(self, view: View = "full") -> dict[str, Any]:
        """JSON Schema of the output type (``view="parent"`` drops firewalled fields)."""
        return type_schema(self.output, check_view(view))

    def json_schema(self) -> dict[str, Any]:
        """Both schemas: ``{"input": {...object...}, "output": {...}}``."""
        return {"input": self.input_schema(), "output": self.output_schema()}


def validate_return(
    signature: Signature | None, value: Any, mode: str = "enabled", *, warnings: bool = True
) -> ValidationResult:
    """Check a value an agent's program returned against the agent's output type.

    The one answer to "does this ``return`` end the run": the SubAgent strategies end the
    run when ``ok`` is true (else they feed the errors back to the model), and the program
    host asks the same question of the same plain value, so that a program whose
    ``return`` ends the run does not write memory nobody reads. No signature accepts
    anything; ``warn_only`` and ``disabled`` never reject.

    Args:
        signature: the agent's signature, or ``None``.
        value: the returned value, as plain data.
        mode: ``enabled``, ``strict``, ``warn_only`` or ``disabled`` (``":strict"`` too).
        warnings: ``False`` when only ``ok`` is needed: a mode that never rejects then
            answers without walking the value (and without its warnings).

    Returns:
        The :class:`ValidationResult` of :meth:`Signature.validate_output`.

    Raises:
        UsageError: ``mode`` is unknown.

    Example:
        >>> from ptcflow.signature import parse
        >>> validate_return(parse("{n :int}"), {"n": "4"}).ok
        False
        >>> validate_return(None, "anything").ok
        True
    """
    if signature is None or (not warnings and check_mode(mode) in _NEVER_REJECTS):
        return ValidationResult(ok=True, value=value, errors=[], warnings=[])
    return signature.validate_output(value, mode)


@functools.lru_cache(maxsize=1024)
def _input_validator(sig: Signature, strict: bool) -> Compiled:
    return compile_type(sig.input_type, True, strict)


def render_signature(sig: Signature, view: View = "full") -> str:
    """Render a signature: ``name(a :int) -> :string``, ``(a :int) -> :string`` or the
    bare output when it has neither name nor parameters."""
    output = render_type(sig.output, view)
    if sig.name is None and not sig.params:
        return output
    params = ", ".join(f"{p.name} {render_type(p.type, 'full')}" for p in sig.params)
    return f"{sig.name or ''}({params}) -> {output}"
