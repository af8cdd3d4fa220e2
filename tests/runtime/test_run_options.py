"""``RunOptions``: the run's keyword arguments as one checked, frozen value."""

from __future__ import annotations

import msgspec
import pytest

from ptcflow.errors import UsageError
from ptcflow.runtime import UNSET, RunOptions, Runtime
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

pytestmark = pytest.mark.anyio


def test_the_value_is_frozen_and_reads_back() -> None:
    options = RunOptions(run_id="r1", timeout=2.5, record=True)
    assert repr(options) == "RunOptions(run_id='r1', timeout=2.5, record=True)"
    assert repr(RunOptions()) == "RunOptions()"
    assert RunOptions().timeout is UNSET and options == RunOptions(
        run_id="r1", timeout=2.5, record=True
    )
    with pytest.raises(AttributeError):
        options.run_id = "r2"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": 0}, "timeout must be > 0 seconds or None, got 0"),
        ({"timeout": -1.0}, "timeout must be > 0"),
        ({"timeout": True}, "timeout must be > 0"),
        ({"timeout": "5"}, "timeout must be > 0"),
        ({"run_id": 7}, "run_id must be a string or None, got 7"),
        ({"request_id": b"x"}, "request_id must be a string"),
        ({"name": 1.5}, "name must be a string"),
        ({"record": "yes"}, "record must be True or False"),
        ({"agents": ["a"]}, "agents must be a mapping"),
    ],
)
def test_a_bad_option_is_refused_naming_it(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RunOptions(**kwargs)  # type: ignore[arg-type]


def test_split_keeps_the_runs_own_keywords_and_hands_the_rest_to_the_agent() -> None:
    options = RunOptions.split({"run_id": "r", "llm": "haiku", "context": {"a": 1}})
    assert (options.run_id, options.llm) == ("r", "haiku")
    assert dict(options.agent_options) == {"context": {"a": 1}}
    assert set(RunOptions.KEYWORDS) | {"agent_options"} == set(RunOptions.__struct_fields__)


def test_options_given_twice_are_refused() -> None:
    with pytest.raises(
        UsageError, match=r"given twice: options=RunOptions\(...\) and \['run_id'\]"
    ):
        RunOptions.split({"options": RunOptions(record=True), "run_id": "r"})
    with pytest.raises(UsageError, match="options= takes a RunOptions, got dict"):
        RunOptions.split({"options": {"run_id": "r"}})
    merged = RunOptions.split({"options": RunOptions(run_id="r"), "trace": False})
    assert merged.run_id == "r" and dict(merged.agent_options) == {"trace": False}
    assert msgspec.structs.replace(merged, record=True).record


async def test_rt_run_takes_the_options_as_keywords_or_as_one_value() -> None:
    async with Runtime(llm=ScriptedLLM(["5", "5"])) as rt:
        by_keywords = await rt.run(ReAct(), "2+3?", run_id="a", record=True)
        by_value = await rt.run(ReAct(), "2+3?", options=RunOptions(run_id="b", record=True))
        with pytest.raises(UsageError, match="given twice"):
            await rt.run(ReAct(), "2+3?", options=RunOptions(run_id="c"), record=True)
    assert (by_keywords.run_id, by_value.run_id) == ("a", "b")
    assert by_keywords.signals and by_value.signals


async def test_an_unknown_option_for_a_strategy_names_it_and_lists_the_valid_ones() -> None:
    async with Runtime(llm=ScriptedLLM(["5"])) as rt:
        with pytest.raises(UsageError) as info:
            await rt.run(ReAct(), "2+3?", contxt={"a": 1})
    message = str(info.value)
    assert "['contxt']" in message and "ReAct" in message
    assert all(k in message for k in RunOptions.KEYWORDS)


async def test_a_bad_option_fails_at_the_call() -> None:
    async with Runtime(llm=ScriptedLLM(["5"])) as rt:
        with pytest.raises(UsageError, match="run_id must be a string"):
            await rt.run(ReAct(), "2+3?", run_id=5)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="timeout must be > 0"):
            rt.start(ReAct(), "2+3?", timeout=0)
