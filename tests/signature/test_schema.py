"""JSON Schema export."""

from __future__ import annotations

from typing import Any

import pytest

from ptcflow.signature import parse, parse_type
from ptcflow.signature._schema import type_schema


@pytest.mark.parametrize(
    ("text", "schema"),
    [
        (":string", {"type": "string"}),
        (":int", {"type": "integer"}),
        (":float", {"type": "number"}),
        (":bool", {"type": "boolean"}),
        (":keyword", {"type": "string", "description": "keyword"}),
        (":any", {}),
        (":any?", {}),
        (":map", {"type": "object"}),
        (":int?", {"type": ["integer", "null"]}),
        ("[:int]", {"type": "array", "items": {"type": "integer"}}),
        ("[:int]?", {"type": ["array", "null"], "items": {"type": "integer"}}),
        ("{}", {"type": "object", "properties": {}, "required": []}),
        (
            "{id :int, email :string?}",
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "email": {"type": ["string", "null"]}},
                "required": ["id"],
            },
        ),
    ],
)
def test_type_schemas(text: str, schema: dict[str, Any]) -> None:
    assert type_schema(parse_type(text)) == schema


def test_signature_json_schema() -> None:
    sig = parse("(query :string, limit :int?) -> [{id :int, title :string}]")
    assert sig.input_schema() == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
        "required": ["query"],
    }
    assert sig.output_schema() == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "title": {"type": "string"}},
            "required": ["id", "title"],
        },
    }
    assert sig.json_schema() == {"input": sig.input_schema(), "output": sig.output_schema()}


def test_no_params_gives_an_empty_object_schema() -> None:
    assert parse("{count :int}").input_schema() == {
        "type": "object",
        "properties": {},
        "required": [],
    }


def test_parent_view_drops_firewalled_fields_from_the_output_schema() -> None:
    sig = parse("{summary :string, _ids [:int]}")
    assert set(sig.output_schema()["properties"]) == {"summary", "_ids"}
    assert set(sig.output_schema(view="parent")["properties"]) == {"summary"}
