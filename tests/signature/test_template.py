"""Templates: the placeholder table, sections, rendering, and checks against signatures."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.signature import SignatureError, Template, check_placeholders, parse


class Keyword:
    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyword) and other.name == self.name


# -- the placeholder syntax table -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("{{name}}", ("name",)),
        ("{{user.name}}", ("user", "name")),
        ("{{user.address.city}}", ("user", "address", "city")),
        ("{{user-name}}", ("user-name",)),
        ("{{user_name}}", ("user_name",)),
        ("{{ name }}", ("name",)),
        ("{{\tuser . name\n}}", ("user", "name")),
    ],
)
def test_valid_placeholders(text: str, path: tuple[str, ...]) -> None:
    assert Template(text).placeholders == (path,)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{{123}}", "names must start with a letter"),
        ("{{}}", "empty placeholder"),
        ("{{   }}", "empty placeholder"),
        ("{{_x}}", "names must start with a letter"),
        ("{{a..b}}", "empty part"),
        ("{{a b}}", "names must start with a letter"),
        ("{{name", "unclosed {{"),
        ("{{a {{b}}", "cannot contain {{"),
        ("{{#items}}x", "never closed: add {{/items}}"),
        ("{{#a}}{{/b}}", "does not match the open section {{#a}}"),
        ("x{{/a}}", "never opened"),
        ("{{.}}", "only works inside"),
        ("{{#}}x{{/}}", "empty placeholder"),
    ],
)
def test_invalid_templates_raise_with_caret(text: str, fragment: str) -> None:
    with pytest.raises(SignatureError) as info:
        Template(text)
    assert fragment in str(info.value)
    assert info.value.text == text
    assert "^" in str(info.value)


def test_caret_points_at_the_bad_placeholder() -> None:
    with pytest.raises(SignatureError) as info:
        Template("Hello {{name}}, {{123}}!")
    assert info.value.position == 16


def test_escaped_braces_are_not_placeholders() -> None:
    # No escape syntax: backslashes stay text and nothing is a placeholder.
    template = Template(r"\{\{name\}\}")
    assert template.placeholders == ()
    assert template.render({}) == r"\{\{name\}\}"


def test_single_braces_are_text() -> None:
    assert Template("{a} } {").render({}) == "{a} } {"


# -- rendering ----------------------------------------------------------------------------


def test_render_simple_nested_and_trimmed() -> None:
    template = Template("Find emails for {{user.name}} about {{ topic }}")
    values = {"user": {"name": "Alice"}, "topic": "billing"}
    assert template.render(values) == "Find emails for Alice about billing"
    assert template.placeholders == (("user", "name"), ("topic",))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("s", "s"),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        (False, "false"),
        (None, ""),
        ([1, "a"], '[1,"a"]'),
        ({"a": 1}, '{"a":1}'),
        ({Keyword("a"): Keyword("b")}, '{"a":":b"}'),
        (Keyword("k"), ":k"),
    ],
)
def test_value_formatting(value: Any, text: str) -> None:
    assert Template("{{v}}").render({"v": value}) == text


def test_sections_iterate_lists() -> None:
    template = Template("{{#items}}[{{title}}]{{/items}}")
    assert template.render({"items": [{"title": "a"}, {"title": "b"}]}) == "[a][b]"


def test_empty_list_section_is_empty_string() -> None:
    assert Template("x{{#items}}[{{title}}]{{/items}}y").render({"items": []}) == "xy"


def test_section_over_map_scalar_and_falsy() -> None:
    template = Template("{{#user}}{{name}}{{/user}}")
    assert template.render({"user": {"name": "Ada"}}) == "Ada"
    assert template.render({"user": None}) == ""
    assert Template("{{#flag}}on{{/flag}}").render({"flag": True}) == "on"
    assert Template("{{#flag}}on{{/flag}}").render({"flag": False}) == ""


def test_inverted_sections() -> None:
    template = Template("{{#items}}{{.}},{{/items}}{{^items}}none{{/items}}")
    assert template.render({"items": []}) == "none"
    assert template.render({"items": ["a", "b"]}) == "a,b,"
    assert template.render({}, missing="empty") == "none"


def test_dot_and_outer_scope_inside_sections() -> None:
    template = Template("{{#tags}}{{prefix}}{{.}} {{/tags}}")
    assert template.render({"tags": ["a", "b"], "prefix": "#"}) == "#a #b "


def test_nested_sections() -> None:
    template = Template("{{#groups}}{{name}}:{{#members}}{{.}};{{/members}}|{{/groups}}")
    values = {"groups": [{"name": "x", "members": [1, 2]}, {"name": "y", "members": []}]}
    assert template.render(values) == "x:1;2;|y:|"


def test_keyword_and_colon_keys_are_looked_up() -> None:
    template = Template("{{user.name}} {{n}}")
    assert template.render({Keyword("user"): {":name": "Ada"}, "n": 1}) == "Ada 1"


def test_missing_values_raise_or_render_empty() -> None:
    template = Template("Hi {{user.name}}!")
    with pytest.raises(SignatureError, match=r"\{\{user.name\}\} has no value"):
        template.render({"user": {}})
    assert template.render({}, missing="empty") == "Hi !"


def test_template_value_semantics() -> None:
    assert Template("{{a}}") == Template("{{a}}")
    assert hash(Template("{{a}}")) == hash(Template("{{a}}"))
    assert Template("{{a}}") != Template("{{b}}")
    assert repr(Template("{{a}}")) == "Template('{{a}}')"


def test_non_string_template_is_rejected() -> None:
    with pytest.raises(SignatureError, match="must be a string"):
        Template(3)  # type: ignore[arg-type]


def test_placeholders_are_unique_and_include_sections() -> None:
    template = Template("{{a}}{{a}}{{#list}}{{.}}{{x.y}}{{/list}}")
    assert template.placeholders == (("a",), ("list",), ("x", "y"))


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("{}#/^. abc1_-\n")), max_size=30))
def test_template_parser_only_raises_signature_error(text: str) -> None:
    try:
        template = Template(text)
    except SignatureError as error:
        assert error.position is not None
    else:
        template.render({}, missing="empty")


# -- checking placeholders against signatures ----------------------------------------------


def test_spec_example_valid() -> None:
    assert check_placeholders("Hello {{name}}", "(name :string) -> {greeting :string}") == []


def test_spec_example_unknown_placeholder() -> None:
    assert check_placeholders("Hello {{unknown}}", "(name :string) -> {greeting :string}") == [
        "placeholder {{unknown}} not found in signature"
    ]


def test_nested_placeholders_match_fields() -> None:
    sig = "(user {name :string}, topic :string) -> {count :int}"
    assert check_placeholders("Find emails for {{user.name}} about {{topic}}", sig) == []
    assert check_placeholders("{{user.email}}", sig) == [
        "placeholder {{user.email}} not found in signature (user has fields: name)"
    ]
    assert check_placeholders("{{topic.length}}", sig) == [
        "placeholder {{topic.length}} not found in signature (topic has no fields)"
    ]


def test_llmtool_example() -> None:
    sig = parse("(email {:subject :string}, tier :string) -> {:urgent :bool, :reason :string}")
    assert (
        check_placeholders(Template("Is {{email.subject}} urgent for {{tier}} customer?"), sig)
        == []
    )


def test_maps_and_any_accept_any_nested_path() -> None:
    assert check_placeholders("{{m.a.b}} {{x.y}}", "(m :map, x :any) -> :any") == []


def test_lists_need_sections() -> None:
    sig = "(items [{title :string}]) -> :any"
    assert check_placeholders("{{items.title}}", sig) == [
        "placeholder {{items.title}}: items is a list; use a section {{#items}}...{{/items}}"
    ]
    assert check_placeholders("{{#items}}{{title}} {{.}}{{/items}}", sig) == []
    assert check_placeholders("{{#items}}{{nope}}{{/items}}", sig) == [
        "placeholder {{nope}} not found in signature"
    ]


def test_sections_see_outer_parameters_and_open_item_types() -> None:
    assert (
        check_placeholders(
            "{{#items}}{{prefix}}{{/items}}", "(items [{t :int}], prefix :string) -> :any"
        )
        == []
    )
    assert (
        check_placeholders("{{#rows}}{{anything.at.all}}{{/rows}}", "(rows [:map]) -> :any") == []
    )


def test_suggestion_for_a_near_miss() -> None:
    assert check_placeholders("{{usr_name}}", "(user_name :string) -> :any") == [
        "placeholder {{usr_name}} not found in signature (did you mean {{user_name}}?)"
    ]


def test_every_problem_is_listed_once() -> None:
    problems = check_placeholders("{{a}} {{b}} {{a}}", "(c :int) -> :any")
    assert problems == [
        "placeholder {{a}} not found in signature",
        "placeholder {{b}} not found in signature",
    ]


def test_malformed_template_is_reported_as_a_problem() -> None:
    problems = check_placeholders("{{123}}", "(a :int) -> :any")
    assert len(problems) == 1 and "names must start with a letter" in problems[0]


def test_invalid_signature_text_raises() -> None:
    with pytest.raises(SignatureError):
        check_placeholders("{{a}}", "[]")


def test_unprintable_values_do_not_crash_rendering() -> None:
    assert Template("{{n}}").render({"n": 10**5000}) == "<int>"


def test_non_ascii_placeholder_names() -> None:
    assert Template("{{größe}}").render({"größe": 3}) == "3"
    with pytest.raises(SignatureError, match="must start with a letter"):
        Template("{{_x}}")


def test_render_rejects_an_unknown_missing_policy() -> None:
    from ptcflow.errors import UsageError

    with pytest.raises(UsageError, match="missing must be"):
        Template("{{a}}").render({}, missing="skip")  # type: ignore[arg-type]
