"""SubAgent as data: validated at creation, frozen, readable, JSON-safe, reusable."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import msgspec
import pytest

from ptcflow import SubAgent
from ptcflow.agent import LLMRetry
from ptcflow.errors import ConfigError, UsageError
from ptcflow.strategies import PTC, JsonAgent, PromptLimit
from ptcflow.testing import ScriptedLLM


def list_emails(user: str) -> list[dict[str, Any]]:
    """List a user's emails."""
    return []


def test_an_agent_is_frozen_data_with_a_readable_repr() -> None:
    agent = SubAgent(
        prompt="Find urgent emails for {{user}}",
        signature="(user :string) -> {count :int, _ids [:int]}",
        tools=[list_emails],
        max_turns=5,
        name="email_finder",
    )
    assert repr(agent) == (
        "SubAgent(name='email_finder', prompt='Find urgent emails for {{user}}', "
        "signature='(user :string) -> {count :int, _ids [:int]}', tools=['list_emails'], "
        "max_turns=5)"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.max_turns = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        agent.tools["x"] = list_emails
    assert not agent.judgment


def test_the_description_is_json_safe_with_tools_by_name() -> None:
    agent = SubAgent(
        prompt="Go",
        tools={"find": list_emails},
        tool_catalog=[list_emails],
        llm=ScriptedLLM(["x"]),
        llm_retry={"max_attempts": 2, "backoff": ":linear", "retryable_errors": [":rate_limit"]},
        prompt_limit={"value_chars": 100},
        mission_timeout=30_000,
    )
    described = agent.describe()
    assert msgspec.json.decode(msgspec.json.encode(described)) == described
    assert described["tools"] == ["find"] and described["tool_catalog"] == ["list_emails"]
    assert described["llm_retry"] == {
        "max_attempts": 2,
        "backoff": "linear",
        "base_ms": 200,
        "retryable_errors": ["rate_limited"],
    }
    assert described["prompt_limit"]["value_chars"] == 100
    assert described["llm"] == "scripted:scripted"
    assert described["mode"] == "agent"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prompt": "Hi {{who}}", "signature": "(name :string) -> :string"}, "placeholder {{who}}"),
        ({"prompt": "Go", "tools": {"return": list_emails}}, "reserved"),
        ({"prompt": "Go", "tools": {"fail": list_emails}}, "reserved"),
        ({"prompt": "Go", "tool_catalog": {"return": list_emails}}, "reserved"),
        ({"prompt": "Go", "max_turns": 0}, "max_turns must be an integer >= 1"),
        ({"prompt": "Go", "max_turns": True}, "max_turns must be an integer >= 1"),
        ({"prompt": "Go", "mission_timeout": 1.5}, "mission_timeout must be milliseconds"),
        ({"prompt": "Go", "output": "xml"}, 'output must be "ptc" or "json"'),
        ({"prompt": "Go", "llm": 42}, "llm must be a provider"),
        ({"prompt": "   "}, "prompt must be a non-empty string"),
        ({"prompt": "Go", "prompt_limit": {"values": 3}}, "prompt_limit has unknown keys"),
        ({"prompt": "Go", "prompt_limit": {"value_chars": 0}}, "value_chars must be a positive"),
        ({"prompt": "Go", "llm_retry": {"max_attempts": 0}}, "max_attempts must be >= 1"),
        ({"prompt": "Go", "llm_retry": {"retryable_errors": ["auth"]}}, "unknown types"),
        ({"prompt": "Go", "program_limits": {"max_stepz": 3}}, "program_limits"),
        ({"prompt": "Go", "signature": "(x :integr) -> :int"}, "did you mean :int"),
        ({"prompt": "Go {{", "signature": ":int"}, "template"),
    ],
)
def test_a_wrong_definition_is_refused_at_once(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        SubAgent(**options)
    assert message in str(caught.value)


def test_reserved_names_are_refused_for_any_registration_form() -> None:
    from ptcflow.tools import tool

    SubAgent(prompt="x", tools=[(list_emails, "(user :string) -> :any")])
    with pytest.raises(UsageError, match="reserved"):
        SubAgent(prompt="x", tools=[tool(list_emails, name="return")])


def test_modes_follow_the_spec() -> None:
    assert SubAgent(prompt="{{x}}", max_turns=1).judgment
    assert not SubAgent(prompt="x", max_turns=2).judgment
    assert not SubAgent(prompt="x", max_turns=1, tools=[list_emails]).judgment  # tools win


def test_the_strategy_carries_the_run_options() -> None:
    agent = SubAgent(
        prompt="Go",
        signature="{n :int}",
        llm_retry=LLMRetry(max_attempts=4, base_ms=50),
        memory_limit=2048,
        program_limits={"timeout_ms": 900},
        prompt_limit=PromptLimit(value_chars=99),
    )
    strategy = agent.strategy(
        llm_opts={"temperature": 0}, trace="on_error", debug=True, model="haiku"
    )
    assert isinstance(strategy, PTC)
    assert (strategy.llm_max_retries, strategy.llm_retry_backoff_ms) == (3, 50)
    assert (strategy.memory_limit_bytes, strategy.program_limits) == (2048, {"timeout_ms": 900})
    assert strategy.prompt_limit.value_chars == 99 and strategy.model == "haiku"
    assert strategy.system_prompt is not None
    assert isinstance(SubAgent(prompt="Go", output="json").strategy(), JsonAgent)


def test_strict_validation_needs_a_signature_on_every_tool() -> None:
    from ptcflow.tools import Tool

    loose = Tool("loose", lambda payload: payload, pass_input=True, input_schema={"type": "object"})
    agent = SubAgent(prompt="Go", tools=[loose, list_emails])
    assert agent.tools["loose"].signature is None
    with pytest.raises(UsageError, match=r"strict.*untyped: loose: \(no signature\)"):
        agent.strategy(signature_validation="strict")
    assert isinstance(agent.strategy(signature_validation="enabled"), PTC)


def test_the_static_prompt_is_rendered_once_per_definition() -> None:
    agent = SubAgent(
        prompt="Find {{user}}", signature="(user :string) -> :int", tools=[list_emails]
    )
    first, second = agent.strategy(), agent.strategy(trace=False)
    assert isinstance(first, PTC) and isinstance(second, PTC)
    assert first.system_prompt is second.system_prompt


@pytest.mark.parametrize("output", ["ptc", "json"])
def test_a_default_options_run_shares_the_strategy_built_with_the_definition(output: str) -> None:
    agent = SubAgent(prompt="Find {{user}}", signature="(user :string) -> :int", output=output)
    shared = agent.strategy()
    assert agent.strategy(llm_opts={}, trace=True, stream=False) is shared
    others = [
        agent.strategy(trace=False),
        agent.strategy(debug=True),
        agent.strategy(model="haiku"),
        agent.strategy(llm_opts={"temperature": 0}),
        agent.strategy(signature_validation="warn_only"),
        agent.strategy(context_signature="(user :string) -> :any"),
    ]
    assert all(other is not shared for other in others)
    assert all(other != shared for other in others[:5])
    if output == "ptc":  # a JSON agent neither streams nor types its context's keys
        assert others[5] != shared and agent.strategy(stream=True) != shared
    # the same strategy as one built for those options
    assert msgspec.structs.replace(others[0], trace=True) == shared
    # every option is tested above: an option added to strategy() must join its test for
    # the defaults too, else a run given it would get the shared strategy
    options = set(inspect.signature(SubAgent.strategy).parameters) - {"self"}
    assert options == {
        "context_signature", "llm_opts", "signature_validation", "trace", "debug", "model", "stream",
    }  # fmt: skip


def test_config_errors_are_usage_errors() -> None:
    assert issubclass(ConfigError, UsageError)
