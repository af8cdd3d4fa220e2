"""The registry: documentation, arities, test coverage, and the generated reference page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ptcflow.lisp.builtins import BUILTINS, CATEGORIES
from ptcflow.lisp.builtins.reference import render
from ptcflow.lisp.limits import Budget, Limits
from ptcflow.lisp.values import Builtin

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent


def _signature_arity(name: str, signature: str) -> tuple[int, int | None]:
    lo: int | None = None
    hi: int | None = 0
    for form in re.findall(r"\(([^()]*)\)", signature):
        tokens = form.split()
        assert tokens[0] == name, f"{name}: signature form {form!r} names another function"
        args = tokens[1:]
        if "&" in args:
            required = args.index("&")
            hi = None
        else:
            required = len(args)
            if hi is not None:
                hi = max(hi, required)
        lo = required if lo is None else min(lo, required)
    assert lo is not None, f"{name}: empty signature"
    return lo, hi


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_is_documented_and_arity_matches_signature(name: str) -> None:
    b = BUILTINS[name]
    assert b.name == name
    assert b.doc and "\n" not in b.doc and b.doc.endswith(".")
    assert b.category in CATEGORIES
    assert _signature_arity(name, b.signature) == (b.min_arity, b.max_arity)


def test_there_are_many_builtins_and_the_spec_names_exist() -> None:
    required = [
        "+",
        "-",
        "*",
        "/",
        "quot",
        "rem",
        "mod",
        "inc",
        "dec",
        "abs",
        "max",
        "min",
        "floor",
        "ceil",
        "round",
        "sqrt",
        "pow",
        "int",
        "double",
        "<",
        "<=",
        ">",
        ">=",
        "==",
        "not=",
        "=",
        "not",
        "compare",
        "nil?",
        "some?",
        "number?",
        "int?",
        "integer?",
        "float?",
        "string?",
        "keyword?",
        "map?",
        "vector?",
        "set?",
        "coll?",
        "seq?",
        "sequential?",
        "fn?",
        "boolean?",
        "true?",
        "false?",
        "empty?",
        "even?",
        "odd?",
        "pos?",
        "neg?",
        "zero?",
        "contains?",
        "distinct?",
        "first",
        "second",
        "last",
        "rest",
        "next",
        "nth",
        "take",
        "drop",
        "take-last",
        "drop-last",
        "take-while",
        "drop-while",
        "butlast",
        "cons",
        "conj",
        "concat",
        "into",
        "flatten",
        "interleave",
        "interpose",
        "distinct",
        "dedupe",
        "sort",
        "sort-by",
        "reverse",
        "range",
        "partition",
        "partition-all",
        "partition-by",
        "group-by",
        "frequencies",
        "count",
        "empty",
        "not-empty",
        "seq",
        "vec",
        "set",
        "subvec",
        "zipmap",
        "list",
        "vector",
        "hash-map",
        "hash-set",
        "repeat",
        "peek",
        "pop",
        "map",
        "mapv",
        "filter",
        "filterv",
        "remove",
        "keep",
        "keep-indexed",
        "map-indexed",
        "mapcat",
        "reduce",
        "reduce-kv",
        "some",
        "every?",
        "not-any?",
        "not-every?",
        "apply",
        "comp",
        "partial",
        "complement",
        "constantly",
        "juxt",
        "identity",
        "fnil",
        "min-key",
        "max-key",
        "get",
        "get-in",
        "assoc",
        "assoc-in",
        "update",
        "update-in",
        "dissoc",
        "merge",
        "merge-with",
        "select-keys",
        "keys",
        "vals",
        "find",
        "update-vals",
        "update-keys",
        "union",
        "intersection",
        "difference",
        "disj",
        "subset?",
        "superset?",
        "str",
        "subs",
        "join",
        "split",
        "split-lines",
        "trim",
        "triml",
        "trimr",
        "upper-case",
        "lower-case",
        "capitalize",
        "blank?",
        "starts-with?",
        "ends-with?",
        "includes?",
        "index-of",
        "last-index-of",
        "replace",
        "format",
        "name",
        "keyword",
        "parse-long",
        "parse-double",
        "re-find",
        "re-matches",
        "re-seq",
        "re-pattern",
        "println",
        "print",
        "prn",
        "sum",
        "avg",
        "sum-by",
        "max-by",
        "min-by",
        "pluck",
        "type",
    ]
    missing = [n for n in required if n not in BUILTINS]
    assert not missing
    for n in ("union", "intersection", "difference", "subset?", "superset?"):
        assert f"clojure.set/{n}" in BUILTINS and f"set/{n}" in BUILTINS
    for n in ("join", "split", "trim", "upper-case", "blank?", "replace", "includes?"):
        assert f"clojure.string/{n}" in BUILTINS and f"str/{n}" in BUILTINS
    for banned in ("rand", "rand-int", "shuffle", "eval", "slurp", "spit", "load-file"):
        assert banned not in BUILTINS


def test_every_builtin_is_exercised_by_a_source_table() -> None:
    text = "".join(p.read_text() for p in HERE.glob("test_bi_*.py"))
    used = set(re.findall(r"[(\[ ]([^\s()\[\]{}\"#]+)", text))
    missing = sorted(n for n in BUILTINS if n not in used)
    assert not missing, f"builtins without a test case: {missing}"


def test_case_count_is_large() -> None:
    text = "".join(p.read_text() for p in HERE.glob("test_bi_*.py"))
    cases = re.findall(r'^\s+\(\s*["\']\(', text, re.M)
    assert len(cases) >= 350, len(cases)


def test_bind_passes_the_budget_first() -> None:
    budget = Budget(Limits(max_collection_size=3))
    bound = BUILTINS["range"].bind(budget)
    assert isinstance(bound, Builtin) and not bound.needs_budget
    assert list(bound(3)) == [0, 1, 2]
    assert BUILTINS["inc"].bind(budget) is BUILTINS["inc"]
    assert bound.accepts(1) and bound.accepts(3) and not bound.accepts(4)


def test_unbound_budget_builtin_refuses_to_run() -> None:
    from ptcflow.lisp.errors import LispError

    with pytest.raises(LispError, match="without a run budget"):
        BUILTINS["range"](3)


def test_reference_page_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "lisp-builtins.md").read_text()
    assert committed == render(), (
        "docs/lisp-builtins.md is stale: run "
        "`python -m ptcflow.lisp.builtins.reference > docs/lisp-builtins.md`"
    )


def test_reference_page_examples_run() -> None:
    for block in re.findall(r"```python\n(.*?)```", render(), re.S):
        exec(compile(block, "lisp-builtins.md", "exec"), {})


def test_reference_main_writes_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    from ptcflow.lisp.builtins import reference

    reference.main()
    assert capsys.readouterr().out == render()
