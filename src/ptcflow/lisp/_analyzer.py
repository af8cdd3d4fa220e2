"""The analyzer: forms to nodes, with every name resolved and every shape checked.

Nothing runs until the whole program has been analyzed, so a program with a typo, an unknown
tool or a malformed special form calls no tool at all. Locals become frame slots (captured
values are copied into the closure's frame when a ``fn`` is created), ``def``'d names and memory
become globals, everything else must be a builtin. Errors say what is wrong and how to fix it
("did you mean", the list of tools, the right shape of the form).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from ptcflow.lisp import _ast as A
from ptcflow.lisp._colls import EMPTY_VEC
from ptcflow.lisp._forms import Form, ListForm, Lit, MapForm, SetForm, Sym, VecForm, form_to_value
from ptcflow.lisp._internal import INTERNAL
from ptcflow.lisp._sandbox import FORBIDDEN, check_symbol
from ptcflow.lisp._special_forms import SPECIAL_FORMS
from ptcflow.lisp._specials import MACROS, SHAPES, check_shape, fail_at, require
from ptcflow.lisp.builtins._host import HOST_CONSTANTS
from ptcflow.lisp.limits import Budget
from ptcflow.lisp.values import Builtin, Keyword

__all__ = ("AGENT_TOOLS", "Analyzer", "Program", "Scope")

AGENT_TOOLS: Final = frozenset({"return", "fail"})


class Scope:
    """The locals of one function arity (or of the program's top level)."""

    __slots__ = ("blocks", "bound", "captures", "fn_name", "parent", "self_slot", "slots")

    def __init__(self, parent: Scope | None, fn_name: str | None = None) -> None:
        self.parent = parent
        self.blocks: list[dict[str, A.Slot]] = [{}]
        self.slots: list[A.Slot] = []
        self.captures: dict[A.Slot, A.Slot] = {}
        self.fn_name = fn_name
        self.self_slot: A.Slot | None = None
        # Every name bound so far in any scope of the program (shared, only grows): a name
        # outside it is no local anywhere, so most builtin lookups stop at one set test.
        self.bound: set[str] = set() if parent is None else parent.bound
        if fn_name is not None:
            self.bound.add(fn_name)

    def bind(self, names: Mapping[str, A.Slot]) -> None:
        """Bind ``names`` in the innermost block."""
        self.blocks[-1].update(names)
        self.bound.update(names)

    def new_slot(self, name: str) -> A.Slot:
        """Allocate a slot in this arity's frame."""
        slot = A.Slot(name)
        self.slots.append(slot)
        return slot

    def lookup(self, name: str) -> A.Slot | None:
        """Find ``name`` here or in an enclosing arity (recording a capture)."""
        if name not in self.bound:
            return None
        for block in reversed(self.blocks):
            slot = block.get(name)
            if slot is not None:
                return slot
        if name == self.fn_name:
            if self.self_slot is None:
                self.self_slot = self.new_slot(name)
            return self.self_slot
        if self.parent is None:
            return None
        outer = self.parent.lookup(name)
        if outer is None:
            return None
        inner = self.captures.get(outer)
        if inner is None:
            inner = A.Slot(name)
            self.captures[outer] = inner
        return inner

    def visible(self) -> Iterable[str]:
        """Every local name visible here (for suggestions)."""
        scope: Scope | None = self
        while scope is not None:
            for block in scope.blocks:
                yield from block
            if scope.fn_name:
                yield scope.fn_name
            scope = scope.parent

    def child(self, fn_name: str | None) -> Scope:
        """A new arity scope nested in this one."""
        return Scope(self, fn_name)

    def finish(self) -> tuple[tuple[tuple[A.Slot, A.Slot], ...], int]:
        """Number the slots (captures first) and return ``(captures, frame size)``."""
        order = list(self.captures.values()) + self.slots
        for i, slot in enumerate(order):
            slot.index = i
        return tuple(self.captures.items()), len(order)


class Program:
    """An analyzed program: the top-level body and its frame size."""

    __slots__ = ("body", "ctx_used", "defs", "nslots", "tools_used")

    def __init__(
        self,
        body: A.Node,
        nslots: int,
        defs: frozenset[str],
        tools: frozenset[str],
        ctx_used: frozenset[str] = frozenset(),
    ):
        self.body = body
        self.nslots = nslots
        self.defs = defs
        self.tools_used = tools
        self.ctx_used = ctx_used  # the ctx keys the program reads (ctx/key)


class Analyzer:
    """Analyzes the forms of one program.

    Args:
        builtins: the builtin registry.
        tool_names: the tools a program may call (``None``: do not check).
        ctx_keys: the keys of ``ctx`` (``None``: do not check).
        globals_: names already in memory (``def``'d in earlier turns).
        global_fns: the names among ``globals_`` that hold functions: like this program's own
            ``def``s they shadow builtins; other memory names never do.
        budget: a run's budget: each form analyzed counts a step (``None`` outside a run).
    """

    def __init__(
        self,
        builtins: Mapping[str, Builtin],
        *,
        tool_names: Collection[str] | None,
        ctx_keys: Collection[str] | None,
        globals_: Collection[str],
        global_fns: Collection[str] = (),
        budget: Budget | None = None,
    ) -> None:
        self.builtins = builtins
        self.budget = budget
        self.tool_names = None if tool_names is None else frozenset(tool_names)
        self.ctx_keys = None if ctx_keys is None else frozenset(ctx_keys)
        self.globals: set[str] = set(globals_)
        self.global_fns = frozenset(global_fns)
        self.defs: set[str] = set()
        self.tools_used: set[str] = set()
        self.ctx_used: set[str] = set()
        self.recur_targets: list[Any] = []  # RecurTarget per enclosing loop/fn (None: top)

    # -- entry --------------------------------------------------------------------------
    def program(self, forms: tuple[Form, ...]) -> Program:
        """Analyze a whole program (its top-level forms in a ``do``)."""
        known = getattr(forms, "defs", None)  # the reader collects them while reading
        self.defs = set(known) if known is not None else _collect_defs(forms)
        scope = Scope(None)
        self.recur_targets.append(None)
        body = tuple(self.analyze(f, scope, tail=False) for f in forms)
        node: A.Node = body[0] if len(body) == 1 else A.Do(body, 1, 1)
        _, nslots = scope.finish()
        return Program(
            node, nslots, frozenset(self.defs), frozenset(self.tools_used), frozenset(self.ctx_used)
        )

    # -- dispatch -----------------------------------------------------------------------
    def analyze(self, form: Form, scope: Scope, *, tail: bool) -> A.Node:
        """Analyze one form; ``tail`` says whether it is in tail position for ``recur``."""
        if self.budget is not None:
            self.budget.step()
        t = type(form)
        if t is Sym:
            return self.symbol(form, scope)  # type: ignore[arg-type]
        if t is ListForm:
            return self.list_form(form, scope, tail)  # type: ignore[arg-type]
        if t is Lit:
            return A.Const(form.value, form.line, form.column)  # type: ignore[attr-defined]
        if isinstance(form, VecForm | MapForm | SetForm):
            return self.collection(form, scope)
        raise AssertionError(f"unknown form {form!r}")  # pragma: no cover

    def analyze_all(self, forms: Iterable[Form], scope: Scope) -> tuple[A.Node, ...]:
        """Analyze forms that are not in tail position."""
        analyze = self.analyze
        return tuple([analyze(f, scope, tail=False) for f in forms])

    def body(self, form: Form, forms: tuple[Form, ...], scope: Scope, tail: bool) -> A.Node:
        """Analyze a body (several forms, the last in tail position)."""
        if not forms:
            return A.Const(None, form.line, form.column)
        nodes = [self.analyze(f, scope, tail=False) for f in forms[:-1]]
        nodes.append(self.analyze(forms[-1], scope, tail=tail))
        return nodes[0] if len(nodes) == 1 else A.Do(tuple(nodes), form.line, form.column)

    def collection(self, form: VecForm | MapForm | SetForm, scope: Scope) -> A.Node:
        """A literal collection: a constant when it holds only literals."""
        if self.budget is not None:
            self.budget.step(len(form.items))  # a literal's values are built here
        if _only_literals(form):
            try:
                return A.Const(form_to_value(form), form.line, form.column)
            except (ValueError, TypeError):  # e.g. an unhashable key: built at run time
                pass
        items = self.analyze_all(form.items, scope)
        if isinstance(form, VecForm):
            return A.VecNode(items, form.line, form.column)
        if isinstance(form, SetForm):
            return A.SetNode(items, form.line, form.column)
        pairs = tuple(zip(items[::2], items[1::2], strict=True))
        return A.MapNode(pairs, form.line, form.column)

    # -- symbols ------------------------------------------------------------------------
    def check_binding_name(self, sym: Sym) -> None:
        """Refuse binding names that are reserved or not plain names."""
        name = sym.name
        if sym.ns is not None or "." in name or "_" in name or name in FORBIDDEN:
            check_symbol(sym)
        if sym.ns is not None:
            fail_at(sym, f"cannot bind {sym.name}: local names cannot contain /")
        if sym.name in SPECIAL_FORMS or sym.name in ("&", "nil", "true", "false"):
            fail_at(sym, f"cannot bind {sym.name}: it is a special form; choose another name")

    def symbol(self, sym: Sym, scope: Scope) -> A.Node:
        """Resolve a symbol used as a value."""
        name, line, col, ns = sym.name, sym.line, sym.column, sym.ns
        if ns is not None or "." in name or "_" in name or name in FORBIDDEN:
            if name in HOST_CONSTANTS:  # Double/NaN, Math/PI, ...: whitelisted values
                return A.Const(HOST_CONSTANTS[name], line, col)
            if name not in self.builtins or name in FORBIDDEN:
                check_symbol(sym)  # (the common plain name needs no check)
        if ns is None:
            slot = scope.lookup(name)
            if slot is not None:
                return A.Local(slot, line, col)
            if name in INTERNAL:
                return A.Const(INTERNAL[name], line, col)
        elif name in INTERNAL:
            return A.Const(INTERNAL[name], line, col)
        if ns == "ctx":
            return self.ctx_ref(sym)
        if ns == "memory":
            require(
                sym.local not in ("put", "get"),
                sym,
                f"{name} is a special form; call it: (memory/put :k v), (memory/get :k)",
            )
            return A.MemGet(A.Const(Keyword(sym.local), line, col), None, line, col)
        if name in self.defs or name in self.global_fns:  # may shadow a builtin
            return A.GlobalRef(name, line, col)
        builtin = self.builtins.get(name)
        if builtin is not None:
            return A.BuiltinRef(builtin, line, col)
        if name in self.globals:  # defined in an earlier turn; never shadows a builtin
            return A.GlobalRef(name, line, col)
        if name in SHAPES:
            fail_at(
                sym,
                f"{name} is a special form and cannot be used as a value; call it: "
                f"{SHAPES[name].usage}",
            )
        if self.tool_names is not None and name in self.tool_names:
            fail_at(
                sym, f'{name} is a tool; call it with (call "{name}" {{:arg value}})', "unbound"
            )
        candidates = [*scope.visible(), *self.defs, *self.globals, *self.builtins]
        fail_at(sym, f"unable to resolve symbol {name}{_suggest(name, candidates)}", "unbound")

    def ctx_ref(self, sym: Sym) -> A.Node:
        """``ctx/key``."""
        key = sym.local
        if self.ctx_keys is not None and key not in self.ctx_keys:
            if self.tool_names is not None and key in self.tool_names:
                fail_at(
                    sym, f"ctx/{key} is a tool; call it with (ctx/{key} {{:arg value}})", "unbound"
                )
            known = ", ".join(f"ctx/{k}" for k in sorted(self.ctx_keys)) or "none"
            hint = _suggest(key, self.ctx_keys, prefix="ctx/")
            fail_at(sym, f"ctx/{key} is not in the context{hint}; available: {known}", "unbound")
        self.ctx_used.add(key)
        return A.CtxRef(key, sym.line, sym.column)

    # -- lists ----------------------------------------------------------------------------
    def list_form(self, form: ListForm, scope: Scope, tail: bool) -> A.Node:
        """A call, a special form or a macro."""
        items = form.items
        if not items:
            return A.Const(EMPTY_VEC, form.line, form.column)
        head = items[0]
        if isinstance(head, Sym):
            name = head.name
            if name in MACROS and scope.lookup(name) is None:
                check_shape(name, form)
                return self.analyze(MACROS[name](form), scope, tail=tail)
            handler = SPECIAL_FORMS.get(name)
            if handler is not None and scope.lookup(name) is None:
                check_shape(name, form)
                return handler(self, form, scope, tail)
            if head.ns == "ctx" and self.tool_names is not None and head.local in self.tool_names:
                return self.tool_call(
                    form,
                    scope,
                    A.Const(head.local, head.line, head.column),
                    head.local,
                    form.items[1:],
                    f"(ctx/{head.local} {{:arg value}})",
                )
            fn = self.symbol(head, scope)
        elif isinstance(head, Lit) and not callable(head.value) and head.value is not None:
            fail_at(
                form,
                f"cannot call {_show(head.value)} as a function: the first element of "
                "a list is the function to call, e.g. (f x); for data write a vector [1 2 3]",
                "type",
            )
        else:
            fn = self.analyze(head, scope, tail=False)
        args = self.analyze_all(items[1:], scope)
        if isinstance(fn, A.BuiltinRef) and not fn.builtin.accepts(len(args)):
            b = fn.builtin
            n = len(args)
            fail_at(
                form,
                f"{b.name} called with {n} argument{'' if n == 1 else 's'}; usage: {b.signature}",
                "arity",
            )
        return A.Call(fn, args, form.line, form.column)

    def tool_call(
        self,
        form: ListForm,
        scope: Scope,
        name_node: A.Node,
        name: str | None,
        args: tuple[Form, ...],
        usage: str,
    ) -> A.Node:
        """``(call "name" {...})`` / ``(ctx/name {...})``."""
        if name is not None and name not in AGENT_TOOLS:
            self.tools_used.add(name)
            if self.tool_names is not None and name not in self.tool_names:
                available = ", ".join(sorted(self.tool_names)) or "none"
                fail_at(
                    form,
                    f'unknown tool "{name}"{_suggest(name, self.tool_names)}; '
                    f"available tools: {available}",
                    "unknown_tool",
                )
        if len(args) > 1:
            fail_at(
                form,
                f"tools take one map of named arguments, got {len(args)} arguments; write {usage}",
                "analysis",
            )
        arg_node: A.Node | None = None
        if args:
            a = args[0]
            if isinstance(a, Lit | VecForm | SetForm):
                fail_at(
                    a, f"tools take a map of named arguments, not a {_form_kind(a)}; write {usage}"
                )
            arg_node = self.analyze(a, scope, tail=False)
        return A.ToolCall(name_node, arg_node, form.line, form.column)


def _only_literals(form: Form) -> bool:
    """Whether ``form`` holds no symbol at any depth (so :func:`form_to_value` accepts it)."""
    t = type(form)
    if t is Lit:
        return True
    if t is Sym:
        return False
    return all(map(_only_literals, form.items))  # type: ignore[attr-defined]


def _collect_defs(forms: Iterable[Form]) -> set[str]:
    """Every name a ``def``/``defn`` anywhere in the program defines (forward references)."""
    out: set[str] = set()
    stack = list(forms)
    while stack:
        f = stack.pop()
        t = type(f)
        if t is ListForm:
            items = f.items  # type: ignore[attr-defined]
            if (
                len(items) > 1
                and type(items[0]) is Sym
                and items[0].name in _DEF_FORMS
                and type(items[1]) is Sym
            ):
                out.add(items[1].name)
            stack.extend(items)
        elif t is VecForm or t is MapForm or t is SetForm:
            stack.extend(f.items)  # type: ignore[attr-defined]
    return out


_DEF_FORMS: Final = frozenset({"def", "defn", "defn-", "defonce"})


def _suggest(name: str, candidates: Iterable[str], prefix: str = "") -> str:
    pool = sorted({c for c in candidates if not c.startswith("#")})
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.7)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"{prefix}{c}" for c in close) + "?)"


def _show(value: Any) -> str:
    from ptcflow.lisp.printer import pr_str

    return pr_str(value, limit=40)


def _form_kind(form: Form) -> str:
    if isinstance(form, VecForm):
        return "vector"
    if isinstance(form, SetForm):
        return "set"
    if isinstance(form, Lit):
        from ptcflow.lisp.printer import type_name

        return type_name(form.value)
    return "form"
