"""Running SubAgents end to end on a Runtime (PTC mode: the runtime performs the programs)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import ptcflow
from ptcflow import Step, SubAgent, SubAgentError
from ptcflow.agent import run as run_agent, run_or_raise, then
from ptcflow.directives import RunProgram
from ptcflow.errors import UsageError
from ptcflow.runtime import Runtime
from ptcflow.runtime.lowlevel import DirectiveContext
from ptcflow.signals import ProgramOutput
from ptcflow.testing import ScriptedLLM

from .ptc_support import block

pytestmark = pytest.mark.anyio

EMAILS = [
    {"id": 1, "subject": "Urgent: invoice", "urgent": True},
    {"id": 2, "subject": "Lunch?", "urgent": False},
    {"id": 3, "subject": "Urgent: outage", "urgent": True},
]


def list_emails(user: str) -> list[dict[str, Any]]:
    """List a user's emails."""
    return EMAILS


FINDER = SubAgent(
    prompt="Find urgent emails for {{user}}",
    signature="(user :string) -> {count :int, _ids [:int]}",
    tools=[list_emails],
    name="email_finder",
)
DRAFTER = SubAgent(
    prompt="Draft a reply about {{count}} urgent emails",
    signature="(count :int) -> {subject :string}",
    name="drafter",
)
FIND = [
    block('(def mails (call "list_emails" {:user ctx/user}))\n(count mails)'),
    block("(let [u (filter :urgent mails)]\n  (return {:count (cont u) :_ids []}))"),
    block("(let [u (filter :urgent mails)]\n  (return {:count (count u) :_ids (map :id u)}))"),
]


async def test_a_multi_turn_run_on_a_runtime(anyio_backend: str) -> None:
    llm = ScriptedLLM(FIND)
    async with Runtime(llm=llm) as rt:
        step = await FINDER.run(context={"user": "alice"}, runtime=rt)
    assert isinstance(step, ptcflow.Step) and step.ok
    assert step.value == {"count": 2, "_ids": [1, 3]}
    assert (step.reason, step.turns, step.fail) == ("returned", 3, None)
    assert step.signature == FINDER.signature
    assert step.usage.input_tokens > 0 and step.duration_ms > 0
    assert step.trace is not None and [t.turn for t in step.trace.turns] == [1, 2, 3]
    error = step.trace.turns[1].execution.error
    assert error is not None and error.category == "unbound" and "cont" in error.message
    assert "did you mean count" in llm.requests[2].messages[-1].content


async def test_a_failed_run_does_not_raise_and_run_or_raise_does() -> None:
    llm = ScriptedLLM([block('(fail {:reason :not_found :message "no such user"})')] * 2)
    step = await FINDER.run(llm=llm, context={"user": "zed"})
    assert not step.ok and step.fail is not None
    assert (step.fail.reason, step.fail.message, step.reason) == (
        "not_found",
        "no such user",
        "fail",
    )
    assert step.error is not None and step.error.type == "fail"
    with pytest.raises(SubAgentError, match="not_found: no such user") as caught:
        await FINDER.run_or_raise(llm=llm, context={"user": "zed"})
    assert caught.value.step.fail == step.fail


async def test_then_chains_a_step_as_context_with_its_types() -> None:
    llm = ScriptedLLM([*FIND, block('(return {:subject (str ctx/count " urgent")})')])
    first = await run_or_raise(FINDER, llm=llm, context={"user": "alice"})
    second = await then(first, DRAFTER, llm=llm)
    assert second.value == {"subject": "2 urgent"}
    system = llm.requests[-1].messages[0].content
    assert "- ctx/count :int = 2" in system
    assert "- ctx/_ids <Firewalled>" in system


async def test_a_failed_step_cannot_be_a_context() -> None:
    failed = Step(run_id="r", ok=False, reason="fail")
    with pytest.raises(UsageError, match="failed Step"):
        await DRAFTER.run(llm=ScriptedLLM([]), context=failed)
    with pytest.raises(UsageError, match="must return a map"):
        await DRAFTER.run(llm=ScriptedLLM([]), context=Step(run_id="r", ok=True, value=[1]))


@pytest.mark.parametrize(
    ("context", "message"),
    [([1, 2], "mapping"), ({1: "x"}, "strings"), ({"fail": 1}, "reserved")],
)
async def test_a_wrong_context_is_refused(context: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        await DRAFTER.run(llm=ScriptedLLM([]), context=context)


async def test_an_agent_needs_an_llm() -> None:
    with pytest.raises(UsageError, match="has no LLM"):
        await DRAFTER.run(context={"count": 1})


async def test_the_string_shorthand_in_judgment_mode() -> None:
    llm = ScriptedLLM([block("(+ ctx/x ctx/y)")])
    step = await run_agent("{{x}} + {{y}}", context={"x": 10, "y": 5}, llm=llm, max_turns=1)
    assert (step.value, step.reason, step.turns) == (15, "answered", 1)
    with pytest.raises(UsageError, match="SubAgent fields"):
        await run_agent(DRAFTER, max_turns=2, llm=llm)


def test_run_sync_from_plain_code() -> None:
    step = FINDER.run_sync(llm=ScriptedLLM(FIND), context={"user": "alice"})
    assert step.value == {"count": 2, "_ids": [1, 3]}
    step = FINDER.run_sync(llm=ScriptedLLM(FIND), context={"user": "alice"}, backend="trio")
    assert step.ok


async def test_run_sync_inside_a_loop_is_refused() -> None:
    with pytest.raises(UsageError, match=r"await agent\.run"):
        FINDER.run_sync(llm=ScriptedLLM(FIND), context={"user": "alice"})


async def test_a_plain_function_is_an_llm_and_gets_the_spec_input() -> None:
    seen: list[dict[str, Any]] = []

    def llm(data: dict[str, Any]) -> str:
        seen.append(data)
        return FIND[len(seen) - 1]

    step = await FINDER.run(llm=llm, context={"user": "alice"}, llm_opts={"temperature": 0})
    assert step.ok and len(seen) == 3
    first, last = seen[0], seen[-1]
    assert set(first) >= {"system", "messages", "turn", "prompt", "tool_names", "llm_opts"}
    assert first["turn"] == 1 and last["turn"] == 3
    assert first["prompt"] == "Find urgent emails for alice"
    assert first["tool_names"] == ["list_emails"] and first["llm_opts"] == {"temperature": 0}
    assert first["messages"] == [{"role": "user", "content": "Find urgent emails for alice"}]
    assert "## Tools you can call" in first["system"]


async def test_an_async_function_llm_with_token_counts() -> None:
    async def llm(data: dict[str, Any]) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        return {
            "content": block("(return {:count 0 :_ids []})"),
            "tokens": {"input": 7, "output": 3},
        }

    step = await FINDER.run(llm=llm, context={"user": "a"})
    assert step.ok and (step.usage.input_tokens, step.usage.output_tokens) == (7, 3)
    assert step.trace is not None and step.trace.turns[0].tokens.input == 7


async def test_a_model_name_goes_to_the_runtimes_resolver() -> None:
    llm = ScriptedLLM([block("(return {:count 0 :_ids []})"), block("1")])
    async with Runtime(llm=llm) as rt:
        step = await FINDER.run(llm="haiku", context={"user": "a"}, runtime=rt)
        assert step.ok and llm.requests[0].model == "haiku"
        pinned = SubAgent(prompt="Go", max_turns=1, llm="openai:gpt-4.1-mini")
        llm_pinned = ScriptedLLM([block("1")])
        step = await pinned.run(llm=llm_pinned, runtime=rt)  # the agent's llm wins
    assert step.ok and llm.requests[-1].model == "openai:gpt-4.1-mini" and not llm_pinned.requests


async def test_llm_failures_consume_retries_not_turns() -> None:
    agent = SubAgent(prompt="Go", max_turns=1, llm_retry={"max_attempts": 3, "base_ms": 1})
    llm = ScriptedLLM(
        [ScriptedLLM.rate_limited(retry_after=0.001), ScriptedLLM.server_error(), block("7")]
    )
    step = await agent.run(llm=llm)
    assert (step.ok, step.value, step.turns) == (True, 7, 1)
    assert len(llm.requests) == 3


async def test_retryable_errors_limit_what_is_retried() -> None:
    agent = SubAgent(prompt="Go", max_turns=1, llm_retry={"retryable_errors": ["timeout"]})
    llm = ScriptedLLM([ScriptedLLM.rate_limited(retry_after=0.001), block("7")])
    step = await agent.run(llm=llm)
    assert not step.ok and step.reason == "llm_error" and len(llm.requests) == 1
    assert step.error is not None and step.error.type == "rate_limited"


@pytest.mark.parametrize(
    ("allowed", "ok", "calls"), [(["rate_limited"], True, 2), (["timeout"], False, 1)]
)
async def test_retryable_errors_apply_to_a_model_the_runtimes_registry_resolves(
    allowed: list[str], ok: bool, calls: int
) -> None:
    """The agent names a model, the Runtime's ``ModelRegistry`` resolves it: the filter
    wraps the resolver's provider (it once wrapped the registry as if it were a provider,
    and every run failed with "'ModelRegistry' object has no attribute 'generate'")."""
    from ptcflow.providers import ModelRegistry

    llm = ScriptedLLM([ScriptedLLM.rate_limited(retry_after=0.001), block("7")])
    registry = ModelRegistry(providers={"scripted": llm}, aliases={"fast": "scripted:m1"})
    agent = SubAgent(prompt="Go", max_turns=1, llm="fast", llm_retry={"retryable_errors": allowed})
    async with Runtime(llm=registry) as rt:
        step = await rt.run(agent)
    assert step.ok is ok and len(llm.requests) == calls, step.error
    if ok:
        assert step.value == 7
    else:
        assert step.error is not None and step.error.type == "rate_limited"


async def test_the_mission_timeout_bounds_the_whole_run() -> None:
    agent = SubAgent(prompt="Go", max_turns=3, mission_timeout=200)
    step = await agent.run(llm=ScriptedLLM([ScriptedLLM.timeout(hang=True)]))
    assert not step.ok and step.error is not None and step.error.type == "timeout"
    assert step.fail is not None and step.fail.reason == "timeout"


async def test_many_agents_share_one_runtime_concurrently() -> None:
    def model(request: Any) -> str:
        user = request.messages[1].content.rsplit(" ", 1)[-1]
        return block(f'(return {{:count (count "{user}") :_ids []}})')

    llm = ScriptedLLM(model, record=False)
    steps: dict[str, Step] = {}
    async with Runtime(llm=llm) as rt:

        async def one(user: str) -> None:
            steps[user] = await FINDER.run(context={"user": user}, runtime=rt, trace=False)

        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(one, "u" * (i % 7 + 1) + str(i))
    assert len(steps) == 60
    assert all(s.ok and s.value["count"] == len(u) for u, s in steps.items())
    assert all(s.trace is None for s in steps.values())
    assert llm.calls == 60


async def test_pmap_tool_calls_in_a_program() -> None:
    async def rate(currency: str) -> float:
        """Exchange rate to EUR."""
        await anyio.lowlevel.checkpoint()
        return {"USD": 0.5, "GBP": 2.0}[currency]

    agent = SubAgent(prompt="Rates", signature="{rates [:float]}", tools=[rate])
    program = '(return {:rates (pmap #(call "rate" {:currency %}) ["USD" "GBP" "USD"])})'
    step = await agent.run(llm=ScriptedLLM([block(program)]))
    assert step.value == {"rates": [0.5, 2.0, 0.5]}
    assert step.trace is not None
    assert [c.index for c in step.trace.turns[0].execution.tool_calls] == [0, 1, 2]


async def test_a_handler_of_your_own_replaces_the_program_kind() -> None:
    async def canned(directive: RunProgram, ctx: DirectiveContext) -> ProgramOutput:
        return ProgramOutput(value={"count": 9, "_ids": []}, returned=True)

    llm = ScriptedLLM([block("(this is never run)")])
    async with Runtime(llm=llm, handlers={RunProgram: canned}) as rt:
        step = await FINDER.run(context={"user": "a"}, runtime=rt, record=True)
    assert step.ok and step.value == {"count": 9, "_ids": []}
    ends = [s.type for s in step.signals if s.call_id == f"{step.run_id}/program/1"]
    assert ends == ["ai.tool.result"]  # a custom kind ends as custom kinds do


async def test_bad_tool_arguments_and_raising_tools_are_fed_back() -> None:
    def lookup(id: int) -> dict[str, Any]:
        """Look a record up."""
        if id == 0:
            raise KeyError("no record 0")
        return {"id": id}

    agent = SubAgent(prompt="Look up", signature="{id :int}", tools=[lookup])
    llm = ScriptedLLM(
        [
            block('(call "lookup" {:id "seven"})'),
            block('(call "lookup" {:id 0})'),
            block('(return (call "lookup" {:id 7}))'),
        ]
    )
    step = await agent.run(llm=llm)
    assert step.ok and step.value == {"id": 7} and step.turns == 3
    second, third = llm.requests[1].messages[-1].content, llm.requests[2].messages[-1].content
    assert "tool_error" in second and 'id: expected int, got string "seven"' in second
    assert "-> error tool_error" in third and "no record 0" in third
    assert "Traceback" not in second + third


async def test_memory_that_shares_structure_ends_the_run_at_the_memory_limit() -> None:
    # [v v] doubled 60 times: a small object graph whose text has 2**60 elements; writing
    # it stops at the agent's memory limit instead of running for ever
    llm = ScriptedLLM([block("(def x (reduce (fn [v _] [v v]) [] (range 60)))\n(count x)")])
    agent = SubAgent(prompt="Count", signature="() -> :int", max_turns=2, memory_limit=10_000)
    with anyio.fail_after(30):
        step = await agent.run(llm=llm)
    assert step.reason == "memory_limit" and step.fail is not None
    assert "over its limit of 10000" in step.fail.message
