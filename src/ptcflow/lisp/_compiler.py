"""The compiler: analyzed nodes to Python closures ``ev(frame) -> value``.

Each node becomes one closure, built once per run, specialised by shape (argument counts,
constant heads, plain symbol bindings) so evaluation never walks the tree or looks names up.
Calls attach their source position to any :class:`LispError` passing through, and turn the
Python exceptions a builtin may leak into typed errors, so no traceback reaches the model.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any, Final

from ptcflow.lisp import _ast as A
from ptcflow.lisp._calls import compile_call
from ptcflow.lisp._colls import Map, make_set, mkey, vec
from ptcflow.lisp._destructure import Binder, compile_binder
from ptcflow.lisp._fn import make_fn_factory
from ptcflow.lisp._runtime import FailSignal, Recur, ReturnSignal, RunState
from ptcflow.lisp.errors import LimitExceeded, LispError
from ptcflow.lisp.values import Builtin, Keyword, iter_of, lisp_eq, to_fn

__all__ = ("Compiler", "Ev")

Ev = Callable[[list[Any]], Any]


class Compiler:
    """Compiles the nodes of one run (the run's state is bound into the closures)."""

    def __init__(self, state: RunState, builtins_cache: dict[str, Any]) -> None:
        self.state = state
        self.bound = builtins_cache  # builtin name -> callable bound to this run's budget
        self.make_fn = make_fn_factory(state, self.compile, self.binder)

    def binder(self, pattern: A.Pattern) -> Binder:
        """Compile a binding pattern."""
        return compile_binder(pattern, self.compile)

    def compile(self, node: A.Node) -> Ev:
        """Compile one node (a step of the run: compiling a long program is budgeted)."""
        self.state.budget.step()
        return _DISPATCH[type(node)](self, node)

    # -- leaves -------------------------------------------------------------------------
    def const(self, node: A.Const) -> Ev:
        value = node.value
        return lambda frame: value

    def local(self, node: A.Local) -> Ev:
        return itemgetter(node.slot.index)

    def builtin_value(self, b: Builtin) -> Any:
        """The callable for builtin ``b`` in this run (bound to the budget when needed)."""
        if not b.needs_budget:
            return b
        cached = self.bound.get(b.name)
        if cached is None:
            cached = self.bound[b.name] = b.bind(self.state.budget)
        return cached

    def builtin_ref(self, node: A.BuiltinRef) -> Ev:
        value = self.builtin_value(node.builtin)
        return lambda frame: value

    def global_ref(self, node: A.GlobalRef) -> Ev:
        memory, name = self.state.memory, node.name
        line, col = node.line, node.column

        def global_(frame: list[Any]) -> Any:
            try:
                return memory[name]
            except KeyError:
                raise LispError(
                    "unbound",
                    f"{name} is used before (def {name} ...) ran; define it first",
                    line=line,
                    column=col,
                ) from None

        return global_

    def ctx_ref(self, node: A.CtxRef) -> Ev:
        state, key = self.state, node.key
        ctx, cache = state.ctx, state.ctx_values
        if key in ctx:
            miss = cache  # a sentinel no value can be

            def ctx_(frame: list[Any]) -> Any:
                v = cache.get(key, miss)
                return state.ctx_value(key) if v is miss else v

            return ctx_
        line, col = node.line, node.column
        known = ", ".join(f"ctx/{k}" for k in sorted(ctx)) or "none"

        def missing(frame: list[Any]) -> Any:
            raise LispError(
                "unbound",
                f"ctx/{key} is not in the context; available: {known}",
                line=line,
                column=col,
            )

        return missing

    def mem_get(self, node: A.MemGet) -> Ev:
        memory, key_of = self.state.memory, self.state.memory_key
        key = self.compile(node.key)
        default = self.compile(node.default) if node.default is not None else (lambda f: None)
        line, col = node.line, node.column

        def get(frame: list[Any]) -> Any:
            k = key(frame)
            try:
                name = key_of(k)
            except LispError as e:
                raise e.with_position(line, col) from None
            return memory.get(name, default(frame))

        return get

    def mem_put(self, node: A.MemPut) -> Ev:
        memory, key_of = self.state.memory, self.state.memory_key
        key, value = self.compile(node.key), self.compile(node.value)

        line, col = node.line, node.column

        def put(frame: list[Any]) -> Any:
            k = key(frame)
            try:
                name = key_of(k)
            except LispError as e:
                raise e.with_position(line, col) from None
            v = value(frame)
            memory[name] = v
            return v

        return put

    def def_(self, node: A.Def) -> Ev:
        memory, name, value = self.state.memory, node.name, self.compile(node.value)

        def define(frame: list[Any]) -> Any:
            v = value(frame)
            memory[name] = v
            return v

        return define

    # -- control --------------------------------------------------------------------------
    def if_(self, node: A.If) -> Ev:
        test, then, else_ = (
            self.compile(node.test),
            self.compile(node.then),
            self.compile(node.else_),
        )

        def if_(frame: list[Any]) -> Any:
            v = test(frame)
            if v is None or v is False:
                return else_(frame)
            return then(frame)

        return if_

    def do(self, node: A.Do) -> Ev:
        if not node.body:
            return lambda frame: None
        evs = [self.compile(n) for n in node.body]
        init, last = evs[:-1], evs[-1]

        def do(frame: list[Any]) -> Any:
            for ev in init:
                ev(frame)
            return last(frame)

        return do

    def and_(self, node: A.And) -> Ev:
        evs = [self.compile(n) for n in node.items]

        def and_(frame: list[Any]) -> Any:
            v: Any = True
            for ev in evs:
                v = ev(frame)
                if v is None or v is False:
                    return v
            return v

        return and_

    def or_(self, node: A.Or) -> Ev:
        evs = [self.compile(n) for n in node.items]

        def or_(frame: list[Any]) -> Any:
            v: Any = None
            for ev in evs:
                v = ev(frame)
                if v is not None and v is not False:
                    return v
            return v

        return or_

    def _bindings(self, pairs: tuple[tuple[A.Pattern, A.Node], ...]) -> Callable[[list[Any]], None]:
        steps = [(self.binder(p), self.compile(v), p) for p, v in pairs]
        if all(isinstance(p, A.PSym) for _, _, p in steps):
            simple = [(p.slot.index, ev) for _, ev, p in steps]  # type: ignore[attr-defined]

            def bind_simple(frame: list[Any]) -> None:
                for idx, ev in simple:
                    frame[idx] = ev(frame)

            return bind_simple

        def bind_all(frame: list[Any]) -> None:
            for bind, ev, _ in steps:
                bind(frame, ev(frame))

        return bind_all

    def let(self, node: A.Let) -> Ev:
        bind, body = self._bindings(node.bindings), self.compile(node.body)

        def let(frame: list[Any]) -> Any:
            bind(frame)
            return body(frame)

        return let

    def loop(self, node: A.Loop) -> Ev:
        bind, body = self._bindings(node.bindings), self.compile(node.body)
        rebinders = [self.binder(p) for p, _ in node.bindings]
        simple = all(isinstance(p, A.PSym) for p, _ in node.bindings)
        slots = [p.slot.index for p, _ in node.bindings if isinstance(p, A.PSym)]
        budget = self.state.budget
        limit = budget.limits.max_loop_iterations
        line, col = node.line, node.column

        def too_many() -> LimitExceeded:
            return LimitExceeded(
                "max_loop_iterations",
                f"loop ran more than {limit} iterations; make sure it ends, or work "
                "on less data per turn",
                line=line,
                column=col,
            )

        shape = node.body
        if simple and type(shape) is A.If and type(shape.then) is A.Recur:
            return self._counting_loop(shape, bind, slots, too_many)

        def loop(frame: list[Any]) -> Any:
            bind(frame)
            n = 0
            while True:
                r = body(frame)
                if type(r) is not Recur:
                    return r
                n += 1
                if n > limit:
                    raise too_many()
                steps = budget.steps = budget.steps + 1
                if steps >= budget._next_check:
                    budget._slow_step()
                if simple:
                    for idx, v in zip(slots, r, strict=True):
                        frame[idx] = v
                else:
                    for rebind, v in zip(rebinders, r, strict=True):
                        rebind(frame, v)

        return loop

    def _counting_loop(
        self,
        shape: A.If,
        bind: Callable[[list[Any]], None],
        slots: list[int],
        too_many: Callable[[], LimitExceeded],
    ) -> Ev:
        """``(loop [...] (if test (recur ...) other))``: the test and the recur arguments run
        here, without a ``Recur`` per iteration; steps and the iteration limit count as in
        :meth:`loop` (``other`` may still ``recur``)."""
        assert isinstance(shape.then, A.Recur)
        budget = self.state.budget
        limit = budget.limits.max_loop_iterations
        test, other = self.compile(shape.test), self.compile(shape.else_)
        nexts = [self.compile(a) for a in shape.then.args]
        pair = len(nexts) == 2
        e0, e1 = nexts if pair else (test, test)  # (unused unless pair)

        def loop_if(frame: list[Any]) -> Any:
            bind(frame)
            n = 0
            while True:
                t = test(frame)
                if t is None or t is False:
                    r = other(frame)
                    if type(r) is not Recur:
                        return r
                    values: Any = r
                elif pair:
                    values = (e0(frame), e1(frame))
                else:
                    values = [ev(frame) for ev in nexts]
                n += 1
                if n > limit:
                    raise too_many()
                steps = budget.steps = budget.steps + 1
                if steps >= budget._next_check:
                    budget._slow_step()
                for idx, v in zip(slots, values, strict=True):
                    frame[idx] = v

        return loop_if

    def recur(self, node: A.Recur) -> Ev:
        evs = [self.compile(a) for a in node.args]
        if len(evs) == 1:
            e0 = evs[0]
            return lambda frame: Recur((e0(frame),))
        if len(evs) == 2:
            e0, e1 = evs
            return lambda frame: Recur((e0(frame), e1(frame)))
        return lambda frame: Recur(tuple([ev(frame) for ev in evs]))

    def case(self, node: A.Case) -> Ev:
        expr = self.compile(node.expr)
        fast: dict[tuple[type, Any], Ev] = {}
        slow: list[tuple[Any, Ev]] = []
        for value, result in node.table:
            ev = self.compile(result)
            if type(value) in _HASHED:
                fast.setdefault((type(value), value), ev)
            else:
                slow.append((value, ev))
        default = self.compile(node.default) if node.default is not None else None
        line, col = node.line, node.column

        def case(frame: list[Any]) -> Any:
            v = expr(frame)
            # Only scalars are looked up by hash: hashing a vector would walk it in C.
            ev = fast.get((type(v), v)) if type(v) in _HASHED else None
            if ev is None:
                for value, cand in slow:
                    if lisp_eq(value, v):
                        ev = cand
                        break
            if ev is not None:
                return ev(frame)
            if default is not None:
                return default(frame)
            from ptcflow.lisp.printer import pr_str

            raise LispError(
                "type",
                f"case: no clause matches {pr_str(v, limit=60)}; add a default as the last form",
                line=line,
                column=col,
            )

        return case

    # -- collections ----------------------------------------------------------------------
    def vec(self, node: A.VecNode) -> Ev:
        evs = [self.compile(n) for n in node.items]
        return lambda frame: vec([ev(frame) for ev in evs])

    def set_(self, node: A.SetNode) -> Ev:
        evs = [self.compile(n) for n in node.items]
        return lambda frame: make_set([ev(frame) for ev in evs])

    def map_(self, node: A.MapNode) -> Ev:
        evs = [(self.compile(k), self.compile(v)) for k, v in node.items]
        return lambda frame: Map({mkey(k(frame)): v(frame) for k, v in evs})

    # -- comprehension ----------------------------------------------------------------------
    def for_(self, node: A.ForNode) -> Ev:
        budget = self.state.budget
        size_limit = budget.limits.max_collection_size
        body = self.compile(node.body)
        if node.collect:

            def leaf(frame: list[Any], out: list[Any]) -> bool:
                out.append(body(frame))
                if len(out) > size_limit:
                    budget.check_size(len(out), "for")
                return True
        else:

            def leaf(frame: list[Any], out: list[Any]) -> bool:
                body(frame)
                return True

        step: Callable[[list[Any], list[Any]], bool] = leaf
        for clause in reversed(node.clauses):
            step = self._clause(clause, step)
        collect = node.collect

        def for_(frame: list[Any]) -> Any:
            out: list[Any] = []
            step(frame, out)
            if not collect:
                return None
            budget.charge(16 * len(out), "for")
            return vec(out)

        return for_

    def _clause(
        self, clause: tuple[Any, ...], inner: Callable[[list[Any], list[Any]], bool]
    ) -> Callable[[list[Any], list[Any]], bool]:
        kind = clause[0]
        budget = self.state.budget
        if kind == "bind":
            bind, coll = self.binder(clause[1]), self.compile(clause[2])

            def each(frame: list[Any], out: list[Any]) -> bool:
                for v in iter_of(coll(frame)):
                    budget.step()
                    bind(frame, v)
                    if not inner(frame, out):
                        break
                return True

            return each
        if kind == "let":
            bind_all = self._bindings(clause[1])

            def let(frame: list[Any], out: list[Any]) -> bool:
                bind_all(frame)
                return inner(frame, out)

            return let
        test = self.compile(clause[1])
        if kind == "when":

            def when(frame: list[Any], out: list[Any]) -> bool:
                v = test(frame)
                return True if v is None or v is False else inner(frame, out)

            return when

        def while_(frame: list[Any], out: list[Any]) -> bool:
            v = test(frame)
            return False if v is None or v is False else inner(frame, out)

        return while_

    # -- functions and calls ------------------------------------------------------------
    def fn(self, node: A.FnNode) -> Ev:
        return self.make_fn(node)

    def call(self, node: A.Call) -> Ev:
        head = node.fn
        static: Any = None
        if isinstance(head, A.BuiltinRef):
            static = self.builtin_value(head.builtin)
        elif isinstance(head, A.Const):
            static = head.value
        fn = None if static is not None and callable(static) else self.compile(head)
        return compile_call(node, [self.compile(a) for a in node.args], static, fn)

    # -- agent forms ----------------------------------------------------------------------
    def tool_call(self, node: A.ToolCall) -> Ev:
        state, line, col = self.state, node.line, node.column
        name = self.compile(node.name)
        args = self.compile(node.args) if node.args is not None else (lambda f: None)

        def tool(frame: list[Any]) -> Any:
            try:
                return state.call_tool(name(frame), args(frame))
            except LispError as e:
                raise e.with_position(line, col) from None

        return tool

    def return_(self, node: A.Return) -> Ev:
        value = self.compile(node.value)

        def return_(frame: list[Any]) -> Any:
            raise ReturnSignal(value(frame))

        return return_

    def fail(self, node: A.Fail) -> Ev:
        value = self.compile(node.value)

        def fail(frame: list[Any]) -> Any:
            raise FailSignal(value(frame))

        return fail

    def pmap(self, node: A.Pmap) -> Ev:
        state, line, col = self.state, node.line, node.column
        fn, coll = self.compile(node.fn), self.compile(node.coll)

        def pmap(frame: list[Any]) -> Any:
            f = to_fn(fn(frame), "pmap")
            items = tuple(iter_of(coll(frame)))
            try:
                return state.pmap(f, items)
            except LispError as e:
                raise e.with_position(line, col) from None

        return pmap

    def pcalls(self, node: A.Pcalls) -> Ev:
        state = self.state
        evs = [self.compile(n) for n in node.fns]

        def pcalls(frame: list[Any]) -> Any:
            fns = tuple(to_fn(ev(frame), "pcalls") for ev in evs)
            return state.pmap(lambda g: g(), fns)

        return pcalls


_HASHED: Final = frozenset({int, float, str, bool, type(None), Keyword})
"""The types ``case`` finds by hash (the others are compared with ``=``)."""

_DISPATCH: Final[dict[type, Callable[[Compiler, Any], Ev]]] = {
    A.Const: Compiler.const,
    A.Local: Compiler.local,
    A.GlobalRef: Compiler.global_ref,
    A.BuiltinRef: Compiler.builtin_ref,
    A.CtxRef: Compiler.ctx_ref,
    A.MemGet: Compiler.mem_get,
    A.MemPut: Compiler.mem_put,
    A.Def: Compiler.def_,
    A.If: Compiler.if_,
    A.Do: Compiler.do,
    A.And: Compiler.and_,
    A.Or: Compiler.or_,
    A.Let: Compiler.let,
    A.Loop: Compiler.loop,
    A.Recur: Compiler.recur,
    A.Case: Compiler.case,
    A.VecNode: Compiler.vec,
    A.SetNode: Compiler.set_,
    A.MapNode: Compiler.map_,
    A.ForNode: Compiler.for_,
    A.FnNode: Compiler.fn,
    A.Call: Compiler.call,
    A.ToolCall: Compiler.tool_call,
    A.Return: Compiler.return_,
    A.Fail: Compiler.fail,
    A.Pmap: Compiler.pmap,
    A.Pcalls: Compiler.pcalls,
}
