"""Benchmark: one tool call from the runtime, ``call_tool`` against the ``dispatch`` path.

The call is the runtime benchmark's (``runtime_overhead.py``): the model asks for
``add(x=2, y=3)`` of ``async def add(x: int, y: int) -> int``. Two ways to run it, each as
the runtime's per-call function (tool lookup included, the argument dict built per call):

- **dispatch path**: what ``runtime/_toolbox.py``'s ``Toolbox.call`` did before
  ``call_tool`` existed (a ``ToolContext`` only for tools that take one, a ``ToolCall``,
  ``await dispatch(...)``, ``result.to_result()``), copied here so the baseline stays put
  when the runtime moves on;
- **call_tool**: ``tools.get(name)`` then ``await call_tool(tool, call_id, arguments, ...)``.

Each repeat times ``--number`` calls of each way in CPU time (``time.process_time``),
alternating which goes first; the figures are medians over ``--repeats``. Also timed, to show
they cost no more than before: a call that needs a coercion (``{"x": "2", "y": 3}``, the
general path); and two more fast-path shapes: a call leaving optional parameters out
(``search(query="q")``, returning a list) and a tool taking a ``ToolContext``.

Typed tools (``--typed``): ``ship(parcel) -> parcel`` with the parcel (an address, a
weight, a list of tags) typed four ways, each called through ``call_tool``: as a
``TypedDict`` (plain dicts in and out: the baseline), a dataclass, a ``msgspec.Struct``
and a pydantic model. Goal: the dataclass and the Struct cost at most 1.3x the plain dicts.
The pydantic tool is set beside what pydantic-ai does with the same model for one tool
call (its ``function_schema`` validator's ``validate_python`` on the arguments, the call,
and ``model_dump(mode="json")`` of the result), measured in a separate interpreter that has
pydantic-ai (``--peer-python``, default ``/tmp/pai/bin/python`` when it exists) with the
same number of calls; and, in this process, beside pydantic's own ``TypeAdapter``
``validate_python`` + ``model_dump`` of the same data (what pydantic-ai calls underneath).

Run:  .venv/bin/python bench/tool_call.py [--repeats 15] [--number 20000] [--backend trio]
      .venv/bin/python bench/tool_call.py --typed [--peer-python /tmp/pai/bin/python]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict

import anyio
import msgspec

from ptcflow.signals import Err, Ok
from ptcflow.tools import Tool, ToolCall, ToolContext, call_tool, dispatch, for_agent

GOAL = 0.40  # call_tool's CPU time as a share of the dispatch path's, at most


async def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


async def search(query: str, limit: int = 10, exact: bool = False) -> list[str]:
    """Search (a stand-in returning a list)."""
    return [query] * min(limit, 2)


async def whoami(ctx: ToolContext, prefix: str) -> str:
    """Say who is calling."""
    return prefix + ctx.run_id


Call = Callable[[str, Mapping[str, Any], str], Awaitable["Ok[Any] | Err"]]


def make_calls(tools: dict[str, Tool], limiter: anyio.CapacityLimiter) -> dict[str, Call]:
    context_names = frozenset(n for n, t in tools.items() if t.context_param is not None)

    async def via_dispatch(name: str, arguments: Mapping[str, Any], call_id: str) -> Any:
        context = None
        if name in context_names:
            context = ToolContext(
                run_id="run-1", call_id=call_id, tool_name=name, state=None, metadata={}
            )
        call = ToolCall(id=call_id, name=name, input=dict(arguments))
        result = await dispatch(tools, call, context=context, limiter=limiter)
        return result.to_result()

    async def via_call_tool(name: str, arguments: Mapping[str, Any], call_id: str) -> Any:
        found = tools.get(name)
        if found is None:  # unknown tools stay dispatch's job (the error lists the names)
            return await via_dispatch(name, arguments, call_id)
        context = None
        if found.context_param is not None:
            context = ToolContext(
                run_id="run-1", call_id=call_id, tool_name=name, state=None, metadata={}
            )
        return await call_tool(found, call_id, arguments, context=context, limiter=limiter)

    return {"dispatch": via_dispatch, "call_tool": via_call_tool}


async def time_one(call: Call, name: str, make_args: Callable[[], dict[str, Any]], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        await call(name, make_args(), "call_1")
    return (time.process_time() - start) / n * 1e6


SCENARIOS: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "add(x=2, y=3)": ("add", lambda: {"x": 2, "y": 3}),
    'add(x="2", y=3), coerced': ("add", lambda: {"x": "2", "y": 3}),
    'search(query="q"), defaults': ("search", lambda: {"query": "q"}),
    "whoami(prefix=...), ToolContext": ("whoami", lambda: {"prefix": "p"}),
}


async def main(repeats: int, number: int) -> dict[str, dict[str, float]]:
    tools = for_agent([add, search, whoami])
    calls = make_calls(tools, anyio.CapacityLimiter(40))
    for call in calls.values():  # the same answers, and warm caches
        assert await call("add", {"x": 2, "y": 3}, "c") == Ok(payload=5)
    medians: dict[str, dict[str, float]] = {}
    for label, (name, make_args) in SCENARIOS.items():
        samples: dict[str, list[float]] = {way: [] for way in calls}
        for r in range(repeats):
            order = list(calls) if r % 2 == 0 else list(reversed(calls))
            for way in order:
                samples[way].append(await time_one(calls[way], name, make_args, number))
        medians[label] = {way: statistics.median(s) for way, s in samples.items()}
    return medians


def report(medians: dict[str, dict[str, float]], backend: str) -> bool:
    print(f"CPU µs per call (median), backend {backend}")
    print(f"{'scenario':36} {'dispatch path':>14} {'call_tool':>10} {'ratio':>7}")
    for label, m in medians.items():
        ratio = m["call_tool"] / m["dispatch"]
        print(f"{label:36} {m['dispatch']:14.2f} {m['call_tool']:10.2f} {ratio:7.2f}")
    common = medians["add(x=2, y=3)"]
    ratio = common["call_tool"] / common["dispatch"]
    verdict = "PASS" if ratio <= GOAL else "MISS"
    print(f"add(x=2, y=3): call_tool / dispatch path = {ratio:.2f} (goal <= {GOAL:.2f}): {verdict}")
    return ratio <= GOAL


# -- typed tools ----------------------------------------------------------------------------

TYPED_GOAL = 1.3  # a dataclass or Struct tool's CPU time over the plain-dict tool's, at most


class AddressDict(TypedDict):
    city: str
    zip: str


class ParcelDict(TypedDict):
    to: AddressDict
    weight: int
    tags: list[str]


@dataclasses.dataclass
class AddressDC:
    city: str
    zip: str


@dataclasses.dataclass
class ParcelDC:
    to: AddressDC
    weight: int
    tags: list[str]


class AddressStruct(msgspec.Struct):
    city: str
    zip: str


class ParcelStruct(msgspec.Struct):
    to: AddressStruct
    weight: int
    tags: list[str]


async def ship_plain(parcel: ParcelDict) -> ParcelDict:
    """Ship a parcel (plain dicts)."""
    return parcel


async def ship_dataclass(parcel: ParcelDC) -> ParcelDC:
    """Ship a parcel (dataclasses)."""
    return parcel


async def ship_struct(parcel: ParcelStruct) -> ParcelStruct:
    """Ship a parcel (msgspec Structs)."""
    return parcel


PARCEL = {"to": {"city": "Oslo", "zip": "0150"}, "weight": 3, "tags": ["fragile", "urgent"]}

PEER = """
import asyncio, json, statistics, sys, time
import pydantic
from pydantic.json_schema import GenerateJsonSchema
from pydantic_ai._function_schema import function_schema

class Address(pydantic.BaseModel):
    city: str
    zip: str

class Parcel(pydantic.BaseModel):
    to: Address
    weight: int
    tags: list[str]

async def ship(parcel: Parcel) -> Parcel:
    return parcel

fs = function_schema(ship, GenerateJsonSchema)
PARCEL = json.loads(sys.argv[3])

async def one_call():
    args = fs.validator.validate_python({"parcel": PARCEL})
    out = await fs.call(args, None)
    return out.model_dump(mode="json")

async def main(repeats, number):
    assert await one_call() == PARCEL
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(number):
            await one_call()
        samples.append((time.process_time() - start) / number * 1e6)
    print(json.dumps({"us": statistics.median(samples)}))

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""


def _pydantic_tool() -> tuple[Tool, Callable[[], Any]]:
    """The pydantic tool, and the same work done by pydantic's TypeAdapter alone."""
    import pydantic

    class Address(pydantic.BaseModel):
        city: str
        zip: str

    class Parcel(pydantic.BaseModel):
        to: Address
        weight: int
        tags: list[str]

    async def ship_pydantic(parcel: Any) -> Any:
        """Ship a parcel (pydantic)."""
        return parcel

    ship_pydantic.__annotations__ = {"parcel": Parcel, "return": Parcel}
    adapter = pydantic.TypeAdapter(Parcel)

    def by_hand() -> Any:
        return adapter.validate_python(PARCEL).model_dump(mode="json")

    return Tool.from_function(ship_pydantic), by_hand


async def typed_main(repeats: int, number: int) -> dict[str, float]:
    tools = {
        "plain dicts (TypedDict)": Tool.from_function(ship_plain),
        "dataclass": Tool.from_function(ship_dataclass),
        "msgspec.Struct": Tool.from_function(ship_struct),
    }
    pydantic_tool, by_hand = _pydantic_tool()
    tools["pydantic model"] = pydantic_tool
    for t in tools.values():
        assert await call_tool(t, "c", {"parcel": PARCEL}) == Ok(payload=PARCEL), t
    samples: dict[str, list[float]] = {label: [] for label in [*tools, "TypeAdapter by hand"]}
    for r in range(repeats):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for label in order:
            t = tools[label]
            start = time.process_time()
            for _ in range(number):
                await call_tool(t, "call_1", {"parcel": dict(PARCEL)})
            samples[label].append((time.process_time() - start) / number * 1e6)
        start = time.process_time()
        for _ in range(number):
            by_hand()
        samples["TypeAdapter by hand"].append((time.process_time() - start) / number * 1e6)
    return {label: statistics.median(s) for label, s in samples.items()}


def peer_figure(python: str, repeats: int, number: int) -> float | None:
    """pydantic-ai's µs per tool call, from the interpreter that has it (None: not there)."""
    if not python or not os.path.exists(python):
        return None
    out = subprocess.run(
        [python, "-c", PEER, str(repeats), str(number), json.dumps(PARCEL)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        print(f"pydantic-ai peer failed: {out.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return float(json.loads(out.stdout)["us"])


def typed_report(medians: dict[str, float], peer: float | None, backend: str) -> bool:
    base = medians["plain dicts (TypedDict)"]
    print(f"CPU µs per call_tool of ship(parcel) -> parcel (median), backend {backend}")
    for label, us in medians.items():
        print(f"{label:28} {us:8.2f}  ({us / base:4.2f}x plain dicts)")
    ok = True
    for label in ("dataclass", "msgspec.Struct"):
        ratio = medians[label] / base
        verdict = "PASS" if ratio <= TYPED_GOAL else "MISS"
        ok = ok and ratio <= TYPED_GOAL
        print(f"{label}: {ratio:.2f}x plain dicts (goal <= {TYPED_GOAL}): {verdict}")
    mine = medians["pydantic model"]
    if peer is not None:
        print(f"pydantic-ai, same model, one tool call (its interpreter): {peer:8.2f}")
        verdict = "PASS" if mine <= peer else "MISS"
        ok = ok and mine <= peer
        print(
            f"pydantic model: ptcflow {mine:.2f} vs pydantic-ai {peer:.2f} µs "
            f"({mine / peer:.2f}x): {verdict}"
        )
    else:
        print("pydantic-ai not available (--peer-python): compared with TypeAdapter only")
    hand = medians["TypeAdapter by hand"]
    print(
        f"pydantic model: ptcflow call_tool {mine:.2f} vs TypeAdapter validate+dump alone "
        f"{hand:.2f} µs (+{mine - hand:.2f} µs for the call, the signature check, the envelope)"
    )
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--typed", action="store_true", help="the typed-tool comparison")
    parser.add_argument("--peer-python", default="/tmp/pai/bin/python")
    args = parser.parse_args()
    if args.typed:
        typed = anyio.run(typed_main, args.repeats, args.number, backend=args.backend)
        peer = peer_figure(args.peer_python, args.repeats, args.number)
        raise SystemExit(0 if typed_report(typed, peer, args.backend) else 1)
    result = anyio.run(main, args.repeats, args.number, backend=args.backend)
    raise SystemExit(0 if report(result, args.backend) else 1)
