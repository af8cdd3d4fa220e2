"""Destructuring: binding patterns in ``let``, ``fn``, ``loop``, ``for`` and ``doseq``.

:func:`analyze_pattern` turns a binding form into a :class:`~ptcflow.lisp._ast.Pattern`
(allocating slots in the current scope); :func:`compile_binder` turns a pattern into a function
``bind(frame, value)`` that stores every bound name into its slot. Shapes: a symbol; a vector
``[a [b c] & rest :as all]``; a map ``{a :a, :keys [b c], :strs [d], :or {b 1}, :as m}``;
nested freely.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ptcflow.lisp._ast import Node, Pattern, PDict, PSym, PVec, Slot
from ptcflow.lisp._colls import EMPTY_MAP, Map, Vector, mkey, vec
from ptcflow.lisp._forms import Form, Lit, MapForm, Sym, VecForm, form_to_value
from ptcflow.lisp._specials import fail_at, require
from ptcflow.lisp.errors import LispError
from ptcflow.lisp.values import Keyword, iter_of, lookup

if TYPE_CHECKING:
    from ptcflow.lisp._analyzer import Analyzer, Scope

__all__ = ("Binder", "analyze_pattern", "compile_binder")

Binder = Callable[[list[Any], Any], None]
Evaluator = Callable[[list[Any]], Any]

_KW_KEYS = Keyword("keys")
_KW_STRS = Keyword("strs")
_KW_OR = Keyword("or")
_KW_AS = Keyword("as")


def analyze_pattern(an: Analyzer, form: Form, scope: Scope, names: dict[str, Slot]) -> Pattern:
    """Analyze binding form ``form``; new names go into ``names`` (bound by the caller)."""
    if isinstance(form, Sym):
        return PSym(_new_name(an, form, scope, names))
    if isinstance(form, VecForm):
        return _vector(an, form, scope, names)
    if isinstance(form, MapForm):
        return _map(an, form, scope, names)
    fail_at(
        form,
        "cannot bind to this form: bind a name x, a vector [a b & more] or a map {:keys [a b]}",
        "analysis",
    )


def _new_name(an: Analyzer, sym: Sym, scope: Scope, names: dict[str, Slot]) -> Slot:
    an.check_binding_name(sym)
    slot = scope.new_slot(sym.name)
    names[sym.name] = slot
    return slot


def _vector(an: Analyzer, form: VecForm, scope: Scope, names: dict[str, Slot]) -> Pattern:
    items: list[Pattern] = []
    rest: Pattern | None = None
    as_: Slot | None = None
    forms = list(form.items)
    i = 0
    while i < len(forms):
        f = forms[i]
        if isinstance(f, Sym) and f.name == "&":
            require(
                i + 1 < len(forms) and rest is None,
                f,
                "& must be followed by exactly one name: [a b & more]",
            )
            rest = analyze_pattern(an, forms[i + 1], scope, names)
            i += 2
            continue
        if isinstance(f, Lit) and f.value is _KW_AS:
            require(
                i + 1 < len(forms) and isinstance(forms[i + 1], Sym),
                f,
                ":as must be followed by a name: [a b :as all]",
            )
            as_ = _new_name(an, forms[i + 1], scope, names)  # type: ignore[arg-type]
            i += 2
            continue
        require(rest is None, f, "nothing but :as may follow the & name in a vector binding")
        items.append(analyze_pattern(an, f, scope, names))
        i += 1
    return PVec(tuple(items), rest, as_, form.line, form.column)


def _map(an: Analyzer, form: MapForm, scope: Scope, names: dict[str, Slot]) -> Pattern:
    entries: list[tuple[Pattern, Any]] = []
    defaults_forms: dict[str, Form] = {}
    as_: Slot | None = None
    it = iter(form.items)
    pairs = list(zip(it, it, strict=True))
    for k, v in pairs:
        if isinstance(k, Lit) and k.value in (_KW_KEYS, _KW_STRS):
            require(
                isinstance(v, VecForm) and all(isinstance(s, Sym) for s in v.items),
                v,
                f"{k.value} takes a vector of names: {{{k.value} [a b]}}",
            )
            assert isinstance(v, VecForm)
            for s in v.items:
                assert isinstance(s, Sym)
                key: Any = Keyword(s.name) if k.value is _KW_KEYS else s.name
                local = Sym(s.local, s.line, s.column)
                entries.append((PSym(_new_name(an, local, scope, names)), key))
        elif isinstance(k, Lit) and k.value is _KW_OR:
            require(isinstance(v, MapForm), v, ":or takes a map of defaults: {:or {a 1}}")
            assert isinstance(v, MapForm)
            vit = iter(v.items)
            for dk, dv in zip(vit, vit, strict=True):
                require(isinstance(dk, Sym), dk, ":or keys are the bound names: {:or {a 1}}")
                assert isinstance(dk, Sym)
                defaults_forms[dk.name] = dv
        elif isinstance(k, Lit) and k.value is _KW_AS:
            require(isinstance(v, Sym), v, ":as must be followed by a name: {:as m}")
            assert isinstance(v, Sym)
            as_ = _new_name(an, v, scope, names)
        else:
            try:
                key = form_to_value(v)
            except ValueError:
                fail_at(v, 'map binding keys must be constants: {a :a, b "b"}')
            entries.append((analyze_pattern(an, k, scope, names), key))
    defaults: dict[Slot, Node] = {}
    for name, dform in defaults_forms.items():
        slot = names.get(name)
        if slot is None:
            fail_at(form, f":or names {name}, which this map binding does not bind")
        defaults[slot] = an.analyze(dform, scope, tail=False)
    return PDict(tuple(entries), defaults, as_, form.line, form.column)


def compile_binder(pattern: Pattern, compile_node: Callable[[Node], Evaluator]) -> Binder:
    """Compile ``pattern`` into ``bind(frame, value)``."""
    if isinstance(pattern, PSym):
        idx = pattern.slot.index

        def bind_sym(frame: list[Any], value: Any) -> None:
            frame[idx] = value

        return bind_sym
    if isinstance(pattern, PVec):
        return _compile_vector(pattern, compile_node)
    assert isinstance(pattern, PDict)
    return _compile_map(pattern, compile_node)


def _seq_of(value: Any, line: int, column: int) -> Any:
    t = type(value)
    if t is Vector or t is str:
        return value
    if value is None:
        return ()
    if t is dict or t is Map or t is frozenset:
        return vec(iter_of(value))
    raise LispError(
        "destructure",
        f"cannot destructure {_kind(value)} with a vector binding [a b]: "
        "it needs a vector, list or string",
        line=line,
        column=column,
    )


def _kind(value: Any) -> str:
    from ptcflow.lisp.printer import pr_str, type_name

    name = type_name(value)
    article = "an" if name[:1] in "aeiou" else "a"
    return f"{article} {name} {pr_str(value, limit=40)}"


def _compile_vector(p: PVec, compile_node: Callable[[Node], Evaluator]) -> Binder:
    items = [compile_binder(i, compile_node) for i in p.items]
    n = len(items)
    rest = compile_binder(p.rest, compile_node) if p.rest is not None else None
    as_idx = p.as_.index if p.as_ is not None else -1
    line, column = p.line, p.column

    def bind_vec(frame: list[Any], value: Any) -> None:
        seq = _seq_of(value, line, column)
        size = len(seq)
        for i in range(n):
            items[i](frame, seq[i] if i < size else None)
        if rest is not None:
            tail = seq[n:]
            rest(frame, (vec(tail) if tail else None))
        if as_idx >= 0:
            frame[as_idx] = value

    return bind_vec


def _compile_map(p: PDict, compile_node: Callable[[Node], Evaluator]) -> Binder:
    defaults = {slot.index: compile_node(node) for slot, node in p.defaults.items()}
    # Without :or defaults no binding runs code, so plain names can be stored first, each
    # without a call; with defaults every entry binds in order (a default may read another).
    plain = [] if defaults else [(_slot_of(pat), key) for pat, key in p.entries if _plain(pat)]
    entries = [
        (compile_binder(pat, compile_node), key, _slot_of(pat))
        for pat, key in p.entries
        if defaults or not _plain(pat)
    ]
    as_idx = p.as_.index if p.as_ is not None else -1
    missing = object()
    line, column = p.line, p.column

    def bind_map(frame: list[Any], value: Any) -> None:
        if value is None:
            m: Any = EMPTY_MAP
        elif type(value) is dict or type(value) is Map:
            m = value
        elif type(value) is Vector and len(value) % 2 == 0:  # keyword arguments: (f :a 1)
            m = Map({mkey(k): v for k, v in zip(value[::2], value[1::2], strict=True)})
            if as_idx >= 0:  # Clojure 1.11 binds :as to the map built from the arguments
                value = m
        else:
            raise LispError(
                "destructure",
                f"cannot destructure {_kind(value)} with a map binding {{:keys [...]}}: "
                "it needs a map",
                line=line,
                column=column,
            )
        for idx, key in plain:  # a name with no default: one store, no call
            frame[idx] = lookup(m, key)
        for bind, key, idx in entries:
            v = lookup(m, key, missing)
            if v is missing:
                default = defaults.get(idx)
                v = default(frame) if default is not None else None
            bind(frame, v)
        if as_idx >= 0:
            frame[as_idx] = value

    return bind_map


def _plain(p: Pattern) -> bool:
    return isinstance(p, PSym)


def _slot_of(p: Pattern) -> int:
    return p.slot.index if isinstance(p, PSym) else -1
