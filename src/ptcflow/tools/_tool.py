"""The :class:`Tool`: a Python callable plus the data a model needs to call it."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from ptcflow.errors import UsageError
from ptcflow.signature import (
    Prim,
    Signature,
    parse,
)
from ptcflow.tools._binding import Binding
from ptcflow.tools._docstrings import parse_docstring
from ptcflow.tools._infer import (
    check_matches,
    output_hint,
    schemas_from_hints,
    signature_from_params,
    signature_from_schema,
    with_docs,
)
from ptcflow.tools._introspect import (
    ParamInfo,
    callable_doc,
    callable_name,
    context_param,
    inspect_callable,
    is_async_callable,
)
from ptcflow.tools._messages import ToolDefinition
from ptcflow.tools._plan import ToolPlan, make_plan
from ptcflow.tools._types import ToolTypes, tool_types

__all__ = ("TOOL_NAME_RE", "Tool")

#: Names every major provider accepts for a function tool.
TOOL_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")

_SIGNATURE_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_EMPTY_HINT: Final = inspect.Parameter.empty
_UNKNOWN: Final[Any] = object()


def _check_name(name: object) -> str:
    if not isinstance(name, str) or TOOL_NAME_RE.fullmatch(name) is None:
        fixed = re.sub(r"[^A-Za-z0-9_-]+", "_", str(name)).strip("_")[:64] or "my_tool"
        raise UsageError(
            f"invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-' (model "
            f"providers reject anything else), e.g. name={fixed!r}"
        )
    return name


def _check_option(label: str, value: object, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(
            f"{label} must be an int >= {minimum} or None (inherit the executor's default), "
            f"got {value!r}"
        )
    return value


def _is_any(node: Any) -> bool:
    return isinstance(node, Prim) and node.name == "any"


class Tool:
    """A callable, model-facing tool.

    Most tools are built from a function with :func:`tool` / :meth:`Tool.from_function`,
    which infer everything. The constructor is the low-level form: give the schema (or a
    signature) yourself, for example for tools whose schema comes from an external system.

    Args:
        name: the name the model calls the tool by (``[A-Za-z0-9_-]{1,64}``).
        fn: the callable that does the work, sync or async.
        description: when and why to call the tool.
        signature: the input/output contract, as text (``"(q :string) -> [:string]"``) or
            a :class:`~ptcflow.signature.Signature`. Inputs are validated against it.
        input_schema: JSON Schema of the input; derived from ``signature`` when omitted.
            Given without a signature, a signature is derived from it (types, required
            and nullable fields; other keywords are not checked) to validate input.
        output_schema: JSON Schema of the output; derived from ``signature`` when omitted
            (``None`` when the output is ``:any``).
        pass_input: call ``fn(input_map)`` instead of ``fn(**input_map)``.
        timeout_ms: per-attempt timeout the executor applies (``None``: inherit).
        max_retries: retries the executor allows (``None``: inherit).
        blocking: for a sync ``fn``: ``True`` (default) runs it in a worker thread so it
            cannot stall the event loop; ``False`` calls it inline, for quick pure
            functions (saves the thread hop, about 0.1-0.4 ms).
        param_docs: parameter name -> description, put into ``input_schema``.
        calls_model: the tool runs a model (an agent or an LLM tool); compile refuses an
            agent that has one.
        requires_approval: ``True`` makes every call wait for a person's decision
            (``ptcflow.Approve`` / ``Deny`` / ``Supply``, see ``docs/approvals.md``); a
            predicate ``(arguments) -> bool`` or ``(arguments, ToolContext) -> bool`` asks
            only for the calls it returns true for (a string it returns is the reason shown).
        deferred: the tool has no body in this process: every call waits for its result
            from outside (``ptcflow.Supply(value)``); ``fn`` only describes it.
        approval_timeout: seconds a call may wait for its decision; past it the call ends
            with an ``approval_expired`` error the model reads (``None``: no limit).

    Raises:
        UsageError: an invalid name, option, or signature.

    Example:
        >>> def search(query: str) -> list[str]:
        ...     return [query]
        >>> web = Tool("web", search, signature="(query :string) -> [:string]")
        >>> web.input_schema["required"]
        ['query']
    """

    __slots__ = (
        "_binding",
        "_derived",
        "_params",
        "_plan",
        "_returns",
        "_types",
        "approval_timeout",
        "blocking",
        "calls_model",
        "context_param",
        "deferred",
        "description",
        "fn",
        "input_schema",
        "is_async",
        "max_retries",
        "name",
        "output_schema",
        "param_docs",
        "pass_input",
        "requires_approval",
        "signature",
        "timeout_ms",
    )

    name: str
    fn: Callable[..., Any]
    description: str
    signature: Signature | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    pass_input: bool
    is_async: bool
    timeout_ms: int | None
    max_retries: int | None
    blocking: bool
    calls_model: bool
    requires_approval: bool | Callable[..., Any]
    deferred: bool
    approval_timeout: float | None
    param_docs: dict[str, str]
    context_param: str | None
    _binding: Binding
    _derived: bool
    _params: list[ParamInfo] | None
    _plan: ToolPlan
    _returns: Any
    _types: ToolTypes | None

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        description: str = "",
        signature: str | Signature | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        pass_input: bool = False,
        timeout_ms: int | None = None,
        max_retries: int | None = None,
        blocking: bool = True,
        param_docs: Mapping[str, str] | None = None,
        calls_model: bool = False,
        requires_approval: bool | Callable[..., Any] = False,
        deferred: bool = False,
        approval_timeout: float | None = None,
    ) -> None:
        if not callable(fn):
            raise UsageError(f"tool {name!r} needs a callable fn, got {type(fn).__name__}")
        if isinstance(signature, str):
            signature = parse(signature)
        if signature is not None and not isinstance(signature, Signature):
            raise UsageError(
                f"tool {name!r}: signature must be a string or a Signature, "
                f"got {type(signature).__name__}"
            )
        docs = dict(param_docs or {})
        derived = signature is None and input_schema is not None
        if derived and input_schema is not None:
            signature = signature_from_schema(input_schema, output_schema)
        set_ = object.__setattr__
        set_(self, "name", _check_name(name))
        set_(self, "fn", fn)
        set_(self, "description", description or "")
        set_(self, "signature", signature)
        set_(self, "_derived", derived)
        set_(self, "pass_input", bool(pass_input))
        set_(self, "is_async", is_async_callable(fn))
        set_(self, "timeout_ms", _check_option("timeout_ms", timeout_ms, 1))
        set_(self, "max_retries", _check_option("max_retries", max_retries, 0))
        set_(self, "blocking", bool(blocking))
        set_(self, "calls_model", bool(calls_model))
        set_(self, "requires_approval", _check_approval(name, requires_approval))
        set_(self, "deferred", bool(deferred))
        if approval_timeout is not None and (
            isinstance(approval_timeout, bool)
            or not isinstance(approval_timeout, int | float)
            or not approval_timeout > 0
        ):
            raise UsageError(
                f"tool {name!r}: approval_timeout must be a number of seconds > 0 or None, "
                f"got {approval_timeout!r}"
            )
        set_(self, "approval_timeout", approval_timeout)
        set_(self, "param_docs", docs)
        if input_schema is None:
            input_schema = with_docs(signature.input_schema(), docs) if signature else None
        set_(
            self,
            "input_schema",
            dict(input_schema or {"type": "object", "properties": {}, "required": []}),
        )
        if output_schema is None and signature is not None and not _is_any(signature.output):
            output_schema = signature.output_schema()
        set_(self, "output_schema", dict(output_schema) if output_schema is not None else None)
        params = getattr(self, "_params", _UNKNOWN)  # set by _new_tool: fn inspected already
        returns = getattr(self, "_returns", _EMPTY_HINT)
        if params is _UNKNOWN:
            try:
                params, returns = inspect_callable(fn)
            except UsageError:
                params = None  # builtins without a readable signature: pass arguments as given
        set_(self, "_params", params)
        set_(self, "_returns", returns)
        ctx = context_param(params) if params else None
        set_(self, "context_param", ctx)
        binding = Binding(self.name, params, ctx, pass_input=self.pass_input)
        set_(self, "_binding", binding)
        types = tool_types(
            params,
            ctx,
            output_hint(returns),
            pass_input=self.pass_input,
            declared=frozenset(p.name for p in signature.params) if signature else None,
        )
        set_(self, "_types", types)
        plan = make_plan(
            fn,
            is_async=self.is_async,
            blocking=self.blocking,
            signature=signature,
            validates_output=signature is not None and self.output_schema is not None,
            binding=binding,
            converts_input=types is not None and bool(types.inputs),
            converts_output=types is not None and types.output is not None,
            typed=types.fast_load(binding.direct_names()) if types is not None else None,
        )
        set_(self, "_plan", plan)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"Tool is immutable; use tool.replace({key}=...) for a changed copy")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("Tool is immutable")

    def __repr__(self) -> str:
        rendered = self.signature.with_name(None).render() if self.signature else "(...)"
        return f"Tool(name={self.name!r}, signature={rendered!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tool):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in _COMPARED)

    def __hash__(self) -> int:
        return hash((self.name, self.signature, id(self.fn)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation), so decorated functions
        stay usable as plain functions."""
        return self.fn(*args, **kwargs)

    @property
    def definition(self) -> ToolDefinition:
        """The data sent to a model: name, description and schemas (no callable)."""
        return ToolDefinition(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
        )

    @property
    def untyped(self) -> list[str]:
        """What of its contract the tool does not specify: ``["(no signature)"]`` when it
        has none (a ``pass_input`` tool), else the parameters that have neither a type
        hint nor a type in the signature (they accept anything). Empty for a fully
        specified tool (``signature_validation="strict"`` requires that).

        Example:
            >>> def loose(x, y: int) -> int: ...
            >>> import warnings
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     Tool.from_function(loose).untyped
            ['x']
        """
        sig = self.signature
        if sig is None:
            return ["(no signature)"]
        params = self._params
        if params is None:
            return []
        hinted = {p.name for p in params if p.hint is not _EMPTY_HINT}
        return [p.name for p in sig.params if _is_any(p.type) and p.name not in hinted]

    def replace(self, **changes: Any) -> Tool:
        """Return a copy with some constructor arguments changed.

        Changing ``signature`` re-derives the schemas unless they are changed too.

        Example:
            >>> t = Tool("a", len, signature="(x :any) -> :int")
            >>> t.replace(name="length").name
            'length'
        """
        unknown = set(changes) - _CONSTRUCTOR_ARGS
        if unknown:
            raise UsageError(
                f"Tool.replace() got unknown fields {sorted(unknown)}; "
                f"known: {sorted(_CONSTRUCTOR_ARGS)}"
            )
        kwargs: dict[str, Any] = {k: getattr(self, k) for k in _CONSTRUCTOR_ARGS}
        if "signature" in changes:
            kwargs["input_schema"] = None
            kwargs["output_schema"] = None
        elif self._derived and ("input_schema" in changes or "output_schema" in changes):
            kwargs["signature"] = None  # derive it again from the new schemas
        kwargs.update(changes)
        same = kwargs["fn"] is self.fn
        return _new_tool(
            self._params if same else _UNKNOWN, self._returns if same else _EMPTY_HINT, **kwargs
        )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        signature: str | Signature | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        pass_input: bool = False,
        timeout_ms: int | None = None,
        max_retries: int | None = None,
        blocking: bool | None = None,
        requires_approval: bool | Callable[..., Any] | None = None,
        deferred: bool | None = None,
        approval_timeout: float | None = None,
    ) -> Tool:
        """Build a tool from a function, inferring what is not overridden.

        The name is the function's ``__qualname__`` (see :func:`callable_name`), the
        description the docstring's summary, per-parameter docs (Google, NumPy or Sphinx
        style) become schema descriptions, and the input/output types come from the type
        hints. An explicit ``signature`` replaces the hints. A parameter annotated
        :class:`ToolContext` is injected at dispatch and left out of the schema.

        Args:
            fn: a function, method, ``functools.partial`` or callable object; sync or async.
            name: override the name.
            description: override the description.
            signature: an explicit contract (text or Signature) instead of the hints.
            input_schema: an explicit JSON Schema for the input.
            output_schema: an explicit JSON Schema for the output.
            pass_input: call ``fn(input_map)`` instead of unpacking the map.
            timeout_ms: per-attempt timeout for the executor (``None``: inherit).
            max_retries: retries for the executor (``None``: inherit).
            blocking: ``False`` calls a sync function inline instead of in a worker
                thread (only for quick functions that never block).
            requires_approval: ``True``, or a predicate on the call's arguments (and its
                ``ToolContext``): calls wait for a person's decision (see :class:`Tool`).
            deferred: the function only describes the tool; results come from outside.
            approval_timeout: seconds a call may wait for its decision.

        Returns:
            The tool.

        Raises:
            UsageError: ``fn`` is not callable, a hint has no signature equivalent, or the
                signature does not match the function's parameters.

        Warns:
            SignatureWarning: a parameter has no type hint (it becomes ``:any``).

        Example:
            >>> def add(x: int, y: int) -> int:
            ...     '''Add two integers.'''
            ...     return x + y
            >>> Tool.from_function(add).definition.input_schema["required"]
            ['x', 'y']
        """
        if isinstance(fn, Tool):
            overrides = {
                k: v
                for k, v in {
                    "name": name,
                    "description": description,
                    "signature": signature,
                    "input_schema": input_schema,
                    "output_schema": output_schema,
                    "timeout_ms": timeout_ms,
                    "max_retries": max_retries,
                    "blocking": blocking,
                    "requires_approval": requires_approval,
                    "deferred": deferred,
                    "approval_timeout": approval_timeout,
                }.items()
                if v is not None
            }
            if pass_input:
                overrides["pass_input"] = True
            return fn.replace(**overrides) if overrides else fn
        tool_name = name if name is not None else callable_name(fn)
        params, output_hint_ = inspect_callable(fn)
        if signature is None and input_schema is None and _takes_the_map(fn, params):
            pass_input = True  # the spec's ``fn _args -> ...``: the whole argument map
        explicit_output = output_schema is not None
        ctx = context_param(params)
        doc = parse_docstring(callable_doc(fn))
        if isinstance(signature, str):
            signature = parse(signature)
        if signature is None and not pass_input:
            signature = signature_from_params(tool_name, params, output_hint_, ctx)
            if input_schema is None and output_schema is None:
                input_schema, output_schema = schemas_from_hints(signature, params, output_hint_)
                input_schema = with_docs(input_schema, doc.params)
        elif signature is not None and not pass_input:
            check_matches(tool_name, signature, params, ctx)
        if signature is not None and _SIGNATURE_NAME_RE.fullmatch(tool_name):
            signature = signature.with_name(tool_name)
        returns = doc.returns if not explicit_output and signature is not None else ""
        if returns and signature is not None and not _is_any(signature.output):
            output_schema = {**(output_schema or signature.output_schema()), "description": returns}
        return _new_tool(
            params,
            output_hint_,
            name=tool_name,
            fn=fn,
            description=doc.summary if description is None else description,
            signature=signature,
            input_schema=input_schema,
            output_schema=output_schema,
            pass_input=pass_input,
            timeout_ms=timeout_ms,
            max_retries=max_retries,
            blocking=True if blocking is None else blocking,
            param_docs=doc.params,
            requires_approval=False if requires_approval is None else requires_approval,
            deferred=bool(deferred),
            approval_timeout=approval_timeout,
        )

    def approval_reason(self, arguments: Any, context: object = None) -> str | None:
        """Why a call with ``arguments`` must wait (``None``: it runs now).

        ``"deferred tool"`` for a deferred tool, ``"requires approval"`` for
        ``requires_approval=True``, else the predicate's answer: true (or a non-empty
        string, used as the reason) asks. A predicate taking two parameters also gets the
        call's ``ToolContext`` (``context``).

        Raises:
            Exception: what the predicate raised (the runtime ends the call with it).
        """
        if self.deferred:
            return "deferred tool"
        rule = self.requires_approval
        if rule is False:
            return None
        if rule is True:
            return "requires approval"
        verdict = rule(arguments, context) if _takes_two(rule) else rule(arguments)
        if inspect.isawaitable(verdict):
            close = getattr(verdict, "close", None)
            if close is not None:
                close()
            raise UsageError(
                f"tool {self.name!r}: the requires_approval predicate must be a plain "
                "function returning a bool, not a coroutine function"
            )
        if isinstance(verdict, str):
            return verdict or None
        return "requires approval" if verdict else None

    def arguments(
        self, values: Mapping[str, Any], context: object = None
    ) -> tuple[list[Any], dict[str, Any], list[str]]:
        """Map validated named input to ``(args, kwargs, notes)`` for calling :attr:`fn`.

        See :meth:`Binding.bind`: defaults, nulls, unknown names and the context.

        Raises:
            KeyError: a required parameter is missing (the key names it).
        """
        return self._binding.bind(values, context)


# _binding and _plan are derived from the rest and have no __eq__.
_COMPARED: Final = tuple(
    s for s in Tool.__slots__ if s not in ("_binding", "_plan", "_types", "_returns")
)


def _check_approval(name: str, rule: Any) -> bool | Callable[..., Any]:
    if rule is True or rule is False:
        return bool(rule)
    if rule is None:
        return False
    if not callable(rule):
        raise UsageError(
            f"tool {name!r}: requires_approval takes True, False or a predicate "
            f"(arguments) -> bool, got {type(rule).__name__}"
        )
    return cast(Callable[..., Any], rule)


def _takes_two(fn: Callable[..., Any]) -> bool:
    """True for a predicate that takes the call's ToolContext too."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _takes_the_map(fn: Callable[..., Any], params: list[ParamInfo]) -> bool:
    """True for the spec's anonymous-function tool: a lambda of one unannotated
    parameter (``lambda _args: ...``), or any function whose only parameter is an
    unannotated ``_args`` / ``args``: it receives the whole argument map."""
    if len(params) != 1:
        return False
    (only,) = params
    if only.kind not in ("keyword", "positional") or only.has_default:
        return False
    if only.hint is not _EMPTY_HINT:
        return False
    return getattr(fn, "__name__", "") == "<lambda>" or only.name in ("_args", "args")


def _new_tool(params: Any, returns: Any, **fields: Any) -> Tool:
    """Build a tool from already-inspected parameters and return hint (``_UNKNOWN``:
    inspect ``fn``)."""
    built = Tool.__new__(Tool)
    if params is not _UNKNOWN:
        object.__setattr__(built, "_params", params)
        object.__setattr__(built, "_returns", returns)
    Tool.__init__(built, **fields)
    return built


_CONSTRUCTOR_ARGS: Final = frozenset(inspect.signature(Tool).parameters)
