"""The analyzed program: nodes with resolved names, produced by the analyzer.

Every local is a :class:`Slot` in the frame of its function arity; the analyzer numbers the
slots (captured values first) once the arity is complete, so the compiler turns a local
reference into ``frame[i]``. Nodes are plain ``__slots__`` classes: the compiler dispatches on
their type once, when it builds closures.
"""

from __future__ import annotations

from typing import Any

from ptcflow.lisp.values import Builtin

__all__ = (
    "And",
    "Arity",
    "BuiltinRef",
    "Call",
    "Case",
    "Const",
    "CtxRef",
    "Def",
    "Do",
    "Fail",
    "FnNode",
    "ForNode",
    "GlobalRef",
    "If",
    "Let",
    "Local",
    "Loop",
    "MapNode",
    "MemGet",
    "MemPut",
    "Node",
    "Or",
    "PDict",
    "PSym",
    "PVec",
    "Pattern",
    "Pcalls",
    "Pmap",
    "Recur",
    "Return",
    "SetNode",
    "Slot",
    "ToolCall",
    "VecNode",
)


class Slot:
    """One local variable; ``index`` is its place in the frame (set when the arity closes)."""

    __slots__ = ("index", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.index = -1

    def __repr__(self) -> str:
        return f"Slot({self.name}@{self.index})"


class Node:
    """Base of analyzed nodes; ``line``/``column`` locate the source form."""

    __slots__ = ("column", "line")

    line: int
    column: int


class Const(Node):
    """A constant value."""

    __slots__ = ("value",)

    def __init__(self, value: Any, line: int, column: int) -> None:
        self.value = value
        self.line = line
        self.column = column


class Local(Node):
    """A reference to a local slot."""

    __slots__ = ("slot",)

    def __init__(self, slot: Slot, line: int, column: int) -> None:
        self.slot = slot
        self.line = line
        self.column = column


class GlobalRef(Node):
    """A ``def``'d name (this turn or an earlier one): read from memory at run time."""

    __slots__ = ("name",)

    def __init__(self, name: str, line: int, column: int) -> None:
        self.name = name
        self.line = line
        self.column = column


class BuiltinRef(Node):
    """A builtin function used as a value or called."""

    __slots__ = ("builtin",)

    def __init__(self, builtin: Builtin, line: int, column: int) -> None:
        self.builtin = builtin
        self.line = line
        self.column = column


class CtxRef(Node):
    """``ctx/key``: a read-only input."""

    __slots__ = ("key",)

    def __init__(self, key: str, line: int, column: int) -> None:
        self.key = key
        self.line = line
        self.column = column


class MemGet(Node):
    """``memory/key`` or ``(memory/get k default?)``."""

    __slots__ = ("default", "key")

    def __init__(self, key: Node, default: Node | None, line: int, column: int) -> None:
        self.key = key
        self.default = default
        self.line = line
        self.column = column


class MemPut(Node):
    """``(memory/put k v)``: returns ``v``."""

    __slots__ = ("key", "value")

    def __init__(self, key: Node, value: Node, line: int, column: int) -> None:
        self.key = key
        self.value = value
        self.line = line
        self.column = column


class If(Node):
    """``(if test then else)``."""

    __slots__ = ("else_", "test", "then")

    def __init__(self, test: Node, then: Node, else_: Node, line: int, column: int) -> None:
        self.test = test
        self.then = then
        self.else_ = else_
        self.line = line
        self.column = column


class Do(Node):
    """``(do a b c)``: the value of the last form (``nil`` when empty)."""

    __slots__ = ("body",)

    def __init__(self, body: tuple[Node, ...], line: int, column: int) -> None:
        self.body = body
        self.line = line
        self.column = column


class And(Node):
    """``(and ...)``."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Node, ...], line: int, column: int) -> None:
        self.items = items
        self.line = line
        self.column = column


class Or(Node):
    """``(or ...)``."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Node, ...], line: int, column: int) -> None:
        self.items = items
        self.line = line
        self.column = column


class Pattern:
    """Base of binding patterns (destructuring)."""

    __slots__ = ()


class PSym(Pattern):
    """Bind the whole value to one slot."""

    __slots__ = ("slot",)

    def __init__(self, slot: Slot) -> None:
        self.slot = slot


class PVec(Pattern):
    """``[a b & rest :as all]``."""

    __slots__ = ("as_", "column", "items", "line", "rest")

    def __init__(
        self,
        items: tuple[Pattern, ...],
        rest: Pattern | None,
        as_: Slot | None,
        line: int = 0,
        column: int = 0,
    ) -> None:
        self.items = items
        self.rest = rest
        self.as_ = as_
        self.line = line
        self.column = column


class PDict(Pattern):
    """``{a :a, :keys [b], :strs [c], :or {b 1}, :as m}``."""

    __slots__ = ("as_", "column", "defaults", "entries", "line")

    def __init__(
        self,
        entries: tuple[tuple[Pattern, Any], ...],
        defaults: dict[Slot, Node],
        as_: Slot | None,
        line: int = 0,
        column: int = 0,
    ) -> None:
        self.entries = entries
        self.defaults = defaults
        self.as_ = as_
        self.line = line
        self.column = column


class Let(Node):
    """``(let [p v ...] body)``."""

    __slots__ = ("bindings", "body")

    def __init__(
        self, bindings: tuple[tuple[Pattern, Node], ...], body: Node, line: int, column: int
    ) -> None:
        self.bindings = bindings
        self.body = body
        self.line = line
        self.column = column


class Loop(Node):
    """``(loop [p v ...] body)`` with ``recur`` back to the top."""

    __slots__ = ("bindings", "body")

    def __init__(
        self, bindings: tuple[tuple[Pattern, Node], ...], body: Node, line: int, column: int
    ) -> None:
        self.bindings = bindings
        self.body = body
        self.line = line
        self.column = column


class Recur(Node):
    """``(recur a b)`` in tail position of a ``loop`` or ``fn``."""

    __slots__ = ("args",)

    def __init__(self, args: tuple[Node, ...], line: int, column: int) -> None:
        self.args = args
        self.line = line
        self.column = column


class Arity:
    """One arity of a function: its parameters, body and frame layout."""

    __slots__ = ("body", "captures", "has_recur", "nslots", "params", "rest", "self_slot")

    def __init__(self) -> None:
        self.params: tuple[Pattern, ...] = ()
        self.rest: Pattern | None = None
        self.body: Node | None = None
        self.captures: tuple[tuple[Slot, Slot], ...] = ()  # (outer slot, inner slot)
        self.nslots = 0
        self.self_slot: Slot | None = None
        self.has_recur = False


class FnNode(Node):
    """``(fn name? [params] body)`` or multi-arity ``(fn ([a] ...) ([a b] ...))``."""

    __slots__ = ("arities", "name")

    def __init__(
        self, name: str | None, arities: tuple[Arity, ...], line: int, column: int
    ) -> None:
        self.name = name
        self.arities = arities
        self.line = line
        self.column = column


class Def(Node):
    """``(def name value)``: stores into memory, returns the value."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Node, line: int, column: int) -> None:
        self.name = name
        self.value = value
        self.line = line
        self.column = column


class Call(Node):
    """A function call."""

    __slots__ = ("args", "fn")

    def __init__(self, fn: Node, args: tuple[Node, ...], line: int, column: int) -> None:
        self.fn = fn
        self.args = args
        self.line = line
        self.column = column


class Case(Node):
    """``(case e k1 v1 (k2 k3) v2 default?)``; constants looked up in a dict."""

    __slots__ = ("default", "expr", "table")

    def __init__(
        self,
        expr: Node,
        table: list[tuple[Any, Node]],
        default: Node | None,
        line: int,
        column: int,
    ) -> None:
        self.expr = expr
        self.table = table
        self.default = default
        self.line = line
        self.column = column


class ForNode(Node):
    """``for`` (collects) or ``doseq`` (returns nil); clauses are
    ``("bind", pattern, coll)``, ``("when", node)``, ``("while", node)``,
    ``("let", ((pattern, node), ...))``."""

    __slots__ = ("body", "clauses", "collect")

    def __init__(
        self,
        clauses: tuple[tuple[Any, ...], ...],
        body: Node,
        collect: bool,
        line: int,
        column: int,
    ) -> None:
        self.clauses = clauses
        self.body = body
        self.collect = collect
        self.line = line
        self.column = column


class VecNode(Node):
    """A vector literal with expressions inside."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Node, ...], line: int, column: int) -> None:
        self.items = items
        self.line = line
        self.column = column


class SetNode(Node):
    """A set literal with expressions inside."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Node, ...], line: int, column: int) -> None:
        self.items = items
        self.line = line
        self.column = column


class MapNode(Node):
    """A map literal with expressions inside."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[Node, Node], ...], line: int, column: int) -> None:
        self.items = items
        self.line = line
        self.column = column


class ToolCall(Node):
    """``(call "name" {...})`` or ``(ctx/name {...})``."""

    __slots__ = ("args", "name")

    def __init__(self, name: Node, args: Node | None, line: int, column: int) -> None:
        self.name = name
        self.args = args
        self.line = line
        self.column = column


class Return(Node):
    """``(return v)``: ends the program successfully with ``v``."""

    __slots__ = ("value",)

    def __init__(self, value: Node, line: int, column: int) -> None:
        self.value = value
        self.line = line
        self.column = column


class Fail(Node):
    """``(fail v)``: ends the program as a failure carrying ``v``."""

    __slots__ = ("value",)

    def __init__(self, value: Node, line: int, column: int) -> None:
        self.value = value
        self.line = line
        self.column = column


class Pmap(Node):
    """``(pmap f coll)``: concurrent map."""

    __slots__ = ("coll", "fn")

    def __init__(self, fn: Node, coll: Node, line: int, column: int) -> None:
        self.fn = fn
        self.coll = coll
        self.line = line
        self.column = column


class Pcalls(Node):
    """``(pcalls f g ...)``: call zero-argument functions concurrently."""

    __slots__ = ("fns",)

    def __init__(self, fns: tuple[Node, ...], line: int, column: int) -> None:
        self.fns = fns
        self.line = line
        self.column = column
