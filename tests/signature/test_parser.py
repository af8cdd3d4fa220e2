"""Parsing: every form and table row of the signature seeds, errors with carets, properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.signature import (
    Field,
    Fields,
    ListOf,
    Param,
    Prim,
    Signature,
    SignatureError,
    parse,
    parse_type,
)
from ptcflow.signature._parser import MAX_DEPTH

from .strategies import signatures, types

INT = Prim(name="int")
STRING = Prim(name="string")


# -- primitive types table ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["string", "int", "float", "bool", "keyword", "any", "map"])
def test_every_primitive_parses_as_output(name: str) -> None:
    sig = parse(f":{name}")
    assert sig.params == ()
    assert sig.output == Prim(name=name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["string", "int", "float", "bool", "keyword", "any", "map"])
def test_every_primitive_parses_as_parameter_and_optional(name: str) -> None:
    sig = parse(f"(x :{name}, y :{name}?) -> :{name}")
    assert sig.params[0].type == Prim(name=name)  # type: ignore[arg-type]
    assert not sig.params[0].optional
    assert sig.params[1].optional


# -- collection types table -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[:int]", ListOf(item=INT)),
        ("[:string]", ListOf(item=STRING)),
        ("[:map]", ListOf(item=Prim(name="map"))),
        (
            "[{id :int, name :string}]",
            ListOf(
                item=Fields(fields=(Field(name="id", type=INT), Field(name="name", type=STRING)))
            ),
        ),
        (
            "{id :int, name :string}",
            Fields(fields=(Field(name="id", type=INT), Field(name="name", type=STRING))),
        ),
        (
            "{customer {id :int, name :string}}",
            Fields(
                fields=(
                    Field(
                        name="customer",
                        type=Fields(
                            fields=(Field(name="id", type=INT), Field(name="name", type=STRING))
                        ),
                    ),
                )
            ),
        ),
        (":map", Prim(name="map")),
        (
            "{id :int, email :string?}",
            Fields(
                fields=(
                    Field(name="id", type=INT),
                    Field(name="email", type=Prim(name="string", optional=True)),
                )
            ),
        ),
        ("[[:int]]", ListOf(item=ListOf(item=INT))),
        ("[:int]?", ListOf(item=INT, optional=True)),
        ("[:int?]", ListOf(item=Prim(name="int", optional=True))),
        ("{a :int}?", Fields(fields=(Field(name="a", type=INT),), optional=True)),
    ],
)
def test_collection_types(text: str, expected: object) -> None:
    assert parse_type(text) == expected
    assert parse(text).output == expected


# -- edge cases table -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "output"),
    [
        (":any", Prim(name="any")),
        ("() -> :any", Prim(name="any")),
        ("{}", Fields()),
        ("[:any]", ListOf(item=Prim(name="any"))),
        ("[{}]", ListOf(item=Fields())),
    ],
)
def test_valid_edge_cases(text: str, output: object) -> None:
    sig = parse(text)
    assert sig.params == ()
    assert sig.output == output


def test_any_and_unit_arrow_any_are_the_same() -> None:
    assert parse(":any") == parse("() -> :any")


def test_empty_list_is_rejected_with_hint() -> None:
    with pytest.raises(SignatureError) as info:
        parse("[]")
    assert "list of what? use [:any]" in str(info.value)
    assert info.value.position == 1
    assert str(info.value).endswith("  []\n   ^")


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_signature_is_rejected(text: str) -> None:
    with pytest.raises(SignatureError, match="empty signature"):
        parse(text)


def test_signature_error_is_a_usage_error() -> None:
    assert issubclass(SignatureError, UsageError)


# -- full format, shorthand, named parameters -----------------------------------------------


def test_full_signature_from_the_contract() -> None:
    sig = parse("(query :string, limit :int?) -> [{id :int, title :string}]")
    assert [p.name for p in sig.params] == ["query", "limit"]
    assert sig.params[0] == Param(name="query", type=STRING)
    assert sig.params[1].optional and sig.params[1].type == Prim(name="int", optional=True)
    assert sig.output == ListOf(
        item=Fields(fields=(Field(name="id", type=INT), Field(name="title", type=STRING)))
    )
    assert sig.name is None


@pytest.mark.parametrize(
    ("short", "full"),
    [
        ("{count :int}", "() -> {count :int}"),
        ("{name :string, price :float}", "() -> {name :string, price :float}"),
        ("[:int]", "() -> [:int]"),
    ],
)
def test_shorthand_equals_full_form(short: str, full: str) -> None:
    assert parse(short) == parse(full)
    assert parse(full).render() == short


@pytest.mark.parametrize(
    "text",
    [
        "() -> {count :int}",
        "(query :string) -> [{id :int}]",
        "(user {:id :int}, limit :int) -> :any",
        "(user {id :int, name :string}, limit :int) -> [{order_id :int}]",
        "(user {:id :int, :name :string}, limit :int) -> [{order_id :int}]",
        "(query :string, limit :int) -> {count :int, items [{id :int}]}",
        "{summary :string, count :int, _email_ids [:int]}",
        "() -> {summary :string, count :int, _email_ids [:int]}",
        "{answer :int}",
        "{name :string, price :float, in_stock :bool}",
        "[{id :int, title :string}]",
        "(user_id :int) -> {name :string, orders [:map]}",
        "(query :string, options {limit :int?, sort :string?}) ->\n{results [{id :int, score :float, metadata :map}], total :int}",
        "{summary :string, _raw_data [:map]}",
        "(id :int, name :string) -> :bool",
        "() -> {count :int, items [:string]}",
        "[{id :int, name :string}]",
        "{user {id :int, address {city :string, zip :string}}}",
        "{user {id :int, profile {bio :string, avatar :string?}}}",
        "{user {profile {settings {theme {colors {primary :string}}}}}}",
        "{user {profile :map}}",
        "(param1 :string, param2 :int) -> :any",
        "{:id :int :name :string}",
        "[{:id :int :name :string}]",
        "{:id :int :email :string?}",
        "{:user {:id :int :profile {:bio :string}}}",
        "(email {:subject :string}, tier :string) -> {:urgent :bool, :reason :string}",
        "(name :string) -> {greeting :string}",
        "(item :map, threshold :float) -> {score :float}",
        "(item :map) -> {score :float}",
        "() -> {result :map}",
        "(report :map) -> {score :float, reason :string}",
        "(description :string) -> {id :int, name :string}",
        "(user :string) -> {count :int, _ids [:int]}",
        "search(query :string, limit :int) -> [{id :int, title :string}]",
        "get_user(id :int) -> {name :string, email :string?}",
    ],
)
def test_every_example_from_the_seeds_parses_and_round_trips(text: str) -> None:
    sig = parse(text)
    assert parse(sig.render()) == sig
    assert sig.render() == parse(sig.render()).render()


def test_colon_keys_and_commas_are_optional() -> None:
    assert parse("{:id :int :name :string}") == parse("{id :int, name :string}")
    assert parse("(a :int b :string) -> :any") == parse("(a :int, b :string) -> :any")
    assert parse("{id:int}") == parse("{id :int}")
    assert parse("(a :int,) -> :any") == parse("(a :int) -> :any")


def test_named_signature() -> None:
    sig = parse("search(query :string, limit :int) -> [{id :int, title :string}]")
    assert sig.name == "search"
    assert sig.render() == "search(query :string, limit :int) -> [{id :int, title :string}]"
    assert parse("ping() -> :bool").render() == "ping() -> :bool"


def test_name_keyword_overrides_and_with_name() -> None:
    sig = parse("(q :string) -> :int", name="find")
    assert sig.render() == "find(q :string) -> :int"
    assert sig.with_name(None).render() == "(q :string) -> :int"
    with pytest.raises(SignatureError, match="not a name"):
        sig.with_name("two words")


def test_parse_returns_signature_unchanged() -> None:
    sig = parse("{a :int}")
    assert parse(sig) is sig


def test_whitespace_and_newlines_are_free() -> None:
    assert parse("  ( a  :int ,\n b :string? )\n->\n  [ :int ]  ") == parse(
        "(a :int, b :string?) -> [:int]"
    )


def test_firewalled_fields() -> None:
    sig = parse("{summary :string, count :int, _email_ids [:int]}")
    assert isinstance(sig.output, Fields)
    assert [f.firewalled for f in sig.output.fields] == [False, False, True]


def test_names_may_hold_hyphens_underscores_digits() -> None:
    sig = parse("(user-name :string, user_2 :int, _x :any) -> :any")
    assert [p.name for p in sig.params] == ["user-name", "user_2", "_x"]


def test_deep_nesting_within_limit() -> None:
    text = "[" * MAX_DEPTH + ":int" + "]" * MAX_DEPTH
    assert parse(text).render() == text


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment", "position"),
    [
        ("[]", "list of what? use [:any]", 1),
        ("[ ]", "list of what? use [:any]", 2),
        ("{id}", "field id needs a type", 3),
        ("(query) -> :int", "parameter query needs a type", 6),
        (":integer", "write :int", 0),
        (":String", "lower case, write :string", 0),
        (":strng", "did you mean :string?", 0),
        (":number", "write :float", 0),
        (":", "expected a type name after ':'", 1),
        ("int", "types start with a colon: write :int", 0),
        ("{id int}", "types start with a colon: write :int", 4),
        ("(a :int", "expected ) to close the parameters", 7),
        ("{a :int", "expected } to close the map", 7),
        ("[:int", "expected ] to close the list", 5),
        ("[:int :string]", "a list has one item type", 6),
        ("(a :int) :int", "expected -> and the output type", 9),
        ("(a :int) ->", "expected the output type after ->", 11),
        ("{a :int} extra", "after the end of the signature", 9),
        ("{a :int, a :string}", "duplicate field 'a'", 9),
        ("(a :int, a :int) -> :any", "duplicate parameter 'a'", 9),
        ("{email? :string}", "put ? after the type", 6),
        ("{1a :int}", "must start with a letter or _", 1),
        ("(status :enum[pending active closed]) -> {ok :bool}", "not supported yet", 8),
        ("(value :string|:int) -> {result :any}", "union types", 14),
        ("(page :int[>0]) -> [{id :int}]", "refinements", 10),
        ("a :int -> :int", "a signature is (inputs) -> output", 0),
        ("-> :int", "expected a type", 0),
        ("{:int :string} -> :int", "inputs go in parentheses", 15),
        ("((a :int)) -> :any", "expected a parameter name", 1),
        ('"x"', "expected a type", 0),
    ],
)
def test_errors_name_the_problem_and_point_at_it(text: str, fragment: str, position: int) -> None:
    with pytest.raises(SignatureError) as info:
        parse(text)
    error = info.value
    assert fragment in str(error)
    assert error.position == position
    assert error.text == text
    assert "^" in str(error)


def test_caret_sits_under_the_position() -> None:
    with pytest.raises(SignatureError) as info:
        parse("{id :int, name :strin}")
    lines = str(info.value).splitlines()
    source, caret = lines[-2], lines[-1]
    assert source == "  {id :int, name :strin}"
    assert caret.index("^") == source.index(":strin")


def test_multiline_errors_name_line_and_column() -> None:
    with pytest.raises(SignatureError) as info:
        parse("(a :int,\n b) -> :int")
    assert "line 2, column 3" in str(info.value)


def test_too_deep_nesting_is_a_signature_error() -> None:
    with pytest.raises(SignatureError, match="nest deeper"):
        parse("[" * (MAX_DEPTH + 5) + ":int" + "]" * (MAX_DEPTH + 5))
    with pytest.raises(SignatureError):
        parse("{a " * 5000)


@pytest.mark.parametrize("bad", [None, 42, b"{a :int}", ["(a :int) -> :int"]])
def test_non_string_input_is_a_signature_error(bad: object) -> None:
    with pytest.raises(SignatureError, match="must be a string"):
        parse(bad)  # type: ignore[arg-type]


def test_parse_type_rejects_signatures_and_trailing_text() -> None:
    with pytest.raises(SignatureError):
        parse_type("(a :int) -> :int")
    with pytest.raises(SignatureError, match="empty type"):
        parse_type("")
    with pytest.raises(SignatureError, match="after the end of the type"):
        parse_type(":int :int")


# -- properties -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(signatures)
def test_render_then_parse_round_trips(sig: Signature) -> None:
    text = sig.render()
    assert parse(text) == sig
    assert parse(text).render() == text


@settings(max_examples=200, deadline=None)
@given(types)
def test_types_round_trip(node: object) -> None:
    from ptcflow.signature import render_type

    assert parse_type(render_type(node)) == node  # type: ignore[arg-type]


_ALPHABET = st.sampled_from(list("()[]{}:?,->_ abcdefgimnorstuy|\n\"'0123456789\\#^."))


@settings(max_examples=500, deadline=None)
@given(st.text(_ALPHABET, max_size=40) | st.text(max_size=30))
def test_parser_only_ever_raises_signature_error(text: str) -> None:
    try:
        sig = parse(text)
    except SignatureError as error:
        assert error.text == text
        assert error.position is not None and 0 <= error.position <= len(text)
    else:
        assert parse(sig.render()) == sig


@settings(max_examples=100, deadline=None)
@given(signatures)
def test_signatures_survive_json_encoding(sig: Signature) -> None:
    import msgspec

    assert msgspec.json.decode(msgspec.json.encode(sig), type=Signature) == sig


def test_parse_is_cached_by_text() -> None:
    text = "(cache_probe :int) -> {x :string}"
    assert parse(text) is parse(text)


def test_names_may_use_non_ascii_letters() -> None:
    sig = parse("(größe :int, 名前 :string) -> {résumé :string}")
    assert [p.name for p in sig.params] == ["größe", "名前"]
    assert parse(sig.render()) == sig
    with pytest.raises(SignatureError, match="must start with a letter or _"):
        parse("{1x :int}")
