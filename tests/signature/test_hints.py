"""Types from Python hints and signatures from callables (the @spec mapping table)."""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NewType, NotRequired, Optional, TypedDict

import msgspec
import pytest

from ptcflow.signature import (
    SignatureError,
    SignatureWarning,
    parse,
    parse_type,
    render_type,
    signature_from_callable,
    type_from_hint,
)


class Status(enum.Enum):
    PENDING = "pending"
    ACTIVE = "active"


class Address(TypedDict):
    city: str
    zip: NotRequired[str]


class Partial(TypedDict, total=False):
    a: int


class Owner(msgspec.Struct):
    id: int
    email: str | None = None


class Renamed(msgspec.Struct, rename="camel"):
    user_id: int


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list[str] = dataclasses.field(default_factory=list)


UserId = NewType("UserId", int)


@pytest.mark.parametrize(
    ("hint", "text"),
    [
        (str, ":string"),
        (int, ":int"),
        (float, ":float"),
        (bool, ":bool"),
        (Status, ":keyword"),
        (Literal["a", "b"], ":keyword"),
        (Literal[1, 2], ":int"),
        (Literal[True], ":bool"),
        (Literal["a", None], ":keyword?"),
        (dict, ":map"),
        (dict[str, int], ":map"),
        (Mapping[str, Any], ":map"),
        (typing.Dict[str, int], ":map"),  # noqa: UP006
        (list, "[:any]"),
        (list[int], "[:int]"),
        (typing.List[str], "[:string]"),  # noqa: UP006
        (tuple[int, ...], "[:int]"),
        (tuple[int, int], "[:int]"),
        (tuple[int, str], "[:any]"),
        (tuple, "[:any]"),
        (Sequence[str], "[:string]"),
        (set[int], "[:int]"),
        (frozenset[str], "[:string]"),
        (list[dict[str, Any]], "[:map]"),
        (Address, "{city :string, zip :string?}"),
        (Partial, "{a :int?}"),
        (Owner, "{id :int, email :string?}"),
        (Renamed, "{userId :int}"),
        (Point, "{x :float, y :float?, tags [:string]?}"),
        (int | None, ":int?"),
        (Optional[str], ":string?"),  # noqa: UP045
        (typing.Union[int, None], ":int?"),  # noqa: UP007
        (list[Owner] | None, "[{id :int, email :string?}]?"),
        (int | float, ":float"),
        (Any, ":any"),
        (object, ":any"),
        (None, ":any"),
        (Annotated[int, "meta"], ":int"),
        (UserId, ":int"),
        (typing.TypeVar("T"), ":any"),
        (typing.TypeVar("N", bound=int), ":int"),
    ],
)
def test_type_from_hint(hint: Any, text: str) -> None:
    node = type_from_hint(hint)
    assert render_type(node) == text
    assert parse_type(text) == node


class Recursive(TypedDict):
    children: list[Recursive]


class WeirdKeys(TypedDict):
    pass


WeirdKeysType = TypedDict("WeirdKeysType", {"user name": str})


@pytest.mark.parametrize(
    ("hint", "fragment"),
    [
        (complex, "complex"),
        (int | complex, "complex"),
        (Recursive, "refers to itself"),
        (WeirdKeysType, "'user name'"),
        ("int", "string annotation"),
        (typing.Callable[[int], int], "Callable"),
    ],
)
def test_unsupported_hints_name_the_hint(hint: Any, fragment: str) -> None:
    with pytest.raises(SignatureError) as info:
        type_from_hint(hint)
    assert fragment in str(info.value)
    assert "explicit signature" in str(info.value)


def search(query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Search for items."""
    return []


def test_signature_from_function() -> None:
    sig = signature_from_callable(search)
    assert sig.render() == "search(query :string, limit :int?) -> [:map]"
    assert sig.name == "search"
    assert sig.params[1].optional


def test_missing_hint_becomes_any_with_a_warning() -> None:
    def tool(a, b: int):  # type: ignore[no-untyped-def]
        return a

    with pytest.warns(SignatureWarning, match="parameter 'a'.*no type hint"):
        sig = signature_from_callable(tool)
    assert sig.render() == "tool(a :any, b :int) -> :any"


def test_varargs_are_skipped_and_lambdas_unnamed() -> None:
    def tool(x: int, *args: int, **kwargs: Any) -> bool:
        return True

    assert signature_from_callable(tool).render() == "tool(x :int) -> :bool"
    assert signature_from_callable(lambda: 1).render() == ":any"


def test_async_functions_methods_and_callable_objects() -> None:
    async def fetch(url: str) -> Owner:
        return Owner(id=1)

    class Service:
        def lookup(self, user_id: UserId) -> Status:
            return Status.ACTIVE

        def __call__(self, n: int) -> int:
            return n

    assert (
        signature_from_callable(fetch).render() == "fetch(url :string) -> {id :int, email :string?}"
    )
    assert signature_from_callable(Service().lookup).render() == "lookup(user_id :int) -> :keyword"
    assert signature_from_callable(Service()).render() == "(n :int) -> :int"


def test_unresolvable_annotations_raise_signature_error() -> None:
    def tool(x: NotDefinedAnywhere) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 1

    with pytest.raises(SignatureError, match="cannot resolve the type hints of"):
        signature_from_callable(tool)


def test_unsupported_parameter_hint_raises() -> None:
    def tool(data: complex) -> int:
        return 1

    with pytest.raises(SignatureError, match="unsupported type hint complex"):
        signature_from_callable(tool)


def test_none_return_and_optional_params() -> None:
    def tool(a: int | None, b: str | None = None) -> None:
        return None

    sig = signature_from_callable(tool)
    assert sig.render() == "tool(a :int?, b :string?) -> :any"
    assert parse(sig.render()) == sig


def test_inferred_signatures_validate() -> None:
    sig = signature_from_callable(search)
    assert sig.validate_input({"query": "x", "limit": "5"}).value == {"query": "x", "limit": 5}
    assert sig.validate_output([{"id": 1}]).ok


def test_partials_use_the_wrapped_functions_hints() -> None:
    import functools

    def tool(a: int, b: str) -> bool:
        return True

    assert signature_from_callable(functools.partial(tool, 1)).render() == "(b :string) -> :bool"


def test_decorated_functions_keep_their_hints() -> None:
    import functools

    def deco(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @deco
    def tool(a: int) -> str:
        return ""

    assert signature_from_callable(tool).render() == "tool(a :int) -> :string"


def test_objects_without_a_signature_raise() -> None:
    with pytest.raises(SignatureError, match="cannot read the signature"):
        signature_from_callable(3)  # type: ignore[arg-type]


def test_non_ascii_parameter_names() -> None:
    def tool(größe: int) -> str:
        return ""

    assert signature_from_callable(tool).render() == "tool(größe :int) -> :string"
