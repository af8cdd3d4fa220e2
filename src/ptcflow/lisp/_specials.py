"""Special forms: their declared shapes, and the macros that rewrite into core forms.

:data:`SHAPES` declares, for every special form, how many arguments it takes and how it is
written; :func:`check_shape` is the one place that turns a wrong shape into an ``analysis``
error. :data:`MACROS` rewrite sugar (``when``, ``cond``, ``->``, ``if-let``, ``defn``, ...) into
the core forms the analyzer knows (``if``, ``do``, ``let``, ``fn``, ``def``). Names the macros
introduce start with ``#`` so they can never collide with a program's names.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Final, NoReturn

from ptcflow.lisp._forms import Form, ListForm, Lit, MapForm, Sym, VecForm
from ptcflow.lisp.errors import LispError

__all__ = ("MACROS", "SHAPES", "Shape", "check_shape", "fail_at", "require")


class Shape:
    """How a special form is written: ``min``/``max`` arguments and a usage line."""

    __slots__ = ("max", "min", "usage")

    def __init__(self, min_args: int, max_args: int | None, usage: str) -> None:
        self.min = min_args
        self.max = max_args
        self.usage = usage


SHAPES: Final[dict[str, Shape]] = {
    "def": Shape(1, 3, "(def name value)"),
    "defn": Shape(2, None, "(defn name [params] body...) or (defn name ([a] ...) ([a b] ...))"),
    "defn-": Shape(2, None, "(defn- name [params] body...)"),
    "defonce": Shape(2, 2, "(defonce name value)"),
    "where": Shape(
        1, 3, "(where :field) or (where :field op value), op one of = not= < > <= >= includes in"
    ),
    "when-first": Shape(1, None, "(when-first [x coll] body...)"),
    "fn": Shape(1, None, "(fn [params] body...) or (fn name [params] body...)"),
    "let": Shape(1, None, "(let [name value ...] body...)"),
    "loop": Shape(1, None, "(loop [name init ...] body... (recur new-values...))"),
    "recur": Shape(0, None, "(recur value...) as the last form of a loop or fn"),
    "if": Shape(2, 3, "(if test then) or (if test then else)"),
    "if-not": Shape(2, 3, "(if-not test then) or (if-not test then else)"),
    "when": Shape(1, None, "(when test body...)"),
    "when-not": Shape(1, None, "(when-not test body...)"),
    "cond": Shape(0, None, "(cond test1 expr1 test2 expr2 ... :else default)"),
    "condp": Shape(2, None, "(condp pred expr value1 result1 ... default?)"),
    "case": Shape(1, None, "(case expr const1 result1 (const2 const3) result2 ... default?)"),
    "if-let": Shape(2, 3, "(if-let [name test] then else?)"),
    "when-let": Shape(1, None, "(when-let [name test] body...)"),
    "if-some": Shape(2, 3, "(if-some [name test] then else?)"),
    "when-some": Shape(1, None, "(when-some [name test] body...)"),
    "do": Shape(0, None, "(do expr...)"),
    "and": Shape(0, None, "(and expr...)"),
    "or": Shape(0, None, "(or expr...)"),
    "for": Shape(2, 2, "(for [x coll :when test :let [y ...] :while test] body)"),
    "doseq": Shape(1, None, "(doseq [x coll] body...)"),
    "dotimes": Shape(1, None, "(dotimes [i n] body...)"),
    "->": Shape(1, None, "(-> x (f a) g ...)"),
    "->>": Shape(1, None, "(->> x (f a) g ...)"),
    "as->": Shape(2, None, "(as-> x name (f name) ...)"),
    "cond->": Shape(1, None, "(cond-> x test1 (f a) test2 g ...)"),
    "cond->>": Shape(1, None, "(cond->> x test1 (f a) test2 g ...)"),
    "some->": Shape(1, None, "(some-> x (f a) g ...)"),
    "some->>": Shape(1, None, "(some->> x (f a) g ...)"),
    "comment": Shape(0, None, "(comment anything...)"),
    "call": Shape(1, None, '(call "tool-name" {:arg value ...})'),
    "return": Shape(0, 1, "(return value)"),
    "fail": Shape(0, 1, '(fail {:reason :not-found :message "..."})'),
    "memory/put": Shape(2, 2, "(memory/put :key value)"),
    "memory/get": Shape(1, 2, "(memory/get :key) or (memory/get :key default)"),
    "pmap": Shape(2, 2, "(pmap f coll)"),
    "pcalls": Shape(0, None, "(pcalls f g ...)"),
}


def fail_at(form: Form, message: str, category: str = "analysis") -> NoReturn:
    """Raise a ``LispError`` located at ``form``."""
    raise LispError(category, message, line=form.line, column=form.column)


def require(ok: bool, form: Form, message: str) -> None:
    """Raise an ``analysis`` error at ``form`` unless ``ok``."""
    if not ok:
        fail_at(form, message)


def check_shape(name: str, form: ListForm) -> None:
    """Check the argument count of special form ``name`` against :data:`SHAPES`."""
    shape = SHAPES[name]
    n = len(form.items) - 1
    if n < shape.min or (shape.max is not None and n > shape.max):
        plural = "" if n == 1 else "s"
        fail_at(form, f"{name} got {n} argument{plural}; write it as {shape.usage}")


_counter = itertools.count(1)


def _gensym(form: Form, hint: str) -> Sym:
    return Sym(f"#{hint}{next(_counter)}", form.line, form.column)


def _sym(form: Form, name: str) -> Sym:
    return Sym(name, form.line, form.column)


def _list(form: Form, *items: Form) -> ListForm:
    return ListForm(tuple(items), form.line, form.column)


def _body(form: Form, forms: tuple[Form, ...]) -> Form:
    if len(forms) == 1:
        return forms[0]
    return _list(form, _sym(form, "do"), *forms)


def _nil(form: Form) -> Lit:
    return Lit(None, form.line, form.column)


def _when(form: ListForm) -> Form:
    _, test, *body = form.items
    return _list(form, _sym(form, "if"), test, _body(form, tuple(body)), _nil(form))


def _when_not(form: ListForm) -> Form:
    _, test, *body = form.items
    return _list(form, _sym(form, "if"), test, _nil(form), _body(form, tuple(body)))


def _if_not(form: ListForm) -> Form:
    items = form.items
    else_ = items[3] if len(items) > 3 else _nil(form)
    return _list(form, _sym(form, "if"), items[1], else_, items[2])


def _cond(form: ListForm) -> Form:
    clauses = form.items[1:]
    require(
        len(clauses) % 2 == 0,
        form,
        f"cond needs pairs of test and expression, got {len(clauses)} forms; "
        "write (cond test1 expr1 test2 expr2 :else default)",
    )
    out: Form = _nil(form)
    for i in range(len(clauses) - 2, -1, -2):
        out = _list(clauses[i], _sym(form, "if"), clauses[i], clauses[i + 1], out)
    return out


def _condp(form: ListForm) -> Form:
    _, pred, expr, *clauses = form.items
    p, e = _gensym(form, "pred"), _gensym(form, "expr")
    default: Form
    if len(clauses) % 2:
        default = clauses.pop()
    else:
        default = _list(form, _sym(form, "#no-match"), Lit("condp", form.line, form.column), e)
    out = default
    for i in range(len(clauses) - 2, -1, -2):
        test = _list(clauses[i], p, clauses[i], e)
        out = _list(clauses[i], _sym(form, "if"), test, clauses[i + 1], out)
    return _list(form, _sym(form, "let"), VecForm((p, pred, e, expr), form.line, form.column), out)


def _binding_pair(name: str, form: ListForm) -> tuple[Form, Form]:
    b = form.items[1]
    require(
        isinstance(b, VecForm) and len(b.items) == 2,
        b,
        f"{name} takes one binding in a vector: ({name} [x (find-it)] ...)",
    )
    assert isinstance(b, VecForm)
    return b.items[0], b.items[1]


def _if_let_like(form: ListForm, *, some: bool, when: bool) -> Form:
    name = str(getattr(form.items[0], "name", "if-let"))
    pattern, test = _binding_pair(name, form)
    rest = form.items[2:]
    else_: Form
    if when:
        then, else_ = _body(form, rest), _nil(form)
    else:
        then = rest[0]
        else_ = rest[1] if len(rest) > 1 else _nil(form)
    t = _gensym(form, "test")
    cond: Form = _list(form, _sym(form, "#some?"), t) if some else t
    inner = _list(form, _sym(form, "let"), VecForm((pattern, t), form.line, form.column), then)
    return _list(
        form,
        _sym(form, "let"),
        VecForm((t, test), form.line, form.column),
        _list(form, _sym(form, "if"), cond, inner, else_),
    )


def _thread(form: Form, x: Form, step: Form, *, last: bool) -> Form:
    if isinstance(step, ListForm) and step.items:
        head, *args = step.items
        items = (head, *args, x) if last else (head, x, *args)
        return ListForm(tuple(items), step.line, step.column)
    return ListForm((step, x), step.line, step.column)


def _arrow(last: bool) -> Callable[[ListForm], Form]:
    def expand(form: ListForm) -> Form:
        x = form.items[1]
        for step in form.items[2:]:
            x = _thread(form, x, step, last=last)
        return x

    return expand


def _as_arrow(form: ListForm) -> Form:
    _, x, name, *steps = form.items
    require(isinstance(name, Sym), name, "as-> needs a name after the value: (as-> x v (f v))")
    bindings: list[Form] = [name, x]
    for step in steps:
        bindings += [name, step]
    return _list(form, _sym(form, "let"), VecForm(tuple(bindings), form.line, form.column), name)


def _cond_arrow(last: bool) -> Callable[[ListForm], Form]:
    def expand(form: ListForm) -> Form:
        _, x, *clauses = form.items
        require(
            len(clauses) % 2 == 0,
            form,
            "cond-> needs pairs of test and step: (cond-> x test1 (f a) test2 g)",
        )
        g = _gensym(form, "v")
        bindings: list[Form] = [g, x]
        for i in range(0, len(clauses), 2):
            step = _thread(form, g, clauses[i + 1], last=last)
            bindings += [g, _list(form, _sym(form, "if"), clauses[i], step, g)]
        return _list(form, _sym(form, "let"), VecForm(tuple(bindings), form.line, form.column), g)

    return expand


def _some_arrow(last: bool) -> Callable[[ListForm], Form]:
    def expand(form: ListForm) -> Form:
        _, x, *steps = form.items
        g = _gensym(form, "v")
        bindings: list[Form] = [g, x]
        for step in steps:
            test = _list(form, _sym(form, "#some?"), g)
            bindings += [
                g,
                _list(form, _sym(form, "if"), test, _thread(form, g, step, last=last), g),
            ]
        return _list(form, _sym(form, "let"), VecForm(tuple(bindings), form.line, form.column), g)

    return expand


def _dotimes(form: ListForm) -> Form:
    b = form.items[1]
    require(
        isinstance(b, VecForm) and len(b.items) == 2 and isinstance(b.items[0], Sym),
        b,
        "dotimes takes a name and a count: (dotimes [i 3] ...)",
    )
    assert isinstance(b, VecForm)
    i, n = b.items
    limit = _gensym(form, "n")
    test = _list(form, _sym(form, "#<"), i, limit)
    again = _list(form, _sym(form, "recur"), _list(form, _sym(form, "#inc"), i))
    body = _list(form, _sym(form, "do"), *form.items[2:], again)
    loop = _list(
        form,
        _sym(form, "loop"),
        VecForm((i, Lit(0, form.line, form.column)), form.line, form.column),
        _list(form, _sym(form, "if"), test, body, _nil(form)),
    )
    return _list(form, _sym(form, "let"), VecForm((limit, n), form.line, form.column), loop)


def _when_first(form: ListForm) -> Form:
    """``(when-first [x coll] body)``: ``body`` with ``x`` bound to the first element, when
    ``coll`` has one."""
    pattern, coll = _binding_pair("when-first", form)
    s = _gensym(form, "seq")
    inner = _list(
        form,
        _sym(form, "let"),
        VecForm((pattern, _list(form, _sym(form, "#first"), s)), form.line, form.column),
        _body(form, form.items[2:]),
    )
    return _list(
        form,
        _sym(form, "let"),
        VecForm((s, _list(form, _sym(form, "#seq"), coll)), form.line, form.column),
        _list(form, _sym(form, "if"), s, inner, _nil(form)),
    )


def _where(form: ListForm) -> Form:
    """``(where :f op v)``: the operator is written bare (``in``, ``includes``, ``>``), so it is
    read as its name, not evaluated."""
    items = list(form.items)
    if len(items) == 4 and isinstance(items[2], Sym):
        items[2] = Lit(items[2].name, items[2].line, items[2].column)
    return ListForm((_sym(form, "#where"), *items[1:]), form.line, form.column)


def _defonce(form: ListForm) -> Form:
    """``(defonce x v)``: defines ``x`` unless memory already holds it (``v`` is then not
    evaluated), and returns its value."""
    _, name, value = form.items
    require(isinstance(name, Sym), name, "defonce needs a name: (defonce total 0)")
    assert isinstance(name, Sym)
    old = _gensym(form, "old")
    read = _list(
        form, _sym(form, "memory/get"), Lit(name.name, name.line, name.column), _sym(form, "#unset")
    )
    unset = _list(form, _sym(form, "#unset?"), old)
    return _list(
        form,
        _sym(form, "let"),
        VecForm((old, read), form.line, form.column),
        _list(form, _sym(form, "if"), unset, _list(form, _sym(form, "def"), name, value), old),
    )


def _comment(form: ListForm) -> Form:
    return _nil(form)


def _defn(form: ListForm) -> Form:
    _, name, *rest = form.items
    require(isinstance(name, Sym), name, "defn needs a name: (defn name [params] body...)")
    if rest and isinstance(rest[0], Lit) and isinstance(rest[0].value, str) and len(rest) > 1:
        rest = rest[1:]  # docstring
    if rest and isinstance(rest[0], MapForm) and len(rest) > 1:
        rest = rest[1:]  # attribute map
    require(
        bool(rest) and isinstance(rest[0], VecForm | ListForm),
        form,
        f"defn {getattr(name, 'name', '')} needs a parameter vector: (defn name [x y] body...)",
    )
    fn = _list(form, _sym(form, "fn"), name, *rest)
    return _list(form, _sym(form, "def"), name, fn)


MACROS: Final[dict[str, Callable[[ListForm], Form]]] = {
    "when": _when,
    "when-not": _when_not,
    "if-not": _if_not,
    "cond": _cond,
    "condp": _condp,
    "if-let": lambda f: _if_let_like(f, some=False, when=False),
    "when-let": lambda f: _if_let_like(f, some=False, when=True),
    "if-some": lambda f: _if_let_like(f, some=True, when=False),
    "when-some": lambda f: _if_let_like(f, some=True, when=True),
    "->": _arrow(last=False),
    "->>": _arrow(last=True),
    "as->": _as_arrow,
    "cond->": _cond_arrow(last=False),
    "cond->>": _cond_arrow(last=True),
    "some->": _some_arrow(last=False),
    "some->>": _some_arrow(last=True),
    "comment": _comment,
    "dotimes": _dotimes,
    "defn": _defn,
    "defn-": _defn,
    "defonce": _defonce,
    "when-first": _when_first,
    "where": _where,
}
