"""The prompt catalog and native tool definitions."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from ptcflow.tools import (
    Tool,
    ToolDefinition,
    for_agent,
    render_tool_catalog,
    render_tool_signature,
    tool,
    tool_definitions,
)


def search(query: str, limit: int) -> list[dict[str, Any]]:
    """Search for items matching query.

    Results are ranked.
    """
    return []


def get_user(id: int) -> dict[str, Any]:
    """Fetch user by ID. Email may be null."""
    return {}


def test_catalog_matches_the_spec_layout() -> None:
    tools = for_agent(
        [
            (search, "(query :string, limit :int) -> [{id :int, title :string}]"),
            (get_user, "(id :int) -> {name :string, email :string?}"),
        ]
    )
    assert render_tool_catalog(tools) == (
        "## Tools you can call\n"
        "\n"
        "- search(query :string, limit :int) -> [{id :int, title :string}]\n"
        "  Search for items matching query.\n"
        "- get_user(id :int) -> {name :string, email :string?}\n"
        "  Fetch user by ID. Email may be null."
    )


def test_catalog_of_nothing_is_empty_and_title_is_configurable() -> None:
    assert render_tool_catalog({}) == ""
    text = render_tool_catalog([tool(get_user)], title="Tools for planning (do not call)")
    assert text.startswith("## Tools for planning (do not call)\n\n- get_user(id :int) -> :map")


def test_multi_line_descriptions_are_indented_and_firewalled_output_hidden() -> None:
    t = tool(
        get_user,
        description="Line one.\nLine two.",
        signature="(id :int) -> {name :string, _secret :string}",
    )
    assert render_tool_catalog([t]).splitlines()[2:] == [
        "- get_user(id :int) -> {name :string, _secret <Firewalled>}",
        "  Line one.",
        "  Line two.",
    ]


def test_tools_without_a_signature_render_from_their_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": ["integer", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filters": {"type": "object", "properties": {"year": {"type": "number"}}},
            "extra": {"type": "object"},
            "flag": {"type": "boolean"},
            "other": {"anyOf": []},
        },
        "required": ["q", "tags", "filters", "flag"],
    }
    output = {
        "type": "array",
        "items": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    }
    t = Tool("mcp_search", search, input_schema=schema, output_schema=output)
    assert render_tool_signature(t) == (
        "mcp_search(q :string, n :int?, tags [:string], filters {year :float?}, "
        "extra :map?, flag :bool, other :any?) -> [{id :int}]"
    )
    assert render_tool_signature(Tool("bare", search)) == "bare() -> :any"
    opaque = Tool(
        "opaque", search, input_schema={"type": "object"}, output_schema={"type": "string"}
    )
    assert opaque.signature is None
    assert render_tool_signature(opaque) == "opaque() -> :string"


def test_tool_definitions_in_order() -> None:
    tools = for_agent([search, get_user])
    defs = tool_definitions(tools)
    assert [d.name for d in defs] == ["search", "get_user"]
    assert defs[0] == tools["search"].definition
    assert isinstance(defs[1], ToolDefinition)
    assert defs[1].description == "Fetch user by ID. Email may be null."
    assert tool_definitions(list(tools.values())) == defs


_schemas = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(
                [
                    "string",
                    "integer",
                    "number",
                    "boolean",
                    "null",
                    "array",
                    "object",
                    ["string", "null"],
                    3,
                ]
            ),
            "required": st.lists(st.text(max_size=3), max_size=2) | st.integers(),
        },
    ),
    lambda inner: st.fixed_dictionaries(
        {"type": st.sampled_from(["object", "array"])},
        optional={
            "properties": st.dictionaries(st.text(max_size=3), inner, max_size=3),
            "items": inner,
            "required": st.lists(st.text(max_size=3), max_size=3),
        },
    ),
    max_leaves=8,
)


@given(_schemas, st.none() | _schemas)
def test_any_json_schema_gives_a_usable_tool(schema: dict[str, Any], output: Any) -> None:
    built = Tool("t", search, input_schema=schema, output_schema=output, pass_input=True)
    assert render_tool_signature(built).startswith("t(")
    if built.signature is not None:
        built.signature.validate_input({})  # never raises
