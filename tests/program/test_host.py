"""The program host is its own package: one options value, one return check, old names warn."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

import ptcflow.directives
from ptcflow import SubAgent
from ptcflow.directives import RunProgram
from ptcflow.errors import UsageError
from ptcflow.program import (
    ProgramCache,
    ProgramOptions,
    ProgramRouter,
    perform_program,
    plain_value,
)
from ptcflow.runtime import Runtime
from ptcflow.signals import Err, LLMResponse, Ok, ProgramToolCall
from ptcflow.strategies import PTC, JsonAgent, RunInfo
from ptcflow.testing import ScriptedLLM, SignalFactory

pytestmark = pytest.mark.anyio

SRC = Path(ptcflow.directives.__file__).parent


async def add(name: str, args: dict[str, Any], index: int) -> Ok[Any] | Err:
    await anyio.lowlevel.checkpoint()
    return Ok(payload=args["a"] + args["b"])


def program(**fields: Any) -> RunProgram:
    base: dict[str, Any] = {
        "id": "r1/program/1",
        "source": '(def s (call "add" {:a 1 :b 2}))\n(return {:sum s})',
        "tool_names": ("add",),
    }
    return RunProgram(**{**base, **fields})


@pytest.mark.parametrize(
    "name", ["perform_program", "plain_value", "ProgramCache", "ProgramRouter"]
)
def test_a_moved_name_still_resolves_in_directives_with_a_warning(name: str) -> None:
    import ptcflow.program

    with pytest.warns(DeprecationWarning, match=f"ptcflow.program.{name}"):
        old = getattr(ptcflow.directives, name)
    assert old is getattr(ptcflow.program, name)
    assert name not in ptcflow.directives.__all__


def test_directives_has_no_other_missing_name() -> None:
    with pytest.raises(AttributeError, match="no attribute 'run_program'"):
        getattr(ptcflow.directives, "run_program")  # noqa: B009


def test_the_directives_package_is_data_importing_no_host_and_no_interpreter() -> None:
    """Module-level imports of directives/ reach only errors and signals (RunProgram.problems
    asks lisp and signature for their vocabularies, inside the method)."""
    for path in sorted(SRC.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ptcflow"):
                assert (node.module or "").split(".")[1] in ("directives", "signals", "errors"), (
                    path.name,
                    node.module,
                )


async def test_options_and_keywords_run_the_same_program() -> None:
    seen: list[ProgramToolCall] = []
    by_keywords = await perform_program(program(), add, on_call=seen.append)
    cache = ProgramCache()
    by_options = await perform_program(
        program(), add, options=ProgramOptions(cache=cache, on_call=seen.append)
    )
    blank = {"duration_ms": 0.0, "tool_calls": ()}
    assert msgspec.structs.replace(by_keywords, **blank) == msgspec.structs.replace(
        by_options, **blank
    )
    assert [c.result for c in seen] == [Ok(payload=3), Ok(payload=3)]
    replayed = await perform_program(
        program(), None, options=ProgramOptions(replay=by_options.tool_calls)
    )
    assert replayed.value == {"sum": 3}


async def test_options_with_keywords_too_is_misuse() -> None:
    with pytest.raises(UsageError, match="one ProgramOptions"):
        await perform_program(program(), add, options=ProgramOptions(), cache=ProgramCache())


def test_a_router_is_any_async_callable_of_the_shape() -> None:
    router: ProgramRouter = add
    assert callable(router)


def test_plain_value_turns_real_keywords_into_names() -> None:
    from ptcflow.lisp import Keyword

    class NotAKeyword:
        name = "x"

        def __str__(self) -> str:
            return "other"

    assert plain_value({Keyword("k"): [Keyword("v"), NotAKeyword()]}) == {"k": ["v", "other"]}


class Counting:
    """A PTC strategy that counts the outcomes it builds for terminal states."""

    describes_step = True

    def __init__(self, inner: PTC | JsonAgent) -> None:
        self.inner = inner
        self.name = inner.name
        self.built: list[Any] = []

    def init(self, run: Any) -> Any:
        return self.inner.init(run)

    def handle(self, state: Any, signal: Any) -> Any:
        return self.inner.handle(state, signal)

    def outcome(self, state: Any) -> Any:
        out = self.inner.outcome(state)
        if out is not None:
            self.built.append(state)
        return out

    def snapshot(self, state: Any) -> Any:
        return self.inner.snapshot(state)


async def test_the_step_reuses_the_outcome_that_ended_the_run() -> None:
    agent = SubAgent(prompt="Sum", signature="{sum :int}", max_turns=2)
    strategy = Counting(agent.strategy())
    llm = ScriptedLLM(["(return {:sum (+ 1 2)})"])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(strategy, {})
    assert step.ok and step.value == {"sum": 3}
    assert step.trace is not None and step.signature == "{sum :int}"
    assert len(strategy.built) == 1  # built once: the Step took the run's own


@pytest.mark.parametrize(
    ("fields", "host_answers"),
    [({}, True), ({"debug": True}, False), ({"output_type": "decimal:Decimal"}, False)],
)
def test_the_host_answers_only_when_its_check_is_the_strategys_whole_check(
    fields: dict[str, Any], host_answers: bool
) -> None:
    """With an output_type the strategy also checks the value fits the type, which the
    host cannot: the directive then leaves the memory to be written (no mode to answer)."""
    ptc = PTC(prompt="Count", signature="{n :int}", **fields)
    state, (ask,) = ptc.init(RunInfo(run_id="r1", input={}))
    reply = SignalFactory("r1").llm_response(ask, LLMResponse(text="(return {:n 1})"))
    _, (program,) = ptc.handle(state, reply)
    assert isinstance(program, RunProgram) and program.return_signature == "{n :int}"
    assert (program.return_validation is not None) is host_answers
