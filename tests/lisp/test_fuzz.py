"""Random programs never crash the host: every run ends with a value or a LispError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from ptcflow.lisp import Limits, LispError, LispResult, run_sync

NAMES = [
    "+",
    "-",
    "*",
    "/",
    "<",
    "=",
    "inc",
    "count",
    "map",
    "filter",
    "reduce",
    "get",
    "assoc",
    "first",
    "rest",
    "conj",
    "str",
    "range",
    "vec",
    "keys",
    "vals",
    "into",
    "apply",
    "sort",
    "group-by",
    "take",
    "nth",
    "x",
    "y",
    "f",
    "ctx/items",
    "memory/m",
]
SPECIALS = [
    "if",
    "let",
    "fn",
    "do",
    "when",
    "cond",
    "case",
    "and",
    "or",
    "loop",
    "recur",
    "for",
    "->",
    "->>",
    "def",
    "defn",
    "if-let",
    "return",
    "fail",
    "call",
    "memory/put",
    "pmap",
]
LIMITS = Limits(
    timeout_ms=1000, max_steps=5000, max_loop_iterations=500, max_collection_size=500, max_depth=50
)

atoms = st.one_of(
    st.sampled_from(NAMES),
    st.sampled_from(
        [
            "nil",
            "true",
            "false",
            "1",
            "0",
            "-3",
            "2.5",
            '"s"',
            ":k",
            ":a",
            "\\c",
            '"t"',
            ":keys",
            ":or",
            ":as",
            ":when",
            ":let",
            ":while",
            "##Inf",
            '#"a+"',
        ]
    ),
    st.integers(-5, 5).map(str),
)


def _forms(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, max_size=4).map(lambda xs: "(" + " ".join(xs) + ")"),
        st.tuples(st.sampled_from(SPECIALS), st.lists(children, max_size=4)).map(
            lambda t: "(" + " ".join([t[0], *t[1]]) + ")"
        ),
        st.lists(children, max_size=4).map(lambda xs: "[" + " ".join(xs) + "]"),
        st.lists(st.tuples(children, children), max_size=3).map(
            lambda ps: "{" + " ".join(f"{k} {v}" for k, v in ps) + "}"
        ),
        st.lists(children, max_size=3).map(lambda xs: "#(" + " ".join(["+", "%", *xs]) + ")"),
    )


programs = st.recursive(atoms, _forms, max_leaves=25)


async def _tool(args: dict[str, object]) -> object:
    return {"ok": True, "args": args}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(programs, min_size=1, max_size=3))
def test_random_programs_end_with_a_value_or_a_lisp_error(forms: list[str]) -> None:
    source = "\n".join(forms)
    result = run_sync(
        source,
        ctx={"items": [1, 2, 3]},
        tools={"t": _tool},
        limits=LIMITS,
    )
    assert isinstance(result, LispResult)
    if result.error is not None:
        assert isinstance(result.error, LispError)
        assert result.error.message
        assert "failed unexpectedly" not in result.error.message, result.error.message
