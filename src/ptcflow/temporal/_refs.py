"""References by import path: how a client names a strategy or a tool a worker must load.

Workflows and activities run in other processes (other machines); what they run is named
by import path (``"myapp.tools:search"``) and loaded there. A strategy travels as its class's
path plus its fields (strategies are frozen msgspec structs: their fields are their
configuration); a tool as its function's path plus the options that matter to the
executor. Everything here is plain data, checked on the client before a run starts.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import msgspec

from ptcflow.errors import UsageError
from ptcflow.tools import Tool

__all__ = ("AgentRef", "ToolRef", "agent_ref", "load", "path_of", "public_path", "tool_ref")


class AgentRef(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy by reference: its class's import path and its fields as JSON."""

    path: str
    config: msgspec.Raw = msgspec.Raw(b"null")
    """The fields, or ``null`` for a class built without arguments."""

    def build(self) -> Any:
        """Import the class and rebuild the strategy (raises what the import raises)."""
        cls = load(self.path)
        if bytes(self.config) == b"null":
            return cls()
        return msgspec.json.decode(self.config, type=cls)


class ToolRef(msgspec.Struct, frozen=True, kw_only=True):
    """A tool by reference: its name, its function's import path and executor options."""

    name: str
    path: str
    description: str = ""
    timeout_ms: int | None = None
    max_retries: int | None = None
    blocking: bool = True
    pass_input: bool = False
    signature: str | None = None
    """The tool's signature as text (validates the arguments of programs' calls)."""
    requires_approval: bool | str = False
    """Calls wait for a person's decision: ``True``, or the import path of the predicate
    that decides which (evaluated on the worker that performs the call)."""
    deferred: bool = False
    """The tool has no body: its results come from outside (``ptcflow.Supply``)."""
    approval_timeout: float | None = None
    """Seconds a call may wait for its decision."""

    def build(self) -> Tool:
        """Import the function and make the tool again (raises what the import raises)."""
        fn = load(self.path)
        if isinstance(fn, Tool):
            fn = fn.fn
        rule = self.requires_approval
        return Tool.from_function(
            fn,
            name=self.name,
            description=self.description or None,
            timeout_ms=self.timeout_ms,
            max_retries=self.max_retries,
            blocking=self.blocking,
            pass_input=self.pass_input,
            signature=self.signature,
            requires_approval=load(rule) if isinstance(rule, str) else rule,
            deferred=self.deferred,
            approval_timeout=self.approval_timeout,
        )


def load(path: str) -> Any:
    """Return the object named by ``"package.module:attribute.path"``.

    Raises:
        ImportError: the module cannot be imported.
        AttributeError: the module has no such attribute.
        ValueError: ``path`` has no ``:``.

    Example:
        >>> load("ptcflow.strategies:ReAct").__name__
        'ReAct'
    """
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{path!r} is not an import path; write 'package.module:name'")
    try:
        return _attribute(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        face = _face_of(module)
        if face is None:
            raise
        # a path stored before ptcflow moved its private files (a workflow started on an
        # older release, ``ptcflow.strategies._ptc_state:PtcState``): the class is now
        # found through its package's face, where every class that crosses the wire is
        return _attribute(importlib.import_module(face), attr)


def _attribute(obj: Any, attr: str) -> Any:
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _face_of(module: str) -> str | None:
    """The public face of a private ptcflow module (``ptcflow.x._y`` -> ``ptcflow.x``)."""
    if module.startswith("ptcflow.") and "._" in module:
        return module[: module.index("._")]
    return None


def public_path(cls: type) -> str:
    """The import path under which ``cls`` is stored in a payload: its package's public face.

    A class of ptcflow defined in a private module (``ptcflow.strategies.ptc._state``) is
    named through the face that exports it (``ptcflow.strategies.ptc:PtcState``), so that
    payloads do not depend on where a class's file sits: moving a file inside a package
    keeps every stored path valid. Other classes keep their own module.

    (The class's ``__module__`` is left alone: msgspec resolves a Struct's string
    annotations in the module ``__module__`` names.)

    Example:
        >>> from ptcflow.strategies import ReAct
        >>> public_path(ReAct)
        'ptcflow.strategies.react:ReAct'
    """
    module, qualname = cls.__module__, cls.__qualname__
    if module.startswith("ptcflow.") and "._" in module:
        face = module[: module.index("._")]
        if getattr(sys.modules.get(face) or importlib.import_module(face), qualname, None) is cls:
            return f"{face}:{qualname}"
    return f"{module}:{qualname}"


def path_of(obj: Any, what: str) -> str:
    """The import path of ``obj`` (a module-level class or function), checked.

    Raises:
        UsageError: ``obj`` cannot be imported by name in another process (defined
            inside a function, or in a ``__main__`` script run by path).
    """
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        module = spec.name if spec is not None else None
        if module is None:
            raise UsageError(
                f"{what} {qualname!r} is defined in a script run by its path (__main__), "
                "which a Temporal worker cannot import: move it into a module, or run the "
                "script as a module (python -m package.script)"
            )
    if not module or not qualname or "<locals>" in qualname:
        raise UsageError(
            f"{what} {qualname or obj!r} cannot be imported by name (defined inside a "
            "function?): a Temporal worker loads it by import path; define it at module level"
        )
    path = f"{module}:{qualname}"
    if isinstance(obj, type) and module == obj.__module__:
        path = public_path(obj)
    try:
        found = load(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(
            f"{what} {qualname!r} cannot be loaded back from {path!r}: {exc}"
        ) from None
    if found is not obj and getattr(found, "fn", None) is not obj:
        raise UsageError(
            f"{what} {qualname!r}: {path!r} names another object; define it at module level "
            "under its own name"
        )
    return path


_ENCODER = msgspec.json.Encoder()


def agent_ref(strategy: Any) -> AgentRef:
    """A reference to ``strategy`` that a worker can rebuild.

    Raises:
        UsageError: the strategy is not a module-level class whose instance is data (a
            msgspec struct or a dataclass), nor one built without arguments.
    """
    cls = type(strategy)
    path = path_of(cls, "strategy class")
    if hasattr(cls, "__struct_fields__") or hasattr(cls, "__dataclass_fields__"):
        config = _ENCODER.encode(strategy)
        try:
            back = msgspec.json.decode(config, type=cls)
        except (msgspec.ValidationError, TypeError) as exc:
            back = exc
        if not _same(back, strategy):
            raise UsageError(
                f"strategy {cls.__name__} does not come back equal from JSON, so a Temporal "
                f"worker would run another one ({back!r:.200}): type its fields precisely "
                "(a field typed Any holding a struct comes back as a dict)"
            )
        return AgentRef(path=path, config=msgspec.Raw(config))
    if getattr(strategy, "__dict__", None):
        raise UsageError(
            f"strategy {cls.__name__} holds attributes a Temporal worker cannot rebuild: make "
            "it a frozen msgspec Struct (its fields are its configuration), as ReAct is"
        )
    return AgentRef(path=path)


def _same(back: Any, sent: Any) -> bool:
    """``back`` (decoded on a worker) is ``sent``, as JSON data: equal values of the same
    classes, except that a sequence may come back a list (JSON has no tuples; a tuple in an
    untyped field, such as ``PTC.llm_options``, is read as a list and sent the same)."""
    if isinstance(sent, list | tuple):
        return (
            isinstance(back, list | tuple)
            and len(back) == len(sent)
            and all(_same(b, x) for b, x in zip(back, sent, strict=True))
        )
    if type(back) is not type(sent):
        return False
    if isinstance(sent, dict):
        return back.keys() == sent.keys() and all(_same(back[k], v) for k, v in sent.items())
    fields = getattr(type(sent), "__struct_fields__", None)
    if fields is not None:
        return all(_same(getattr(back, f), getattr(sent, f)) for f in fields)
    return bool(back == sent)


def tool_ref(tool: Tool) -> ToolRef:
    """A reference to ``tool`` that a worker can rebuild (see :class:`ToolRef`).

    Raises:
        UsageError: its function cannot be imported by name, or runs an agent (an agent
            used as a tool is no tool a worker runs: its calls are child workflows,
            planned by ``_agent_tools.plan_tools``).
    """
    if callable(getattr(tool.fn, "plan_child", None)):
        raise UsageError(
            f"tool {tool.name!r} runs an agent ({tool.fn!r}): a worker cannot run it as a "
            "tool; its calls are child workflows, which the run's workflow starts (give it "
            "to the run's or the agent's tools)"
        )
    rule = tool.requires_approval
    return ToolRef(
        name=tool.name,
        path=path_of(tool.fn, f"the function of tool {tool.name!r}"),
        description=tool.description,
        timeout_ms=tool.timeout_ms,
        max_retries=tool.max_retries,
        blocking=tool.blocking,
        pass_input=tool.pass_input,
        signature=None if tool.signature is None else tool.signature.render(),
        requires_approval=(
            rule
            if isinstance(rule, bool)
            else path_of(rule, f"the requires_approval predicate of tool {tool.name!r}")
        ),
        deferred=tool.deferred,
        approval_timeout=tool.approval_timeout,
    )
