"""Memory and functions carried between runs as plain text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from ptcflow.errors import UsageError
from ptcflow.lisp import (
    Keyword,
    LimitExceeded,
    kept_functions,
    memory_from_data,
    memory_to_data,
    run_sync,
)
from ptcflow.lisp._carry import form_text
from ptcflow.lisp._colls import Map, make_set, mkey, vec
from ptcflow.lisp._reader import read
from ptcflow.lisp.values import lisp_eq

names = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | names.map(Keyword)
)
lisp_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4).map(vec)
        # a program's map (keys encoded: 1, 1.0 and true stay apart) or a host map
        | st.lists(st.tuples(children, children), max_size=4).map(
            lambda kv: Map({mkey(k): v for k, v in kv})
        )
        | st.dictionaries(names.map(Keyword), children, max_size=3)
        | st.lists(children, max_size=4).map(make_set)
    ),
    max_leaves=12,
)


@given(st.dictionaries(names, lisp_values, max_size=4))
def test_values_read_back_exactly(memory: dict[str, Any]) -> None:
    values, dropped = memory_to_data(memory)
    assert dropped == {}
    assert all(isinstance(t, str) for t in values.values())
    back = memory_from_data(values)
    assert back.keys() == memory.keys()
    for k, v in memory.items():
        assert lisp_eq(back[k], v), (k, v, values[k], back[k])


def test_functions_are_carried_as_their_defn_and_work_next_run() -> None:
    first_src = "(def rate 2) (defn scale [x] (* x rate)) (def twice #(* 2 %))"
    first = run_sync(first_src)
    values, _ = memory_to_data(first.memory)
    functions, dropped = kept_functions(first_src, first.memory)
    assert values == {"rate": "2"}
    assert functions == {
        "scale": "(defn scale [x] (* x rate))",
        "twice": "(def twice (fn [%1] (* 2 %1)))",
    }
    assert dropped == {}
    second = run_sync(
        "(def rate 3) [(scale 5) (twice 4)]",
        memory=memory_from_data(values),
        functions=list(functions.values()),
    )
    assert second.error is None
    assert second.value == [15, 8]  # scale reads the memory of the run that calls it


def test_what_cannot_be_carried_is_named_with_the_fix() -> None:
    src = """
    (let [k (count [1 2 3])] (defn add-k [x] (+ x k)))
    (def inc2 (partial + 2))
    (memory/put :f inc)
    (def fns [inc])
    nil
    """
    r = run_sync(src)
    assert r.error is None
    values, dropped_values = memory_to_data(r.memory)
    functions, dropped = kept_functions(src, r.memory)
    assert functions == {} and values == {}
    assert set(dropped) == {"add-k", "inc2", "f"}
    assert "(defn add-k [args] ...)" in dropped["add-k"]
    assert "function inside a collection" in dropped_values["fns"]


def test_redefining_a_kept_function_replaces_or_drops_it() -> None:
    kept = {"f": "(defn f [] 1)"}
    src = "(defn f [] 2)"
    r = run_sync(src, functions=list(kept.values()))
    functions, _ = kept_functions(src, r.memory, kept)
    assert functions == {"f": "(defn f [] 2)"}
    src = "(def f 5)"
    r = run_sync(src, functions=list(kept.values()))
    functions, _ = kept_functions(src, r.memory, kept)
    assert functions == {} and memory_to_data(r.memory)[0] == {"f": "5"}


def test_top_level_do_counts_as_top_level() -> None:
    src = "(do (defn g [x] (inc x)))"
    functions, _ = kept_functions(src, run_sync(src).memory)
    assert functions == {"g": "(defn g [x] (inc x))"}


def test_bad_texts_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="memory value 'x'"):
        memory_from_data({"x": "(+ 1"})
    with pytest.raises(UsageError, match="functions"):
        run_sync("1", functions=["(defn"])


@pytest.mark.parametrize(
    "source",
    [
        '(defn f [x & more] (str x "\\n" (count more)))',
        "(def g (fn ([a] a) ([a b] (+ a b))))",
        '(defn h [{:keys [a b]}] #{a b :c} {:k [1.5 ##Inf nil true]} #"a+b")',
    ],
)
def test_form_text_reads_back_to_the_same_text(source: str) -> None:
    text = form_text(read(source)[0])
    assert form_text(read(text)[0]) == text
    assert run_sync(text).error is None


def test_a_runs_own_collections_are_kept_and_read_back() -> None:
    src = (
        "(def v [1 [2 3]]) (def m {[1 2] :x, true 3, 1.0 :f, 1 :i, false nil}) "
        '(def s #{1 true [1]}) (def g (group-by :a [{:a 1} {:a 2 :b "x"}]))'
    )
    r = run_sync(src)
    values, dropped = memory_to_data(r.memory)
    assert dropped == {} and set(values) == {"v", "m", "s", "g"}
    back = memory_from_data(values)
    for name in values:
        assert lisp_eq(back[name], r.memory[name]), (name, values[name])
    again = run_sync("[(count m) (get m [1 2]) (get m 1.0) (contains? s true) v]", memory=back)
    assert again.value == [5, Keyword("x"), Keyword("f"), True, [1, [2, 3]]]


@given(lisp_values)
def test_the_memory_text_is_pr_str(value: Any) -> None:
    from ptcflow.lisp import pr_str

    values, dropped = memory_to_data({"v": value})
    assert dropped == {} and values["v"] == pr_str(value)


def test_a_value_too_large_to_write_is_dropped_in_bounded_time() -> None:
    import time

    # [v v] doubled 60 times: a small object graph whose text has 2**60 elements
    r = run_sync("(def x (reduce (fn [v _] [v v]) [] (range 60))) (def y [1 2]) nil")
    assert r.error is None
    start = time.process_time()
    values, dropped = memory_to_data(r.memory)
    assert time.process_time() - start < 5
    assert values == {"y": "[1 2]"} and "too large to be kept" in dropped["x"]
    v = run_sync('(def v {:a [1 "x"] :b #{3}}) nil').memory["v"]
    text = '{:a [1 "x"], :b #{3}}'
    assert memory_to_data({"v": v}, max_chars=len(text)) == ({"v": text}, {})  # exactly
    small, refused = memory_to_data({"v": v}, max_chars=len(text) - 1)
    assert small == {} and f"passes {len(text) - 1} characters" in refused["v"]
    with pytest.raises(LimitExceeded, match="memory value x is too large"):
        memory_to_data(r.memory, max_chars=1000, too_large="raise")


@given(lisp_values, lisp_values)
def test_a_collection_met_again_is_written_once_and_the_same(a: Any, b: Any) -> None:
    # `big` keeps rows of `orders`: the writer reuses a collection's text by identity
    shared = vec([a, Map({mkey(Keyword("k")): a}), b])
    memory = {"orders": shared, "big": vec([b, shared, vec([shared, a])]), "a": a}
    values, dropped = memory_to_data(memory)
    from ptcflow.lisp import pr_str

    assert dropped == {} and values == {name: pr_str(v) for name, v in memory.items()}


def test_a_collection_met_again_deeper_is_still_refused_when_nested_too_deeply() -> None:
    def nest(x: Any, n: int) -> Any:
        for _ in range(n):
            x = vec([x])
        return x

    inner = nest(vec([1]), 150)
    # written at depth 0 first: met again under 60 more levels it nests too deeply
    values, dropped = memory_to_data({"a": inner, "b": nest(inner, 60)})
    assert set(values) == {"a"} and "nested too deeply" in dropped["b"]
    # written under 30 levels first: its text fits anywhere shallower
    values, dropped = memory_to_data({"b": nest(inner, 30), "a": inner})
    assert dropped == {} and values["b"] == "[" * 30 + values["a"] + "]" * 30


@given(st.text())
def test_quote_escapes_exactly_what_the_reader_unescapes(s: str) -> None:
    from ptcflow.lisp._reader import read_data
    from ptcflow.lisp.printer import quote

    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b"}
    escapes["\f"] = "\\f"
    assert quote(s) == '"' + "".join(escapes.get(c, c) for c in s) + '"'  # the general way
    assert read_data(quote(s)) == s


def test_a_host_maps_encoded_keys_are_written_as_their_values() -> None:
    from ptcflow.lisp import pr_str

    # a tool's Python result may have keys that are not strings: stored encoded (mkey)
    row = {mkey(True): 1, mkey(1.5): Keyword("a"), mkey(vec([1, 2])): "v", None: 0}
    memory = {"row": row, "rows": vec([row, row])}
    values, dropped = memory_to_data(memory)
    assert dropped == {} and values["row"] == pr_str(row) == '{true 1, 1.5 :a, [1 2] "v", nil 0}'
    assert values["rows"] == f"[{values['row']} {values['row']}]"
    assert lisp_eq(memory_from_data(values)["row"], row)
