"""Program functions: compiled arities and the :class:`Closure` values ``fn`` creates.

A closure holds, per arity, the captured values (copied from the creating frame, so each
closure sees the values of its creation, as Clojure's immutable locals do) and a compiled
``invoke(captured, self, args)``. Invoking lays the frame out as
``[captured..., args..., rest?, locals...]``, counts a step, and tracks the call depth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ptcflow.lisp import _ast as A
from ptcflow.lisp._colls import vec
from ptcflow.lisp._destructure import Binder
from ptcflow.lisp._intrinsics import NAMES as INTRINSICS
from ptcflow.lisp._runtime import Recur, RunState
from ptcflow.lisp.errors import LimitExceeded, arity_error
from ptcflow.lisp.values import Keyword, LispFn

__all__ = ("Closure", "make_fn_factory")

Invoke = Callable[[tuple[Any, ...], "Closure", tuple[Any, ...]], Any]


class Closure(LispFn):
    """A function value created by ``fn``/``defn`` in a program (several arities)."""

    __slots__ = ("_captured", "_fixed", "_variadic")

    def __init__(
        self,
        name: str | None,
        fixed: dict[int, tuple[Invoke, tuple[Any, ...]]],
        variadic: tuple[int, Invoke, tuple[Any, ...]] | None,
    ) -> None:
        lo = min([*fixed, *([variadic[0]] if variadic else [])])
        super().__init__(name, lo, None if variadic else max(fixed))
        self._fixed = fixed
        self._variadic = variadic

    def __call__(self, *args: Any) -> Any:
        """Apply the function to positional arguments."""
        entry = self._fixed.get(len(args))
        if entry is not None:
            return entry[0](entry[1], self, args)
        v = self._variadic
        if v is not None and len(args) >= v[0]:
            return v[1](v[2], self, args)
        raise arity_error(self.name or "fn", len(args), self._expected())

    def _expected(self) -> str:
        counts = [str(n) for n in sorted(self._fixed)]
        if self._variadic is not None:
            counts.append(f"{self._variadic[0]} or more")
        return " or ".join(counts)


class Closure1(Closure):
    """A program function with one fixed arity (the common case, dispatched faster)."""

    __slots__ = ("_cap", "_inv", "_n")

    def __init__(self, name: str | None, n: int, invoke: Invoke, captured: tuple[Any, ...]):
        LispFn.__init__(self, name, n, n)
        self._n = n
        self._inv = invoke
        self._cap = captured

    def __call__(self, *args: Any) -> Any:
        """Apply the function to positional arguments."""
        if len(args) == self._n:
            return self._inv(self._cap, self, args)
        raise arity_error(self.name or "fn", len(args), str(self._n))


def make_fn_factory(
    state: RunState,
    compile_node: Callable[[A.Node], Callable[[list[Any]], Any]],
    binder: Callable[[A.Pattern], Binder],
) -> Callable[[A.FnNode], Callable[[list[Any]], Any]]:
    """Return ``compile_fn(node) -> ev`` for this run."""

    def compile_fn(node: A.FnNode) -> Callable[[list[Any]], Any]:
        name = node.name
        compiled = [(a, *_invoke(state, compile_node, binder, a, name)) for a in node.arities]
        arities = [(a, inv) for a, inv, _ in compiled]
        outer = [tuple(o.index for o, _ in a.captures) for a, _ in arities]
        fixed_specs = [
            (len(a.params), inv, idx)
            for (a, inv), idx in zip(arities, outer, strict=True)
            if a.rest is None
        ]
        var_specs = [
            (len(a.params), inv, idx)
            for (a, inv), idx in zip(arities, outer, strict=True)
            if a.rest is not None
        ]

        if len(fixed_specs) == 1 and not var_specs:
            (n1, inv1, idx1) = fixed_specs[0]
            method = compiled[0][2]
            cls: type[Closure1] = Closure1
            if method is not None:
                # One class per compiled fn, whose __call__ runs the body directly.
                attrs = {"__slots__": (), "__call__": method}
                leaf1 = getattr(method, "leaf1", None)
                if leaf1 is not None:
                    attrs["leaf1"] = leaf1
                cls = type("Closure1", (Closure1,), attrs)

            def make1(frame: list[Any]) -> Closure:
                return cls(name, n1, inv1, tuple([frame[i] for i in idx1]))

            return make1

        def make(frame: list[Any]) -> Closure:
            fixed = {n: (inv, tuple([frame[i] for i in idx])) for n, inv, idx in fixed_specs}
            variadic = None
            if var_specs:
                n, inv, idx = var_specs[0]
                variadic = (n, inv, tuple([frame[i] for i in idx]))
            return Closure(name, fixed, variadic)

        return make

    return compile_fn


def _invoke(
    state: RunState,
    compile_node: Callable[[A.Node], Callable[[list[Any]], Any]],
    binder: Callable[[A.Pattern], Binder],
    arity: A.Arity,
    name: str | None,
) -> tuple[Invoke, Callable[..., Any] | None]:
    """Compile one arity: ``invoke(captured, fn, args)``, and for simple arities also a
    ``__call__(self, *args)`` that does the same without an extra call."""
    assert arity.body is not None
    body = compile_node(arity.body)
    ncap = len(arity.captures)
    nfixed = len(arity.params)
    has_rest = arity.rest is not None
    pad = [None] * (arity.nslots - ncap - nfixed - (1 if has_rest else 0))
    self_idx = arity.self_slot.index if arity.self_slot is not None else -1
    destructure: list[tuple[int, Binder]] = [
        (ncap + i, binder(p)) for i, p in enumerate(arity.params) if not isinstance(p, A.PSym)
    ]
    if has_rest and not isinstance(arity.rest, A.PSym):
        assert arity.rest is not None
        destructure.append((ncap + nfixed, binder(arity.rest)))
    budget = state.budget
    max_depth = budget.limits.max_depth
    max_loops = budget.limits.max_loop_iterations
    has_recur = arity.has_recur
    label = name or "an anonymous fn"
    simple = not has_rest and self_idx < 0 and not destructure and not has_recur

    def too_deep() -> LimitExceeded:
        return LimitExceeded(
            "max_depth",
            f"calls nested deeper than {max_depth} (in {label}); use loop/recur, reduce or "
            "map instead of deep recursion",
        )

    def run_recur(frame: list[Any], r: Any) -> Any:
        n = 0
        while type(r) is Recur:
            n += 1
            if n > max_loops:
                raise LimitExceeded(
                    "max_loop_iterations",
                    f"recur in {label} ran more than {max_loops} iterations; make sure it ends",
                )
            budget.step()
            vals = r
            for i in range(nfixed):
                frame[ncap + i] = vals[i]
            if has_rest:
                frame[ncap + nfixed] = vals[nfixed]
            for idx, bind in destructure:
                bind(frame, frame[idx])
            r = body(frame)
        return r

    if simple and is_leaf(arity.body):
        # A body that calls no function of the program (and no builtin that takes one)
        # cannot nest calls: the depth cannot grow through it, so only the step counts.
        def invoke_leaf(captured: tuple[Any, ...], fn: Closure, args: tuple[Any, ...]) -> Any:
            steps = budget.steps = budget.steps + 1
            if steps >= budget._next_check:
                budget._slow_step()
            return body([*captured, *args, *pad])

        def call_leaf(self: Closure1, *args: Any) -> Any:
            if len(args) != nfixed:
                raise arity_error(label, len(args), str(nfixed))
            steps = budget.steps = budget.steps + 1
            if steps >= budget._next_check:
                budget._slow_step()
            return body([*self._cap, *args, *pad])

        call_leaf.leaf1 = (body, budget, tuple(pad)) if nfixed == 1 else None  # type: ignore[attr-defined]
        return invoke_leaf, call_leaf

    if simple:
        # The common case, kept to the bare minimum of work per call.
        def invoke_simple(captured: tuple[Any, ...], fn: Closure, args: tuple[Any, ...]) -> Any:
            depth = state.depth + 1
            if depth > max_depth:
                raise too_deep()
            state.depth = depth
            steps = budget.steps = budget.steps + 1
            if steps >= budget._next_check:
                budget._slow_step()
            try:
                return body([*captured, *args, *pad])
            finally:
                state.depth -= 1

        def call_simple(self: Closure1, *args: Any) -> Any:
            if len(args) != nfixed:
                raise arity_error(label, len(args), str(nfixed))
            depth = state.depth + 1
            if depth > max_depth:
                raise too_deep()
            state.depth = depth
            steps = budget.steps = budget.steps + 1
            if steps >= budget._next_check:
                budget._slow_step()
            try:
                return body([*self._cap, *args, *pad])
            finally:
                state.depth -= 1

        return invoke_simple, call_simple

    def invoke(captured: tuple[Any, ...], fn: Closure, args: tuple[Any, ...]) -> Any:
        depth = state.depth + 1
        if depth > max_depth:
            raise too_deep()
        state.depth = depth
        steps = budget.steps = budget.steps + 1
        if steps >= budget._next_check:
            budget._slow_step()
        try:
            if has_rest:
                more = args[nfixed:]
                frame = [*captured, *args[:nfixed], vec(more) if more else None, *pad]
            else:
                frame = [*captured, *args, *pad]
            if self_idx >= 0:
                frame[self_idx] = fn
            for idx, bind in destructure:
                bind(frame, frame[idx])
            r = body(frame)
            if has_recur and type(r) is Recur:
                r = run_recur(frame, r)
            return r
        finally:
            state.depth -= 1

    if has_rest:
        return invoke, None

    def call_fixed(self: Closure1, *args: Any) -> Any:
        if len(args) != nfixed:
            raise arity_error(label, len(args), str(nfixed))
        depth = state.depth + 1
        if depth > max_depth:
            raise too_deep()
        state.depth = depth
        steps = budget.steps = budget.steps + 1
        if steps >= budget._next_check:
            budget._slow_step()
        try:
            frame = [*self._cap, *args, *pad]
            if self_idx >= 0:
                frame[self_idx] = self
            for idx, bind in destructure:
                bind(frame, frame[idx])
            r = body(frame)
            if has_recur and type(r) is Recur:
                r = run_recur(frame, r)
            return r
        finally:
            state.depth -= 1

    return invoke, call_fixed


# Builtins that never call a function (of the program or otherwise) and never suspend.
_LEAF_BUILTINS: Final = INTRINSICS | frozenset(
    {
        "not",
        "not=",
        "nil?",
        "some?",
        "true?",
        "false?",
        "zero?",
        "pos?",
        "neg?",
        "even?",
        "odd?",
        "number?",
        "string?",
        "keyword?",
        "map?",
        "vector?",
        "quot",
        "rem",
        "/",
        "abs",
        "max",
        "min",
        "str",
        "name",
        "keyword",
        "count",
        "empty?",
        "get",
        "get-in",
        "contains?",
        "first",
        "second",
        "last",
        "nth",
        "clojure.string/upper-case",
        "clojure.string/lower-case",
        "clojure.string/trim",
    }
)


def is_leaf(node: A.Node) -> bool:
    """Whether evaluating ``node`` calls no function of the program (nor one that might)."""
    t = type(node)
    if t is A.Const or t is A.Local or t is A.CtxRef or t is A.BuiltinRef:
        return True
    if t is A.Call:
        assert isinstance(node, A.Call)
        head = node.fn
        if type(head) is A.BuiltinRef:
            ok = head.builtin.name in _LEAF_BUILTINS
        else:
            ok = type(head) is A.Const and type(head.value) is Keyword
        return ok and all(map(is_leaf, node.args))
    if t is A.If:
        assert isinstance(node, A.If)
        return is_leaf(node.test) and is_leaf(node.then) and is_leaf(node.else_)
    if t is A.Do:
        assert isinstance(node, A.Do)
        return all(map(is_leaf, node.body))
    if t is A.And or t is A.Or or t is A.VecNode:
        return all(map(is_leaf, node.items))  # type: ignore[attr-defined]
    return False
