"""Rendering: canonical text, names, shorthand, and the firewall views."""

from __future__ import annotations

import pytest

from ptcflow.errors import UsageError
from ptcflow.signature import parse, parse_type, render_type


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (
            "(query :string, limit :int) -> [{id :int, title :string}]",
            "(query :string, limit :int) -> [{id :int, title :string}]",
        ),
        (
            "search(query :string,limit :int)->[{id :int,title :string}]",
            "search(query :string, limit :int) -> [{id :int, title :string}]",
        ),
        (
            "get_user(id :int) -> {name :string, email :string?}",
            "get_user(id :int) -> {name :string, email :string?}",
        ),
        ("() -> {count :int}", "{count :int}"),
        ("{:id :int :name :string}", "{id :int, name :string}"),
        ("  :any  ", ":any"),
        ("() -> :any", ":any"),
        ("{}", "{}"),
        ("[{}]", "[{}]"),
        ("[ [ :int ] ]?", "[[:int]]?"),
        ("(user {:id :int}, limit :int) -> :any", "(user {id :int}, limit :int) -> :any"),
    ],
)
def test_canonical_render(text: str, canonical: str) -> None:
    assert parse(text).render() == canonical
    assert str(parse(text)) == canonical


def test_render_type() -> None:
    assert render_type(parse_type("{a [:int?]?, b {c :map}}")) == "{a [:int?]?, b {c :map}}"


FIREWALLED = "{summary :string, count :int, _email_ids [:int]}"


def test_full_view_shows_firewalled_fields() -> None:
    assert parse(FIREWALLED).render() == FIREWALLED


def test_prompt_view_masks_firewalled_fields() -> None:
    assert parse(FIREWALLED).render(view="prompt") == (
        "{summary :string, count :int, _email_ids <Firewalled>}"
    )


def test_parent_view_omits_firewalled_fields() -> None:
    assert parse("{summary :string, _raw_data [:map]}").render(view="parent") == "{summary :string}"


def test_views_apply_at_every_depth_of_the_output_but_not_to_params() -> None:
    sig = parse("(_token :string) -> [{a :int, inner {_b :int, c :int}}]")
    assert sig.render(view="parent") == "(_token :string) -> [{a :int, inner {c :int}}]"
    assert (
        sig.render(view="prompt")
        == "(_token :string) -> [{a :int, inner {_b <Firewalled>, c :int}}]"
    )


def test_unknown_view_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown view"):
        parse(":int").render(view="llm")  # type: ignore[arg-type]


def test_tool_schema_lines_from_the_spec() -> None:
    lines = [
        parse("(query :string, limit :int) -> [{id :int, title :string}]", name="search").render(),
        parse("(id :int) -> {name :string, email :string?}", name="get_user").render(),
    ]
    assert lines == [
        "search(query :string, limit :int) -> [{id :int, title :string}]",
        "get_user(id :int) -> {name :string, email :string?}",
    ]
