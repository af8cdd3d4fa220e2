"""Building tools from functions: names, docs, schemas from hints, overrides, options."""

from __future__ import annotations

import dataclasses
import enum
import functools
import warnings
from typing import Any, Literal, TypedDict

import msgspec
import pytest

from ptcflow.errors import UsageError
from ptcflow.signature import SignatureError, SignatureWarning, parse
from ptcflow.tools import Tool, ToolContext, ToolDefinition, schema_from_function, tool


def add(x: int, y: int) -> int:
    """Add two integers and return the sum."""
    return x + y


def search(query: str, limit: int) -> list[str]:
    return [query] * limit


def search_docs(query: str, limit: int) -> list[str]:
    """Search project documentation.

    Args:
        query: words to look for.
        limit: at most this many results.

    Returns:
        Matching page titles.
    """
    return []


class Color(enum.Enum):
    RED = "red"


class Point(msgspec.Struct):
    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float


class Movie(TypedDict):
    title: str
    year: int


# -- the seed's examples ------------------------------------------------------------------


def test_seed_from_fn_defaults() -> None:
    t1 = Tool.from_function(add)
    assert t1.name == "add"
    assert t1.fn is add
    assert t1.description == "Add two integers and return the sum."
    assert t1.input_schema == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    assert t1.pass_input is False


def test_seed_from_fn_overrides() -> None:
    t2 = Tool.from_function(
        add, name="add-numbers", description="Add two integers and return the sum."
    )
    assert t2.name == "add-numbers"
    assert t2.description == "Add two integers and return the sum."
    assert t2.definition.name == "add-numbers"


def test_seed_schema_from_fn() -> None:
    t = Tool.from_function(search)
    assert t.definition == ToolDefinition(
        name="search",
        description="",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query", "limit"],
        },
        output_schema={"type": "array", "items": {"type": "string"}},
    )


def test_seed_schema_from_fn_dict() -> None:
    assert schema_from_function(search) == {
        "name": "search",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query", "limit"],
        },
        "output_schema": {"type": "array", "items": {"type": "string"}},
    }
    assert schema_from_function(add)["description"] == "Add two integers and return the sum."

    def untyped_return(x: int):  # type: ignore[no-untyped-def]
        return x

    assert set(schema_from_function(untyped_return)) == {"name", "input_schema"}


def test_seed_tool_type_example_description_from_doc() -> None:
    t = Tool.from_function(search_docs)
    assert t.name == "search_docs"
    assert t.description == "Search project documentation."
    assert t.input_schema["properties"]["query"] == {
        "type": "string",
        "description": "words to look for.",
    }
    assert t.input_schema["properties"]["limit"]["description"] == "at most this many results."
    assert t.output_schema == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Matching page titles.",
    }


def test_seed_tool_built_directly_with_schema() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    web = Tool("web", search, input_schema=schema)
    assert web.name == "web"
    assert web.input_schema == schema
    assert web.output_schema is None
    assert str(web.signature) == "(query :string?) -> :any", "derived from the schema"


def test_signature_derived_from_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": ["integer", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filter": {
                "type": "object",
                "properties": {"year": {"type": "number"}, "exact": {"type": "boolean"}},
                "required": ["year"],
            },
            "extra": {"type": "object"},
            "choice": {"enum": ["a", "b"]},
            "either": {"type": ["string", "integer"]},
        },
        "required": ["q", "tags", "filter", "choice", "either"],
    }
    t = Tool("mcp", search, input_schema=schema, output_schema={"type": "integer"}, pass_input=True)
    assert str(t.signature) == (
        "(q :string, n :int?, tags [:string], filter {year :float, exact :bool?}, "
        "extra :map?, choice :any, either :any) -> :int"
    )
    assert t.input_schema == schema, "the given schema is what the model sees"
    assert Tool("opaque", search, input_schema={"type": "object"}).signature is None
    weird = Tool("weird", search, input_schema={"properties": {1: {"type": "string"}}})
    assert weird.signature is None


def test_replace_rederives_a_schema_signature() -> None:
    t = Tool(
        "web", search, input_schema={"type": "object", "properties": {"q": {"type": "string"}}}
    )
    swapped = t.replace(input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    assert str(swapped.signature) == "(n :int?) -> :any"
    explicit = Tool("typed", search, signature="(query :string, limit :int) -> [:string]")
    assert explicit.replace(description="x").signature == explicit.signature


# -- the decorator forms ------------------------------------------------------------------


def test_decorator_forms() -> None:
    @tool
    def a(x: int) -> int:
        return x

    @tool(name="bee", timeout_ms=500, max_retries=2)
    def b(x: int) -> int:
        return x

    c = tool(add, description="sum")
    assert (a.name, b.name, c.name) == ("a", "bee", "add")
    assert (b.timeout_ms, b.max_retries) == (500, 2)
    assert (a.timeout_ms, a.max_retries) == (None, None)
    assert c.description == "sum"
    assert a(4) == 4, "a decorated function stays callable"


def test_tool_of_a_tool_applies_overrides() -> None:
    base = tool(add)
    assert tool(base) is base
    renamed = tool(base, name="plus", pass_input=True, blocking=False)
    assert (renamed.name, renamed.pass_input, renamed.fn) == ("plus", True, add)
    assert (base.blocking, renamed.blocking) == (True, False)


# -- hints to schemas ----------------------------------------------------------------------


def hinted(
    s: str,
    i: int,
    f: float,
    b: bool,
    items: list[int],
    mapping: dict[str, Any],
    color: Color,
    mode: Literal["fast", "slow"],
    point: Point,
    box: Box,
    movie: Movie,
    maybe: str | None,
    anything: Any,
    limit: int = 10,
) -> dict[str, int]:
    return {}


def test_hint_mapping() -> None:
    t = Tool.from_function(hinted)
    assert t.signature is not None
    assert t.signature.render() == (
        "hinted(s :string, i :int, f :float, b :bool, items [:int], mapping :map, "
        "color :keyword, mode :keyword, point {x :int, y :int?}, box {width :float}, "
        "movie {title :string, year :int}, maybe :string?, anything :any, limit :int?) -> :map"
    )
    props = t.input_schema["properties"]
    assert props["limit"] == {"type": ["integer", "null"]}
    assert props["items"] == {"type": "array", "items": {"type": "integer"}}
    assert "limit" not in t.input_schema["required"]
    assert "maybe" not in t.input_schema["required"]
    assert t.output_schema == {"type": "object"}


def test_no_return_hint_means_no_output_schema() -> None:
    def f(x: int):  # type: ignore[no-untyped-def]
        return x

    assert tool(f).output_schema is None


def test_unhinted_parameters_become_any_with_a_warning() -> None:
    def f(x, y: int):  # type: ignore[no-untyped-def]
        return x

    with pytest.warns(SignatureWarning, match="'x' of tool 'f' has no type hint") as record:
        t = tool(f)
    assert record[0].filename == __file__, "the warning points at the user's code"
    assert t.signature is not None
    assert t.signature.render() == "f(x :any, y :int) -> :any"
    assert t.input_schema["properties"]["x"] == {}


def test_unsupported_hint_names_the_tool_and_parameter() -> None:
    def f(x: complex) -> int:
        return 1

    with pytest.raises(SignatureError, match="tool 'f', x: unsupported type hint"):
        tool(f)


def test_unresolvable_string_hint_is_a_usage_error() -> None:
    def f(x: NotDefinedAnywhere) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 1

    with pytest.raises(UsageError, match="cannot resolve the type hints of 'f'"):
        tool(f)


def test_explicit_signature_overrides_hints() -> None:
    def f(query, limit=5):  # type: ignore[no-untyped-def]
        return []

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = tool(f, signature="(query :string, limit :int?) -> [{id :int}]")
    assert t.signature is not None
    assert t.signature.render() == "f(query :string, limit :int?) -> [{id :int}]"
    assert t.output_schema == {
        "type": "array",
        "items": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    }


def test_explicit_signature_must_match_the_function() -> None:
    with pytest.raises(UsageError, match="declares 'z' but the function takes"):
        tool(add, signature="(x :int, z :int) -> :int")
    with pytest.raises(UsageError, match="requires 'y' but the signature does not declare it"):
        tool(add, signature="(x :int) -> :int")

    def kw(**options: Any) -> int:
        return 0

    assert tool(kw, signature="(anything :int) -> :int").signature is not None


def test_bad_signature_text_is_a_signature_error() -> None:
    with pytest.raises(SignatureError):
        tool(add, signature="(x :int")


def test_signature_object_accepted() -> None:
    t = Tool("adder", add, signature=parse("(x :int, y :int) -> :int"))
    assert t.input_schema["required"] == ["x", "y"]
    assert t.output_schema == {"type": "integer"}


# -- kinds of callables --------------------------------------------------------------------


def test_partial_hides_bound_arguments() -> None:
    t = tool(functools.partial(search, limit=3))
    assert t.name == "search"
    assert t.input_schema["required"] == ["query"]
    assert "limit" in t.input_schema["properties"], "keyword-bound args stay overridable"
    assert t.is_async is False


class Searcher:
    """Search the catalog."""

    def __call__(self, query: str) -> list[str]:
        return [query]


class AsyncSearcher:
    async def __call__(self, query: str) -> list[str]:
        """Search asynchronously."""
        return [query]


class Calendar:
    def book(self, day: str) -> bool:
        """Book a day."""
        return True


def test_callable_objects_and_methods() -> None:
    sync = tool(Searcher())
    assert (sync.name, sync.description, sync.is_async) == (
        "Searcher",
        "Search the catalog.",
        False,
    )
    assert sync.input_schema["required"] == ["query"]
    asynchronous = tool(AsyncSearcher())
    assert (asynchronous.is_async, asynchronous.description) == (True, "Search asynchronously.")
    method = tool(Calendar().book)
    assert (method.name, method.description) == ("Calendar_book", "Book a day.")
    assert method.input_schema["required"] == ["day"]


def test_async_functions_and_partials_of_them() -> None:
    async def fetch(url: str) -> str:
        return url

    assert tool(fetch).is_async is True
    assert tool(functools.partial(fetch, url="x")).is_async is True


def test_nested_function_names_drop_locals() -> None:
    def outer() -> Tool:
        def inner(x: int) -> int:
            return x

        return tool(inner)

    assert outer().name == "inner"
    assert tool(lambda x: x, signature="(x :any) -> :any").name == "lambda_tool"


# -- the context parameter -----------------------------------------------------------------


def test_context_parameter_is_left_out_of_the_schema() -> None:
    def whoami(ctx: ToolContext, greeting: str) -> str:
        return greeting

    t = tool(whoami)
    assert t.context_param == "ctx"
    assert t.input_schema["properties"] == {"greeting": {"type": "string"}}
    assert t.signature is not None
    assert t.signature.render() == "whoami(greeting :string) -> :string"


def test_context_imported_locally_under_future_annotations() -> None:
    from ptcflow.tools import ToolContext as LocalContext

    def look(ctx: LocalContext, q: str) -> str:
        return q

    # an alias only bound inside the function cannot be resolved from the string
    with pytest.raises(UsageError, match="cannot resolve the type hints of 'look'"):
        tool(look)
    # the name ToolContext itself is resolved even when the module never imported it
    namespace: dict[str, Any] = {"__name__": "user_module"}
    source = (
        "from __future__ import annotations\n"
        "def make():\n"
        "    from ptcflow.tools import ToolContext\n"
        "    def look(ctx: ToolContext, q: str) -> str:\n"
        "        return q\n"
        "    return look\n"
    )
    exec(compile(source, "user_module.py", "exec"), namespace)
    assert "ToolContext" not in namespace
    built = tool(namespace["make"]())
    assert built.context_param == "ctx"
    assert built.input_schema["required"] == ["q"]


def test_two_context_parameters_are_refused() -> None:
    def f(a: ToolContext, b: ToolContext | None = None) -> None:
        return None

    with pytest.raises(UsageError, match="single ToolContext"):
        tool(f)


# -- validation of the tool itself ---------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "has space", "a.b", "x" * 65, "ünï"])
def test_invalid_names(bad: str) -> None:
    with pytest.raises(UsageError, match="invalid tool name"):
        tool(add, name=bad)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout_ms", 0),
        ("timeout_ms", -5),
        ("timeout_ms", 1.5),
        ("max_retries", -1),
        ("max_retries", True),
    ],
)
def test_invalid_options(option: str, value: Any) -> None:
    with pytest.raises(UsageError, match=option):
        tool(add, **{option: value})


def test_not_callable() -> None:
    with pytest.raises(UsageError, match="needs a callable"):
        Tool("x", 42)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="signature must be a string or a Signature"):
        Tool("x", add, signature=3)  # type: ignore[arg-type]


def test_immutable_and_replace() -> None:
    t = tool(add)
    with pytest.raises(AttributeError, match="immutable"):
        t.name = "other"
    with pytest.raises(AttributeError):
        del t.name
    renamed = t.replace(name="plus", timeout_ms=100)
    assert (renamed.name, renamed.timeout_ms, t.name) == ("plus", 100, "add")
    retyped = t.replace(signature="(x :int, y :int) -> :string")
    assert retyped.output_schema == {"type": "string"}
    assert t.replace() == t
    assert t != renamed
    assert (t == 3) is False
    assert hash(t) == hash(t.replace())
    with pytest.raises(UsageError, match="unknown fields"):
        t.replace(colour="red")


def test_repr_and_definition_encodes() -> None:
    t = tool(add)
    assert repr(t) == "Tool(name='add', signature='(x :int, y :int) -> :int')"
    encoded = msgspec.json.decode(msgspec.json.encode(t.definition))
    assert encoded["name"] == "add"
    assert encoded["output_schema"] == {"type": "integer"}


def test_builtin_without_signature_still_builds_with_explicit_schema() -> None:
    t = Tool("length", len, input_schema={"type": "object"})
    assert t.context_param is None
