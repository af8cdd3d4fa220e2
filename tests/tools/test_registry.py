"""for_agent normalization and errors, find_by_name, ToolSource."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from ptcflow.errors import UsageError
from ptcflow.tools import RESERVED_TOOL_NAMES, Tool, ToolSource, find_by_name, for_agent, tool


def search(query: str) -> list[str]:
    """Search things."""
    return [query]


def add(x: int, y: int) -> int:
    return x + y


class Toolkit:
    def __init__(self, *tools: Tool) -> None:
        self.tools = tools

    def ptcflow_tools(self) -> Iterable[Tool]:
        return self.tools


def test_seed_for_agent_mixes_functions_and_tools() -> None:
    web_tool = Tool("web", search, input_schema={"type": "object"})
    tools = for_agent([search, web_tool])
    assert list(tools) == ["search", "web"]
    assert tools["search"].fn is search
    assert tools["web"] is web_tool


def test_pair_entry_named_after_function_collides_with_plain_entry() -> None:
    with pytest.raises(
        UsageError,
        match=r"tools\[1\]: duplicate tool name 'add' \(already registered by tools\[0\]\)",
    ):
        for_agent([add, (add, "(x :int, y :int) -> :int")])


def test_formats_produce_the_expected_names_and_signatures() -> None:
    kit = Toolkit(tool(add, name="kit_add"), tool(search, name="kit_search"))
    tools = for_agent(
        [
            search,
            {"get_user": search, "plus": tool(add), "typed": (add, "(x :int, y :int) -> :string")},
            kit,
            {"solo": Toolkit(tool(add))},
        ]
    )
    assert list(tools) == ["search", "get_user", "plus", "typed", "kit_add", "kit_search", "solo"]
    assert tools["plus"].fn is add
    typed = tools["typed"].signature
    assert typed is not None and typed.render() == "typed(x :int, y :int) -> :string"
    assert tools["solo"].name == "solo"
    assert isinstance(kit, ToolSource)
    assert not isinstance(search, ToolSource)


def test_single_mapping_and_single_entries_and_none() -> None:
    assert list(for_agent({"find": search, "sum": add})) == ["find", "sum"]
    assert list(for_agent(None)) == []
    assert list(for_agent([])) == []
    assert list(for_agent(search)) == ["search"]
    assert list(for_agent((add, "(x :int, y :int) -> :int"))) == ["add"]
    assert list(for_agent((search, add))) == ["search", "add"]


@pytest.mark.parametrize("reserved", sorted(RESERVED_TOOL_NAMES))
def test_reserved_names_are_refused(reserved: str) -> None:
    with pytest.raises(UsageError, match=f"the tool name '{reserved}' is reserved"):
        for_agent([{reserved: search}])
    with pytest.raises(UsageError, match="rename your tool"):
        for_agent([tool(search, name=reserved)])


def test_duplicates_are_refused_with_both_places() -> None:
    with pytest.raises(UsageError, match=r"tools\[1\]\['search'\]: duplicate tool name 'search'"):
        for_agent([search, {"search": add}])


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (42, "cannot make a tool from 42"),
        ((search, 3), "a tuple entry must be"),
        ((search, "(query :string) -> :any", "extra"), "a tuple entry must be"),
        ({3: search}, "tool names must be strings"),
    ],
)
def test_bad_entries(entry: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        for_agent([entry])


def test_bad_tool_sources() -> None:
    class Broken:
        def ptcflow_tools(self) -> Iterable[object]:
            return [search]

    with pytest.raises(UsageError, match=r"Broken.ptcflow_tools\(\) must yield Tool objects"):
        for_agent([Broken()])
    with pytest.raises(UsageError, match="provides 2 tools, so it cannot be registered"):
        for_agent([{"both": Toolkit(tool(add), tool(search))}])


def test_find_by_name() -> None:
    tools = for_agent([search, add])
    assert find_by_name(tools, "add") is tools["add"]
    assert find_by_name(list(tools.values()), "search") is tools["search"]
    assert find_by_name(tools, "missing") is None
    assert find_by_name([], "missing") is None
    # a mapping whose keys disagree with tool names is searched by Tool.name
    assert find_by_name({"alias": tools["add"]}, "add") is tools["add"]
    assert find_by_name({"alias": tools["add"]}, "alias") is None
