"""Validation: coercion table, modes table, error formats, keys, fast and slow paths agree."""

from __future__ import annotations

import enum
import re
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.signature import (
    Fields,
    ListOf,
    Param,
    Signature,
    Type,
    ValidationResult,
    parse,
    parse_type,
)
from ptcflow.signature._validate import _Ctx, compile_type

from .strategies import json_values, names, types, valid_values


class Keyword:
    """Like the PTC-Lisp keyword: hashable, compared by name, printed with a colon."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(("kw", self.name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyword) and other.name == self.name

    def __str__(self) -> str:
        return ":" + self.name


class Named:
    """Any object with a str ``name`` attribute is accepted as a key."""

    def __init__(self, name: str) -> None:
        self.name = name


class Color(enum.Enum):
    RED = "red"


def out(sig: str, value: Any, mode: str = "enabled") -> ValidationResult:
    return parse(sig).validate_output(value, mode=mode)


def inp(sig: str, value: Any, mode: str = "enabled") -> ValidationResult:
    return parse(sig).validate_input(value, mode=mode)


# -- primitive example values table ---------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "good", "bad", "bad_text"),
    [
        (":string", ["hello", ""], [1, None, b"x", ["a"]], "expected string"),
        (":int", [42, -1, 0, 2**80], [3.5, "42", True, None], "expected int"),
        (":float", [3.14, -0.5, 42, 0], ["3.14", False, None, [1.0]], "expected float"),
        (":bool", [True, False], [1, 0, "true", None], "expected bool"),
        (
            ":keyword",
            ["pending", Keyword("active"), Color.RED],
            [1, None, {"a": 1}],
            "expected keyword",
        ),
        (":any", [None, 1, "x", [1], {"a": 1}, object()], [], ""),
        (
            ":map",
            [{}, {"a": 1}, {1: 2}, MappingProxyType({"a": 1})],
            [[], "x", None, 1],
            "expected map",
        ),
        ("[:int]", [[], [1, 2], (1, 2), {3}], [[1, "2"], "12", {"a": 1}, None], "expected"),
        ("{}", [{}, {"extra": 1}], [[], None, "x"], "expected map"),
    ],
)
def test_primitives_and_collections_accept_and_reject(
    type_: str, good: list[Any], bad: list[Any], bad_text: str
) -> None:
    for value in good:
        result = out(type_, value)
        assert result.ok, (value, result.errors)
        assert result.value is value
    for value in bad:
        result = out(type_, value)
        assert not result.ok, value
        assert bad_text in result.errors[0]


# -- error messages ---------------------------------------------------------------------------


def test_error_format_exactly_as_specified() -> None:
    sig = "(results [{customer {id :int}, amount :float}]) -> :any"
    value = {
        "results": [
            {"customer": {"id": "abc"}, "amount": 1.0},
            {"customer": {"id": 2}, "amount": 2.0},
            {"customer": {"id": 3}, "amount": None},
        ]
    }
    result = inp(sig, value)
    assert result.errors == [
        'results[0].customer.id: expected int, got string "abc"',
        "results[2].amount: expected float, got nil",
    ]
    assert not result.ok


def test_warning_format_exactly_as_specified() -> None:
    result = inp("(limit :int) -> :any", {"limit": "10"})
    assert result.ok
    assert result.value == {"limit": 10}
    assert result.warnings == ['limit: coerced string "10" to int']
    assert result.errors == []


def test_all_errors_are_collected_not_just_the_first() -> None:
    result = out("[{id :int}]", [{"id": "a"}, {"id": "b"}, {"id": 3}, {"id": "d"}])
    assert [e.split(":")[0] for e in result.errors] == ["$[0].id", "$[1].id", "$[3].id"]


def test_missing_required_field_and_root_paths() -> None:
    assert out("{id :int, owner {email :string}}", {"owner": {}}).errors == [
        "id: missing required field, expected int",
        "owner.email: missing required field, expected string",
    ]
    assert out(":int", "x").errors == ['$: expected int, got string "x"']
    assert out("{a [:int]}", {}).errors == ["a: missing required field, expected [:int]"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "nil"),
        (True, "bool true"),
        (7, "int 7"),
        (2.5, "float 2.5"),
        ("x" * 100, 'string "' + "x" * 37 + '..."'),
        ('say "hi"', 'string "say \\"hi\\""'),
        ([1, 2], "list of 2 items"),
        ([1], "list of 1 item"),
        ({"a": 1, "b": 2}, "map {a, b}"),
        ({}, "map {}"),
        (Keyword("k"), "keyword :k"),
        (b"x", "bytes"),
    ],
)
def test_got_descriptions(value: Any, shown: str) -> None:
    assert out(":string" if not isinstance(value, str) else ":int", value).errors == [
        f"$: expected {'string' if not isinstance(value, str) else 'int'}, got {shown}"
    ]


# -- optional fields ----------------------------------------------------------------------------


def test_optional_field_may_be_nil_or_omitted() -> None:
    sig = "{id :int, email :string?}"
    assert out(sig, {"id": 1}).ok
    assert out(sig, {"id": 1, "email": None}).ok
    assert out(sig, {"id": 1, "email": "a@b"}).ok
    assert out(sig, {"id": 1, "email": 5}).errors == ["email: expected string, got int 5"]
    assert out(sig, {"email": "a@b"}).errors == ["id: missing required field, expected int"]


def test_required_field_rejects_nil() -> None:
    assert out("{id :int}", {"id": None}).errors == ["id: expected int, got nil"]


def test_optional_output_and_list_items() -> None:
    assert out(":int?", None).ok
    assert out("[:int?]", [1, None]).ok
    assert not out("[:int]", [1, None]).ok
    assert out("[:int]?", None).ok


# -- coercion rules table -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "given", "expected", "warning"),
    [
        (":int", "42", 42, 'x: coerced string "42" to int'),
        (":int", " -7 ", -7, 'x: coerced string " -7 " to int'),
        (":float", "3.14", 3.14, 'x: coerced string "3.14" to float'),
        (":float", "42", 42.0, 'x: coerced string "42" to float'),
        (":float", "1e3", 1000.0, 'x: coerced string "1e3" to float'),
        (":bool", "true", True, 'x: coerced string "true" to bool'),
        (":bool", "false", False, 'x: coerced string "false" to bool'),
        (":bool", "True", True, 'x: coerced string "True" to bool'),
        (":float", 42, 42.0, None),
        (":int", 3.0, 3, "x: coerced float 3.0 to int"),
    ],
)
def test_coercion_rules_for_inputs(
    type_: str, given: Any, expected: Any, warning: str | None
) -> None:
    result = inp(f"(x {type_}) -> :any", {"x": given})
    assert result.ok
    assert result.value == {"x": expected}
    assert type(result.value["x"]) is type(expected)
    assert result.warnings == ([warning] if warning else [])


@pytest.mark.parametrize(
    ("type_", "given"),
    [
        (":int", "4.2"),
        (":int", "abc"),
        (":int", 3.5),
        (":float", "nan?"),
        (":bool", "yes"),
        (":bool", 1),
    ],
)
def test_uncoercible_inputs_are_errors(type_: str, given: Any) -> None:
    result = inp(f"(x {type_}) -> :any", {"x": given})
    assert not result.ok
    assert result.errors[0].startswith(f"x: expected {type_[1:]}, got")


@pytest.mark.parametrize(
    ("type_", "given"), [(":int", "42"), (":float", "3.14"), (":bool", "true")]
)
def test_outputs_are_strict(type_: str, given: Any) -> None:
    result = out(type_, given)
    assert not result.ok
    assert result.warnings == []


def test_output_float_accepts_int_unchanged() -> None:
    result = out("{price :float}", {"price": 42})
    assert result.ok and result.value == {"price": 42}


def test_coercion_is_recursive_through_lists_and_maps() -> None:
    result = inp(
        "(items [{id :int, name :string}]) -> :any", {"items": [{"id": "42", "name": "Alice"}]}
    )
    assert result.ok
    assert result.value == {"items": [{"id": 42, "name": "Alice"}]}
    assert result.warnings == ['items[0].id: coerced string "42" to int']


def test_coercion_does_not_mutate_the_input() -> None:
    args = {"items": [{"id": "1"}], "n": {"x": "2.5"}}
    result = inp("(items [{id :int}], n {x :float}) -> :any", args)
    assert args == {"items": [{"id": "1"}], "n": {"x": "2.5"}}
    assert result.value == {"items": [{"id": 1}], "n": {"x": 2.5}}


def test_tool_call_example_from_the_spec() -> None:
    result = inp("(id :int, name :string) -> :bool", {"id": "42", "name": "Alice"})
    assert result.ok
    assert result.value == {"id": 42, "name": "Alice"}
    assert result.warnings == ['id: coerced string "42" to int']


def test_return_example_from_the_spec() -> None:
    sig = parse("() -> {count :int, items [:string]}")
    assert sig.validate_output({"count": 5, "items": ["a", "b"]}).ok
    assert sig.validate_output({"count": 5, "items": ["a", 2]}).errors == [
        "items[1]: expected string, got int 2"
    ]


# -- keys ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("make_key", [str, lambda n: ":" + n, Keyword, Named])
def test_keys_as_strings_colon_strings_and_keyword_objects(make_key: Any) -> None:
    value = {make_key("id"): "7", make_key("tags"): [{make_key("n"): "1"}]}
    result = inp("(id :int, tags [{n :int}]) -> :any", value)
    assert result.ok, result.errors
    assert result.value == {"id": 7, "tags": [{"n": 1}]}
    out_result = out("{id :string, tags [{n :string}]}", value)
    assert out_result.ok and out_result.value is value


def test_keyword_keys_are_learned_and_still_checked() -> None:
    sig = parse("[{id :int, email :string?}]")
    data: list[dict[Keyword, Any]] = [{Keyword("id"): i, Keyword("email"): None} for i in range(5)]
    assert sig.validate_output(data).ok
    data.append({Keyword("id"): "x"})
    data.append({Keyword("email"): "a"})
    assert sig.validate_output(data).errors == [
        '$[5].id: expected int, got string "x"',
        "$[6].id: missing required field, expected int",
    ]


def test_input_keys_come_back_as_field_names_and_extras_are_kept() -> None:
    result = inp("(a :int) -> :any", {Keyword("a"): 1, Keyword("extra"): 2})
    assert result.value == {"a": 1, Keyword("extra"): 2}


def test_input_mapping_types() -> None:
    assert inp("(a :int) -> :any", OrderedDict(a=1)).ok
    assert inp("(a :int) -> :any", MappingProxyType({"a": "1"})).value == {"a": 1}
    assert inp("() -> :any", None).value == {}
    assert inp("(a :int?) -> :any", None).ok
    assert inp("(a :int) -> :any", [1]).errors == ["$: expected map, got list of 1 item"]


# -- validation modes table -----------------------------------------------------------------------


def test_mode_enabled_fails_on_errors_and_allows_extra_fields() -> None:
    assert out("{a :int}", {"a": 1, "b": 2}, "enabled").ok
    assert not out("{a :int}", {"a": "1"}, "enabled").ok


def test_mode_warn_only_turns_errors_into_warnings() -> None:
    result = out("{a :int}", {"a": "x"}, "warn_only")
    assert result.ok
    assert result.errors == []
    assert result.warnings == ['a: expected int, got string "x"']
    coerced = inp("(a :int, b :int) -> :any", {"a": "1", "b": "x"}, "warn_only")
    assert coerced.ok and coerced.value == {"a": 1, "b": "x"}
    assert len(coerced.warnings) == 2


def test_mode_disabled_skips_everything() -> None:
    value = {"a": "x"}
    result = out("{a :int}", value, "disabled")
    assert result.ok and result.value is value and not result.errors and not result.warnings
    assert inp("(a :int) -> :any", value, "disabled").value is value


def test_mode_strict_rejects_extra_fields_everywhere() -> None:
    result = out("{a :int, b {c :int}}", {"a": 1, "b": {"c": 1, "d": 2}, "e": 3}, "strict")
    assert not result.ok
    assert result.errors == [
        "b.d: unexpected field (strict mode allows only: c)",
        "e: unexpected field (strict mode allows only: a, b)",
    ]
    assert inp("(a :int) -> :any", {"a": 1, "z": 0}, "strict").errors == [
        "z: unexpected field (strict mode allows only: a)"
    ]
    assert out("{a :int}", {"a": 1}, "strict").ok
    assert out("{a :int}", {Keyword("a"): 1}, "strict").ok
    assert out("{a :map}", {"a": {"anything": 1}}, "strict").ok


@pytest.mark.parametrize("mode", [":enabled", ":strict", ":warn_only", ":disabled"])
def test_modes_may_be_written_as_keywords(mode: str) -> None:
    assert out(":int", 1, mode).ok


@pytest.mark.parametrize("mode", ["on", "", "STRICT", None])
def test_unknown_mode_is_a_usage_error(mode: Any) -> None:
    with pytest.raises(UsageError, match="unknown validation mode"):
        out(":int", 1, mode)
    with pytest.raises(UsageError, match="unknown validation mode"):
        inp("(a :int) -> :any", {"a": 1}, mode)


def test_validation_result_format() -> None:
    result = inp("(a :int, b :int) -> :any", {"a": "1", "b": "x"})
    assert result.format("Tool validation") == (
        "Tool validation errors:\n"
        '- b: expected int, got string "x"\n'
        "Tool validation warnings:\n"
        '- a: coerced string "1" to int'
    )
    assert ValidationResult(ok=True, value=1).format() == ""


# -- properties -----------------------------------------------------------------------------------

_SEGMENT = re.compile(r"\[(\d+)\]|\.?([A-Za-z_][A-Za-z0-9_\-]*)")


def _walk(value: Any, path: str) -> tuple[bool, bool]:
    """Return (parent exists, full path exists) for an error path."""
    text = path[1:] if path.startswith("$") else path
    segments: list[int | str] = []
    for match in _SEGMENT.finditer(text):
        segments.append(int(match.group(1)) if match.group(1) else match.group(2))
    current = value
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if isinstance(segment, int):
            ok = isinstance(current, list | tuple) and segment < len(current)
            if not ok:
                return False, False
            current = current[segment]
        else:
            if not isinstance(current, dict):
                return False, False
            if segment not in current:
                return last, False
            current = current[segment]
    return True, True


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_values_validate_or_errors_point_into_the_value(data: st.DataObject) -> None:
    node: Type = data.draw(types)
    keys = st.sampled_from(_field_names(node) or ["k"]) | names
    value = data.draw(json_values(keys))
    for mode in ("enabled", "strict"):
        checks = (
            (Signature(output=node).validate_output(value, mode=mode), value),
            (_as_input(node).validate_input({"x": value}, mode=mode), {"x": value}),
        )
        for result, base in checks:
            if result.ok:
                assert not result.errors
                continue
            for error in result.errors:
                path, _, message = error.partition(": ")
                parent, full = _walk(base, path)
                assert parent, error
                assert full or message.startswith("missing required field"), error


def _as_input(node: Type) -> Signature:
    return Signature(params=(Param(name="x", type=node),))


def _field_names(node: Type) -> list[str]:
    if isinstance(node, Fields):
        return [f.name for f in node.fields] + [
            n for f in node.fields for n in _field_names(f.type)
        ]
    if isinstance(node, ListOf):
        return _field_names(node.item)
    return []


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_values_built_from_the_type_always_validate(data: st.DataObject) -> None:
    node: Type = data.draw(types)
    value = data.draw(valid_values(node))
    result = Signature(output=node).validate_output(value, mode="strict")
    assert result.ok, result.errors
    assert result.value is value
    ctx = _Ctx()
    compile_type(node, coerce=False, strict=True).check(value, None, ctx)
    assert ctx.errors == []


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fast_path_never_accepts_what_the_slow_path_rejects(data: st.DataObject) -> None:
    node: Type = data.draw(types)
    keys = st.sampled_from(_field_names(node) or ["k"]) | st.sampled_from([":k", ":id"])
    value = data.draw(json_values(keys) | valid_values(node))
    for strict in (False, True):
        compiled = compile_type(node, coerce=False, strict=strict)
        if compiled.fast is None:
            continue
        try:
            msgspec.convert(value, compiled.fast, strict=True)
        except msgspec.ValidationError:
            continue
        ctx = _Ctx()
        compiled.check(value, None, ctx)
        assert ctx.errors == [], (value, ctx.errors)


def test_compiled_validators_are_cached() -> None:
    node = parse_type("[{a :int}]")
    assert compile_type(node, coerce=False, strict=False) is compile_type(
        parse_type("[{a :int}]"), coerce=False, strict=False
    )


def test_huge_digit_strings_are_errors_not_crashes() -> None:
    digits = "9" * 5000
    result = inp("(n :int) -> :any", {"n": digits})
    assert not result.ok
    assert result.errors[0].startswith('n: expected int, got string "999')
    assert out(":string", 10**5000).errors == ["$: expected string, got int (a huge number)"]


def test_custom_mapping_keys_are_normalised() -> None:
    from collections.abc import Iterator, Mapping

    class Record(Mapping[Any, Any]):
        def __init__(self, data: dict[Any, Any]) -> None:
            self._data = data

        def __getitem__(self, key: Any) -> Any:
            return self._data[key]

        def __iter__(self) -> Iterator[Any]:
            return iter(self._data)

        def __len__(self) -> int:
            return len(self._data)

    value = Record({Keyword("id"): "3"})
    assert inp("(id :int, note :string?) -> :any", value).value == {"id": 3}
    assert out("{id :string, note :string?}", value).ok


def test_mixed_key_styles_in_one_list() -> None:
    rows: list[dict[Any, Any]] = [
        {"id": "1", "tags": ["a"]},
        {Keyword("id"): "2", Keyword("tags"): ["b"]},
        {":id": "3", ":tags": ["c"]},
        {"id": "4", "tags": ["d"]},
        {Keyword("id"): "5"},
    ]
    result = inp("(rows [{id :int, tags [:string]?}]) -> :any", {"rows": rows})
    assert result.ok, result.errors
    assert result.value == {
        "rows": [
            {"id": 1, "tags": ["a"]},
            {"id": 2, "tags": ["b"]},
            {"id": 3, "tags": ["c"]},
            {"id": 4, "tags": ["d"]},
            {"id": 5},
        ]
    }
    assert len(result.warnings) == 5
    assert out("[{id :string, tags [:string]?}]", rows).ok
    bad = [*rows, {Keyword("id"): 6}]
    assert out("[{id :string, tags [:string]?}]", bad).errors == [
        "$[5].id: expected string, got int 6"
    ]


def test_exact_type_shortcut_never_hides_bools_or_subclasses() -> None:
    class MyStr(str):
        pass

    assert out("{n :int}", {"n": True}).errors == ["n: expected int, got bool true"]
    assert out("[:int]", [1, True]).errors == ["$[1]: expected int, got bool true"]
    assert out("{s :string, k :keyword}", {"s": MyStr("x"), "k": MyStr("y")}).ok
    assert inp("(xs [:float]) -> :any", {"xs": [1, 2.5]}).value == {"xs": [1.0, 2.5]}
