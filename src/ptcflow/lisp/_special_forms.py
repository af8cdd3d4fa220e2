"""The analysis of each core special form (one function per form, in :data:`SPECIAL_FORMS`).

Argument counts were already checked against ``_specials.SHAPES``; these functions check the
inner structure (binding vectors, parameter lists, clauses) and build the nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ptcflow.lisp import _ast as A
from ptcflow.lisp._destructure import analyze_pattern
from ptcflow.lisp._forms import Form, ListForm, Lit, MapForm, SetForm, Sym, VecForm, form_to_value
from ptcflow.lisp._specials import fail_at, require
from ptcflow.lisp.values import Keyword, lisp_eq

if TYPE_CHECKING:
    from ptcflow.lisp._analyzer import Analyzer, Scope

__all__ = ("SPECIAL_FORMS", "RecurTarget")

Handler = Callable[["Analyzer", ListForm, "Scope", bool], A.Node]


class RecurTarget:
    """Where a ``recur`` jumps: a ``loop`` or a ``fn`` arity, and how many values it takes."""

    __slots__ = ("arity", "count", "kind")

    def __init__(self, kind: str, count: int, arity: A.Arity | None = None) -> None:
        self.kind = kind
        self.count = count
        self.arity = arity


def _bindings(an: Analyzer, form: ListForm, name: str) -> VecForm:
    b = form.items[1]
    require(
        isinstance(b, VecForm) and len(b.items) % 2 == 0,
        b,
        f"{name} needs a vector of name-value pairs: ({name} [x 1 y 2] ...)",
    )
    assert isinstance(b, VecForm)
    return b


def _bind_pairs(an: Analyzer, vec: VecForm, scope: Scope) -> tuple[tuple[A.Pattern, A.Node], ...]:
    """Analyze ``[p1 v1 p2 v2]`` sequentially, binding names into the current block."""
    out: list[tuple[A.Pattern, A.Node]] = []
    items = vec.items
    for i in range(0, len(items), 2):
        value = an.analyze(items[i + 1], scope, tail=False)
        names: dict[str, A.Slot] = {}
        pattern = analyze_pattern(an, items[i], scope, names)
        scope.bind(names)
        out.append((pattern, value))
    return tuple(out)


def _let(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    vec = _bindings(an, form, "let")
    scope.blocks.append({})
    try:
        pairs = _bind_pairs(an, vec, scope)
        body = an.body(form, form.items[2:], scope, tail)
    finally:
        scope.blocks.pop()
    return A.Let(pairs, body, form.line, form.column)


def _loop(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    vec = _bindings(an, form, "loop")
    scope.blocks.append({})
    try:
        pairs = _bind_pairs(an, vec, scope)
        an.recur_targets.append(RecurTarget("loop", len(pairs)))
        try:
            body = an.body(form, form.items[2:], scope, True)
        finally:
            an.recur_targets.pop()
    finally:
        scope.blocks.pop()
    return A.Loop(pairs, body, form.line, form.column)


def _recur(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    target = an.recur_targets[-1] if an.recur_targets else None
    require(
        isinstance(target, RecurTarget),
        form,
        "recur is only allowed inside loop or fn: (loop [i 0] (if (< i 3) (recur (inc i)) i))",
    )
    assert isinstance(target, RecurTarget)
    require(
        tail,
        form,
        "recur must be the last thing evaluated in its loop or fn (tail position); "
        "move the other work before it",
    )
    n = len(form.items) - 1
    require(
        n == target.count,
        form,
        f"recur passes {n} value{'' if n == 1 else 's'} but its {target.kind} binds "
        f"{target.count}; pass one value per binding",
    )
    if target.arity is not None:
        target.arity.has_recur = True
    return A.Recur(an.analyze_all(form.items[1:], scope), form.line, form.column)


def _if(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    items = form.items
    test = an.analyze(items[1], scope, tail=False)
    then = an.analyze(items[2], scope, tail=tail)
    else_ = (
        an.analyze(items[3], scope, tail=tail)
        if len(items) > 3
        else A.Const(None, form.line, form.column)
    )
    return A.If(test, then, else_, form.line, form.column)


def _do(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    return an.body(form, form.items[1:], scope, tail)


def _and(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    if len(form.items) == 1:
        return A.Const(True, form.line, form.column)
    return A.And(an.analyze_all(form.items[1:], scope), form.line, form.column)


def _or(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    if len(form.items) == 1:
        return A.Const(None, form.line, form.column)
    return A.Or(an.analyze_all(form.items[1:], scope), form.line, form.column)


def _def(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    items = form.items
    name = items[1]
    require(isinstance(name, Sym), name, "def needs a name: (def total 42)")
    assert isinstance(name, Sym)
    an.check_binding_name(name)
    if len(items) == 4:
        require(
            isinstance(items[2], Lit) and isinstance(items[2].value, str),
            items[2],
            'def takes a name and a value, with an optional docstring: (def x "doc" 42)',
        )
    value = (
        an.analyze(items[-1], scope, tail=False)
        if len(items) > 2
        else A.Const(None, form.line, form.column)
    )
    return A.Def(name.name, value, form.line, form.column)


def _fn(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    rest = list(form.items[1:])
    name: str | None = None
    first = rest[0] if rest else None
    if isinstance(first, Sym):
        an.check_binding_name(first)
        name = first.name
        rest.pop(0)
    require(bool(rest), form, "fn needs a parameter vector: (fn [x] (* x 2))")
    if isinstance(rest[0], VecForm):
        arity_forms: list[tuple[VecForm, tuple[Form, ...]]] = [(rest[0], tuple(rest[1:]))]
    else:
        arity_forms = []
        for f in rest:
            require(
                isinstance(f, ListForm) and bool(f.items) and isinstance(f.items[0], VecForm),
                f,
                "fn takes a parameter vector, or several ([params] body...) lists for "
                "multiple arities: (fn ([x] x) ([x y] (+ x y)))",
            )
            assert isinstance(f, ListForm)
            params = f.items[0]
            assert isinstance(params, VecForm)
            arity_forms.append((params, f.items[1:]))
    arities = tuple([_arity(an, form, scope, name, params, body) for params, body in arity_forms])
    if len(arities) > 1:
        _check_arities(form, arities)
    return A.FnNode(name, arities, form.line, form.column)


def _arity(
    an: Analyzer,
    form: ListForm,
    scope: Scope,
    name: str | None,
    params: VecForm,
    body: tuple[Form, ...],
) -> A.Arity:
    arity = A.Arity()
    inner = scope.child(name)
    fixed: list[Form] = []
    rest_form: Form | None = None
    items = params.items
    for i, p in enumerate(items):
        if isinstance(p, Sym) and p.name == "&":
            require(
                i == len(items) - 2,
                p,
                "& must be followed by exactly one parameter: (fn [a & more] ...)",
            )
            rest_form = items[i + 1]
            break
        fixed.append(p)
    # Parameter slots first, in order, so a call fills them straight from its arguments.
    arg_slots = [inner.new_slot(f"#arg{i}") for i in range(len(fixed))]
    rest_slot = inner.new_slot("#rest") if rest_form is not None else None
    names: dict[str, A.Slot] = {}
    patterns: list[A.Pattern] = []
    for slot, p in zip(arg_slots, fixed, strict=True):
        if isinstance(p, Sym):
            an.check_binding_name(p)
            slot.name = p.name
            names[p.name] = slot
            patterns.append(A.PSym(slot))
        else:
            patterns.append(analyze_pattern(an, p, inner, names))
    arity.params = tuple(patterns)
    if rest_form is not None:
        assert rest_slot is not None
        if isinstance(rest_form, Sym):
            an.check_binding_name(rest_form)
            names[rest_form.name] = rest_slot
            arity.rest = A.PSym(rest_slot)
        else:
            arity.rest = analyze_pattern(an, rest_form, inner, names)
    inner.bind(names)
    count = len(fixed) + (1 if rest_form is not None else 0)
    an.recur_targets.append(RecurTarget("fn", count, arity))
    try:
        arity.body = an.body(form, body, inner, True)
    finally:
        an.recur_targets.pop()
    arity.self_slot = inner.self_slot
    # finish() puts the captures first, then the positional slots: a call lays out its frame
    # as [captured..., arg0, ..., argN-1, rest?, other locals...].
    arity.captures, arity.nslots = inner.finish()
    return arity


def _check_arities(form: ListForm, arities: tuple[A.Arity, ...]) -> None:
    seen: set[int] = set()
    variadic = [a for a in arities if a.rest is not None]
    require(len(variadic) <= 1, form, "a fn can have only one variadic (&) arity")
    for a in arities:
        n = len(a.params)
        require(
            a.rest is not None or n not in seen,
            form,
            f"a fn cannot have two arities taking {n} arguments",
        )
        if a.rest is None:
            seen.add(n)
    if variadic:
        v = len(variadic[0].params)
        require(
            all(n <= v for n in seen),
            form,
            "the variadic arity must take at least as many fixed parameters as the others",
        )


def _case(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    expr = an.analyze(form.items[1], scope, tail=False)
    clauses = list(form.items[2:])
    default: A.Node | None = None
    if len(clauses) % 2:
        default = an.analyze(clauses.pop(), scope, tail=tail)
    table: list[tuple[Any, A.Node]] = []
    seen: list[Any] = []
    for i in range(0, len(clauses), 2):
        test, result = clauses[i], clauses[i + 1]
        node = an.analyze(result, scope, tail=tail)
        keys = test.items if isinstance(test, ListForm) else (test,)
        for k in keys:
            require(
                isinstance(k, Lit | VecForm | MapForm | SetForm),
                k,
                "case tests must be constants (numbers, strings, keywords, nil, vectors); "
                "group several with a list: (case x (1 2) :small :big)",
            )
            try:
                value = form_to_value(k)
            except ValueError:
                fail_at(k, "case tests must be constants")
            require(not any(lisp_eq(value, s) for s in seen), k, "duplicate test constant in case")
            seen.append(value)
            table.append((value, node))
    return A.Case(expr, table, default, form.line, form.column)


_KW_WHEN = Keyword("when")
_KW_WHILE = Keyword("while")
_KW_LET = Keyword("let")


def _comprehension(an: Analyzer, form: ListForm, scope: Scope, *, collect: bool) -> A.Node:
    name = "for" if collect else "doseq"
    b = form.items[1]
    require(
        isinstance(b, VecForm) and len(b.items) % 2 == 0 and len(b.items) > 0,
        b,
        f"{name} needs a vector of bindings: ({name} [x coll :when (odd? x)] ...)",
    )
    assert isinstance(b, VecForm)
    scope.blocks.append({})
    try:
        clauses: list[tuple[Any, ...]] = []
        items = b.items
        for i in range(0, len(items), 2):
            k, v = items[i], items[i + 1]
            if isinstance(k, Lit) and isinstance(k.value, Keyword):
                if k.value is _KW_WHEN:
                    clauses.append(("when", an.analyze(v, scope, tail=False)))
                elif k.value is _KW_WHILE:
                    clauses.append(("while", an.analyze(v, scope, tail=False)))
                elif k.value is _KW_LET:
                    require(
                        isinstance(v, VecForm) and len(v.items) % 2 == 0,
                        v,
                        f"{name} :let takes a binding vector: :let [y (* x 2)]",
                    )
                    assert isinstance(v, VecForm)
                    clauses.append(("let", _bind_pairs(an, v, scope)))
                else:
                    fail_at(
                        k, f"{name} supports the modifiers :when, :let and :while, not {k.value}"
                    )
            else:
                coll = an.analyze(v, scope, tail=False)
                names: dict[str, A.Slot] = {}
                pattern = analyze_pattern(an, k, scope, names)
                scope.bind(names)
                clauses.append(("bind", pattern, coll))
        if clauses[0][0] != "bind":
            fail_at(b, f"{name} must start with a binding: [x coll]")
        body = an.body(form, form.items[2:], scope, False)
    finally:
        scope.blocks.pop()
    return A.ForNode(tuple(clauses), body, collect, form.line, form.column)


def _for(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    return _comprehension(an, form, scope, collect=True)


def _doseq(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    return _comprehension(an, form, scope, collect=False)


def _call(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    name_form = form.items[1]
    usage = '(call "tool-name" {:arg value})'
    if isinstance(name_form, Lit):
        require(
            isinstance(name_form.value, str),
            name_form,
            f"the tool name must be a string: {usage}",
        )
        name: str = name_form.value
        if name in ("return", "fail"):
            value = (
                an.analyze(form.items[2], scope, tail=False)
                if len(form.items) > 2
                else A.Const(None, form.line, form.column)
            )
            node_type = A.Return if name == "return" else A.Fail
            return node_type(value, form.line, form.column)
        name_node: A.Node = A.Const(name, name_form.line, name_form.column)
        return an.tool_call(
            form, scope, name_node, name, form.items[2:], f'(call "{name}" {{:arg value}})'
        )
    if (
        isinstance(name_form, Sym)
        and name_form.ns is None
        and scope.lookup(name_form.name) is None
        and an.tool_names is not None
        and name_form.name in an.tool_names
    ):
        fail_at(
            name_form,
            f'the tool name must be a string: (call "{name_form.name}" {{:arg value}})',
        )
    name_node = an.analyze(name_form, scope, tail=False)
    return an.tool_call(form, scope, name_node, None, form.items[2:], usage)


def _return(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    value = (
        an.analyze(form.items[1], scope, tail=False)
        if len(form.items) > 1
        else A.Const(None, form.line, form.column)
    )
    return A.Return(value, form.line, form.column)


def _fail(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    value = (
        an.analyze(form.items[1], scope, tail=False)
        if len(form.items) > 1
        else A.Const(None, form.line, form.column)
    )
    return A.Fail(value, form.line, form.column)


def _memory_key(an: Analyzer, form: Form, scope: Scope) -> A.Node:
    if isinstance(form, Lit):
        require(
            isinstance(form.value, Keyword | str),
            form,
            "memory keys are keywords or strings: (memory/put :total 42)",
        )
    return an.analyze(form, scope, tail=False)


def _memory_put(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    key = _memory_key(an, form.items[1], scope)
    return A.MemPut(key, an.analyze(form.items[2], scope, tail=False), form.line, form.column)


def _memory_get(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    key = _memory_key(an, form.items[1], scope)
    default = an.analyze(form.items[2], scope, tail=False) if len(form.items) > 2 else None
    return A.MemGet(key, default, form.line, form.column)


def _pmap(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    fn, coll = an.analyze_all(form.items[1:], scope)
    return A.Pmap(fn, coll, form.line, form.column)


def _pcalls(an: Analyzer, form: ListForm, scope: Scope, tail: bool) -> A.Node:
    return A.Pcalls(an.analyze_all(form.items[1:], scope), form.line, form.column)


SPECIAL_FORMS: Final[dict[str, Handler]] = {
    "def": _def,
    "fn": _fn,
    "let": _let,
    "loop": _loop,
    "recur": _recur,
    "if": _if,
    "do": _do,
    "and": _and,
    "or": _or,
    "case": _case,
    "for": _for,
    "doseq": _doseq,
    "call": _call,
    "return": _return,
    "fail": _fail,
    "memory/put": _memory_put,
    "memory/get": _memory_get,
    "pmap": _pmap,
    "pcalls": _pcalls,
}
