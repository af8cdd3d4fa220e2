"""A run through a provider with no model set anywhere is a UsageError before any request."""

from __future__ import annotations

import pytest

from ptcflow import SubAgent
from ptcflow.errors import UsageError
from ptcflow.providers import OpenAIProvider
from ptcflow.runtime import Runtime, run, run_sync
from ptcflow.strategies import ReAct
from ptcflow.testing import ScriptedLLM

from .support import Probe

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789"


async def test_a_provider_without_a_model_and_a_strategy_without_one_is_refused() -> None:
    async with OpenAIProvider(api_key=KEY) as bare, Runtime(llm=bare) as rt:
        with pytest.raises(UsageError, match="no model is set for this run") as caught:
            await rt.run(ReAct(), "hi")
        assert 'OpenAIProvider(model="gpt-4.1-mini")' in str(caught.value)
        with pytest.raises(UsageError, match="no model is set"):
            rt.start(ReAct(), "hi")
        with pytest.raises(UsageError, match="no model is set"):
            await rt.run(SubAgent(prompt="Hi", max_turns=1))  # the agent on the Runtime's provider
        with pytest.raises(UsageError, match="no model is set"):
            await run(ReAct(), "hi", llm=bare)
        # a model anywhere is enough: the strategy's, or a custom strategy calling no model
        rt.run(ReAct(model="gpt-4.1-mini"), "hi").close()
        rt.run(ReAct(model_alias="fast"), "hi").close()
        rt.run(Probe([]), "hi").close()
    async with OpenAIProvider(api_key=KEY, model="gpt-4.1-mini") as named, Runtime() as rt:
        rt.run(ReAct(), "hi", llm=named).close()


def test_run_sync_refuses_it_too() -> None:
    with pytest.raises(UsageError, match="no model is set"):
        run_sync(ReAct(), "hi", llm=OpenAIProvider(api_key=KEY))


async def test_providers_that_name_their_model_or_have_none_to_name_pass() -> None:
    class Custom:  # a provider of your own without a model attribute
        name = "custom"

        async def generate(self, request: object) -> object:
            raise NotImplementedError

    async with Runtime(llm=ScriptedLLM(["hi"])) as rt:
        assert (await rt.run(ReAct(), "hi")).ok
    async with Runtime(llm=Custom()) as rt:
        rt.run(ReAct(), "hi").close()
