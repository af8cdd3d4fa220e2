"""Tools that take and return Python types: built from the model's plain arguments before
the call, dumped to plain data before the output check, described by formats."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import pathlib
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any, Literal, TypedDict

import msgspec
import pydantic
import pytest
from hypothesis import given, strategies as st

from ptcflow.errors import UsageError
from ptcflow.signals import Err, Ok
from ptcflow.signature import (
    ConversionError,
    Converter,
    SignatureError,
    format_notes,
    schema_from_hint,
    to_plain,
)
from ptcflow.tools import (
    Tool,
    ToolCall,
    call_tool,
    describe_tool,
    dispatch,
    dispatch_sync,
    render_tool_catalog,
    tool,
)

pytestmark = pytest.mark.anyio


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


@dataclasses.dataclass
class Address:
    city: str
    zip: str


class Parcel(msgspec.Struct):
    to: Address
    when: datetime.datetime
    size: Size = Size.SMALL
    tags: list[Literal["fragile", "urgent"]] = []


class Label(TypedDict):
    text: str
    copies: int


class Zip(pydantic.BaseModel):
    code: str

    @pydantic.field_validator("code")
    @classmethod
    def five_digits(cls, value: str) -> str:
        if len(value) != 5 or not value.isdigit():
            raise ValueError("a zip code has 5 digits")
        return value


class Customer(pydantic.BaseModel):
    name: str
    zip: Zip
    since: datetime.date | None = None


SEEN: list[Any] = []


@tool
def ship(parcel: Parcel, label: Label | None = None) -> Parcel:
    """Ship a parcel."""
    SEEN.append((parcel, label))
    return parcel


@tool
def register(customer: Customer) -> Customer:
    """Register a customer."""
    SEEN.append(customer)
    return customer


@tool
def stamp(
    at: datetime.datetime,
    day: datetime.date,
    hour: datetime.time,
    ref: uuid.UUID,
    amount: decimal.Decimal,
    path: pathlib.Path,
    blob: bytes,
) -> dict[str, Any]:
    """Stamp scalar types."""
    SEEN.append((at, day, hour, ref, amount, path, blob))
    return {"at": at, "day": day, "hour": hour, "ref": ref, "amount": amount, "blob": blob}


PARCEL = {"to": {"city": "Oslo", "zip": "0150"}, "when": "2026-05-01T09:30:00Z"}


async def test_a_struct_with_a_dataclass_inside_is_built_and_returned_as_plain_data(
    anyio_backend: str,
) -> None:
    SEEN.clear()
    result = await call_tool(ship, "c1", {"parcel": PARCEL})
    (parcel, label), *_ = SEEN
    assert isinstance(parcel, Parcel) and isinstance(parcel.to, Address)
    assert parcel.when == datetime.datetime(2026, 5, 1, 9, 30, tzinfo=datetime.UTC)
    assert parcel.size is Size.SMALL and label is None
    assert isinstance(result, Ok) and result.payload == {**PARCEL, "size": "small", "tags": []}


async def test_call_tool_and_dispatch_give_the_same_typed_result(anyio_backend: str) -> None:
    args = {"parcel": {**PARCEL, "tags": ["urgent"]}, "label": {"text": "Hi", "copies": "2"}}
    fast = await call_tool(ship, "c1", args)
    slow = await dispatch([ship], ToolCall(id="c1", name="ship", input=args))
    assert fast == slow.to_result()
    assert slow.warnings == ('label.copies: coerced string "2" to int',)
    sync = dispatch_sync([ship], ToolCall(id="c1", name="ship", input=args))
    assert sync.to_result() == fast


@pytest.mark.parametrize(
    ("parcel", "problem"),
    [
        ({**PARCEL, "to": {"city": "Oslo", "zip": 150}}, "parcel.to.zip: expected string, got int"),
        ({**PARCEL, "when": "next week"}, "parcel.when: expected an ISO 8601 date-time string"),
        ({**PARCEL, "size": "huge"}, "parcel.size: invalid enum value 'huge'"),
        ({**PARCEL, "tags": ["late"]}, "parcel.tags[0]: invalid enum value 'late'"),
    ],
)
async def test_a_value_that_does_not_fit_is_a_validation_error_naming_the_path(
    anyio_backend: str, parcel: dict[str, Any], problem: str
) -> None:
    SEEN.clear()
    result = await call_tool(ship, "c1", {"parcel": parcel})
    assert isinstance(result, Err) and result.error.type == "validation"
    assert isinstance(result, Err) and problem in result.error.message
    assert "expected ship(parcel {to {city :string" in result.error.message
    assert SEEN == []  # the function never ran


async def test_pydantic_models_are_validated_by_pydantic_and_validator_errors_reach_the_model(
    anyio_backend: str,
) -> None:
    SEEN.clear()
    ok = await call_tool(register, "c1", {"customer": {"name": "Ada", "zip": {"code": "01500"}}})
    assert isinstance(SEEN[0], Customer) and isinstance(SEEN[0].zip, Zip)
    assert isinstance(ok, Ok) and ok.payload == {
        "name": "Ada",
        "zip": {"code": "01500"},
        "since": None,
    }
    bad = await call_tool(register, "c2", {"customer": {"name": "Ada", "zip": {"code": "15"}}})
    assert isinstance(bad, Err) and bad.error.type == "validation"
    assert (
        isinstance(bad, Err) and "customer.zip.code: a zip code has 5 digits" in bad.error.message
    )


async def test_scalar_types_are_built_from_their_json_strings(anyio_backend: str) -> None:
    SEEN.clear()
    ref = uuid.UUID("6f1c1b9e-2c4e-4f6a-9a53-6d1e8f0b2a77")
    result = await call_tool(
        stamp,
        "c1",
        {
            "at": "2026-05-01T09:30:00Z",
            "day": "2026-05-01",
            "hour": "09:30:00",
            "ref": str(ref),
            "amount": "12.50",
            "path": "reports/q1.csv",
            "blob": "aGk=",
        },
    )
    at, day, hour, got_ref, amount, path, blob = SEEN[0]
    assert (day, hour, got_ref) == (datetime.date(2026, 5, 1), datetime.time(9, 30), ref)
    assert isinstance(at, datetime.datetime)
    assert (amount, path, blob) == (decimal.Decimal("12.50"), pathlib.Path("reports/q1.csv"), b"hi")
    assert isinstance(result, Ok) and result.payload == {
        "at": "2026-05-01T09:30:00Z",
        "day": "2026-05-01",
        "hour": "09:30:00",
        "ref": str(ref),
        "amount": "12.50",
        "blob": "aGk=",
    }


def test_schemas_and_the_prompt_say_what_the_model_must_send() -> None:
    props = stamp.input_schema["properties"]
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["ref"] == {"type": "string", "format": "uuid"}
    assert props["blob"] == {"type": "string", "contentEncoding": "base64"}
    parcel = ship.input_schema["properties"]["parcel"]["properties"]
    assert parcel["size"] == {"type": "string", "enum": ["small", "large"]}
    assert parcel["tags"]["items"]["enum"] == ["fragile", "urgent"]
    assert ship.output_schema is not None and ship.output_schema["properties"]["when"]["format"]
    text = render_tool_catalog([ship])
    assert "parcel.when: an ISO 8601 date-time string" in text
    assert 'parcel.size: one of "small", "large"' in text
    assert "result.when: an ISO 8601 date-time string" in text
    assert describe_tool(register).startswith("Register a customer.\ncustomer.since:")


async def test_a_tool_returning_a_dataclass_passes_its_output_check(anyio_backend: str) -> None:
    @tool
    def where(city: str) -> list[Address]:
        return [Address(city=city, zip="0150")]

    assert str(where.signature) == "where(city :string) -> [{city :string, zip :string}]"
    result = await call_tool(where, "c1", {"city": "Oslo"})
    assert isinstance(result, Ok) and result.payload == [{"city": "Oslo", "zip": "0150"}]


async def test_a_typed_return_of_the_wrong_shape_is_an_output_error(anyio_backend: str) -> None:
    @tool
    def broken(city: str) -> Address:
        return {"town": city}  # type: ignore[return-value]

    result = await call_tool(broken, "c1", {"city": "Oslo"})
    assert isinstance(result, Err) and result.error.type == "validation"
    assert isinstance(result, Err) and "does not match its declared output" in result.error.message


@dataclasses.dataclass
class Email:
    to: str


async def test_unions_of_records_are_checked_by_the_python_type(anyio_backend: str) -> None:
    @tool
    def send(target: Address | Email) -> str:
        return type(target).__name__

    assert "anyOf" in send.input_schema["properties"]["target"]
    assert await call_tool(send, "c1", {"target": {"to": "a@b"}}) == Ok(payload="Email")
    both = {"city": "O", "zip": "1"}
    assert await call_tool(send, "c2", {"target": both}) == Ok(payload="Address")


@pytest.mark.parametrize(
    ("hint", "says"),
    [
        (Callable[[int], int], "Callable"),
        (threading.Lock, "not a type"),
        (complex, "no JSON form"),
    ],
)
def test_a_type_with_no_json_form_is_refused_at_definition(hint: Any, says: str) -> None:
    def fn(x: Any) -> int:
        return 1

    fn.__annotations__ = {"x": hint, "return": int}
    with pytest.raises(SignatureError, match=f"tool 'fn', x: unsupported type hint.*{says}"):
        tool(fn)


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node]


def test_a_recursive_type_is_refused_at_definition() -> None:
    def walk(node: Node) -> int:
        return 1

    with pytest.raises(SignatureError, match="refers to itself"):
        tool(walk)


def test_the_conversion_is_decided_when_the_tool_is_built() -> None:
    plain = Tool.from_function(lambda x: x, signature="(x :int) -> :int")
    assert plain._types is None and ship._types is not None
    assert [name for name, _ in ship._types.inputs] == ["parcel"]
    assert ship._plan.accepts is None  # typed input never takes the unchecked fast path


def test_import_ptcflow_does_not_import_pydantic() -> None:
    code = "import ptcflow, ptcflow.tools, ptcflow.agent, sys; assert 'pydantic' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_format_notes_walk_nested_schemas() -> None:
    schema = schema_from_hint(list[Parcel])
    assert format_notes(schema, "parcels") == [
        'parcels[].when: an ISO 8601 date-time string, e.g. "2026-05-01T09:30:00Z"',
        'parcels[].size: one of "small", "large"',
        'parcels[].tags[]: one of "fragile", "urgent"',
    ]


def test_converter_errors_name_the_path_without_msgspec_markup() -> None:
    with pytest.raises(ConversionError) as info:
        Converter(list[Address]).load([{"city": "a", "zip": "1"}, {"city": 2, "zip": "1"}], "xs")
    assert (info.value.path, info.value.problem) == ("xs[1].city", "expected string, got int")


# -- round trips: to_builtins(convert(x)) == x for generated data --------------------------

_text = st.text(max_size=8)
_address = st.fixed_dictionaries({"city": _text, "zip": _text})
_when = st.datetimes(
    min_value=datetime.datetime(1970, 1, 1),
    max_value=datetime.datetime(2200, 1, 1),
    timezones=st.just(datetime.UTC),
).map(lambda d: d.isoformat().replace("+00:00", "Z"))
_parcel = st.fixed_dictionaries(
    {
        "to": _address,
        "when": _when,
        "size": st.sampled_from(["small", "large"]),
        "tags": st.lists(st.sampled_from(["fragile", "urgent"]), max_size=3),
    }
)
_customer = st.fixed_dictionaries(
    {
        "name": _text,
        "zip": st.fixed_dictionaries({"code": st.from_regex(r"\A[0-9]{5}\Z")}),
        "since": st.none() | st.dates().map(lambda d: d.isoformat()),
    }
)


@given(st.lists(_parcel, max_size=4))
def test_parcels_round_trip(data: list[dict[str, Any]]) -> None:
    conv = Converter(list[Parcel])
    assert conv.dump(conv.load(data)) == data


@given(_customer)
def test_pydantic_customers_round_trip(data: dict[str, Any]) -> None:
    conv = Converter(Customer)
    assert conv.dump(conv.load(data)) == data


@given(st.lists(st.fixed_dictionaries({"text": _text, "copies": st.integers()}), max_size=4))
def test_typeddicts_round_trip_unchanged(data: list[dict[str, Any]]) -> None:
    assert to_plain(Converter(list[Label]).load(data)) == data


@given(st.uuids(), st.decimals(allow_nan=False, allow_infinity=False, places=2))
def test_scalars_round_trip(ref: uuid.UUID, amount: decimal.Decimal) -> None:
    plain = [str(ref), str(amount)]
    conv = Converter(tuple[uuid.UUID, decimal.Decimal])
    assert list(conv.dump(conv.load(plain))) == plain  # msgspec keeps a tuple a tuple


def test_a_union_msgspec_cannot_tell_apart_inside_a_type_is_refused_at_definition() -> None:
    def send(targets: list[Address | Email]) -> int:
        return 1

    with pytest.raises(UsageError, match=r"cannot build .* tag=True"):
        tool(send)


@pytest.mark.parametrize(
    "args",
    [
        {"customer": {"name": "Ada", "zip": {"code": "01500"}}},
        {"customer": {"name": "Ada", "zip": {"code": "1"}}},
        {"customer": {"name": "Ada", "zip": {"code": "01500"}}, "extra": 1},
        {"customer": None},
        {},
    ],
)
@pytest.mark.parametrize("mode", ["enabled", "strict", "warn_only", "disabled"])
async def test_the_typed_fast_path_answers_as_dispatch_does(
    anyio_backend: str, args: dict[str, Any], mode: str
) -> None:
    fast = await call_tool(register, "c1", args, validation=mode)
    slow = await dispatch(
        [register], ToolCall(id="c1", name="register", input=args), validation=mode
    )
    assert fast == slow.to_result()
    if mode == "strict" and "extra" in args:
        assert isinstance(fast, Err) and "extra: unexpected argument" in fast.error.message


class Opaque:
    """A class ptcflow does not know how to build."""


async def test_a_class_it_cannot_build_reaches_the_function_as_sent(anyio_backend: str) -> None:
    def keep(x: Opaque) -> str:
        return type(x).__name__

    t = Tool.from_function(keep, signature="(x :map) -> :string")
    assert t._types is None
    assert await call_tool(t, "c1", {"x": {"a": 1}}) == Ok(payload="dict")
