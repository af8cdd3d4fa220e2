"""ScriptedLLM: scripted answers, streaming, faults, recorded requests."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from ptcflow.errors import UsageError
from ptcflow.providers._protocol import (
    EmbedRequest,
    LLMProvider,
    LLMRequest,
    ModelResolver,
    ProviderError,
)
from ptcflow.signals import LLMChunk, LLMResponse, Message, StreamAssembler, ToolCall, Usage
from ptcflow.testing import Fault, ScriptedLLM, ScriptItem, Turn
from ptcflow.testing._turns import as_turn


def request(text: str = "hi", model: str = "") -> LLMRequest:
    return LLMRequest(model=model, messages=(Message(role="user", content=text),))


async def collect(llm: ScriptedLLM, req: LLMRequest) -> list[LLMChunk]:
    return [chunk async for chunk in llm.stream(req)]


def test_implements_the_provider_and_resolver_protocols() -> None:
    llm = ScriptedLLM([])
    assert isinstance(llm, LLMProvider)
    assert isinstance(llm, ModelResolver)
    assert llm.resolve(None, "fast") == (llm, "fast")
    assert llm.resolve(None, None) == (llm, "scripted")


@pytest.mark.anyio
async def test_answers_text_then_tool_calls_in_order_and_records_requests() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("add", x=2, y=3), "5"])
    first = await llm.generate(request("2+3?", model="m1"))
    assert first.tool_calls == (ToolCall(id="call_1_0", name="add", input={"x": 2, "y": 3}),)
    assert first.finish_reason == "tool_calls"
    assert first.model == "m1"
    second = await llm.generate(request("again"))
    assert (second.text, second.tool_calls, second.finish_reason) == ("5", (), "stop")
    assert second.model == "scripted"
    assert [r.messages[0].content for r in llm.requests] == ["2+3?", "again"]
    assert llm.remaining == 0


@pytest.mark.anyio
async def test_parallel_calls_keep_given_ids_and_usage() -> None:
    usage = Usage(input_tokens=11, output_tokens=3)
    calls = [ToolCall(id="a", name="x"), ScriptedLLM.tool_call("y")]
    llm = ScriptedLLM([calls, Turn(text="ok", usage=usage)])
    response = await llm.generate(request())
    assert [c.id for c in response.tool_calls] == ["a", "call_1_1"]
    assert (await llm.generate(request())).usage == usage


@pytest.mark.anyio
async def test_default_usage_is_deterministic_and_positive() -> None:
    a = await ScriptedLLM(["hello"]).generate(request("some words here"))
    b = await ScriptedLLM(["hello"]).generate(request("some words here"))
    assert a.usage == b.usage
    assert a.usage.input_tokens > 0 and a.usage.output_tokens > 0


@pytest.mark.anyio
async def test_function_script_decides_from_the_request() -> None:
    def answer(req: LLMRequest) -> str:
        return req.messages[-1].content.upper()

    llm = ScriptedLLM(answer)
    assert (await llm.generate(request("abc"))).text == "ABC"
    assert (await llm.generate(request("xy"))).text == "XY"
    assert llm.remaining == -1


@pytest.mark.anyio
async def test_running_out_says_which_request() -> None:
    llm = ScriptedLLM(["only"])
    await llm.generate(request())
    with pytest.raises(UsageError, match=r"ran out: request #2 .* 1 turn"):
        await llm.generate(request("second question"))


@pytest.mark.anyio
async def test_bad_entry_is_a_usage_error() -> None:
    llm = ScriptedLLM([42])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="request #1 is a int"):
        await llm.generate(request())


def test_bad_script_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="list of turns"):
        ScriptedLLM("hello")


@pytest.mark.anyio
async def test_stream_yields_words_tool_calls_then_usage() -> None:
    llm = ScriptedLLM(
        [Turn(text="hello big world", tool_calls=(ScriptedLLM.tool_call("add", x=1),))]
    )
    chunks = await collect(llm, request())
    assert "".join(c.text for c in chunks) == "hello big world"
    assert len([c for c in chunks if c.text]) == 3
    assert chunks[-1].usage is not None and chunks[-1].finish_reason == "tool_calls"
    assembler = StreamAssembler()
    for c in chunks:
        assembler.add(c)
    response = assembler.response()
    assert response.tool_calls == (ToolCall(id="call_1_0", name="add", input={"x": 1}),)
    assert response.text == "hello big world"


@pytest.mark.anyio
async def test_stream_uses_given_chunks() -> None:
    llm = ScriptedLLM([Turn(text="ab", chunks=("a", "b"))])
    assert [c.text for c in await collect(llm, request()) if c.text] == ["a", "b"]


@pytest.mark.anyio
async def test_timeout_fault_raises_timeout_error() -> None:
    llm = ScriptedLLM([ScriptedLLM.timeout(), "ok"])
    with pytest.raises(TimeoutError, match="request #1"):
        await llm.generate(request())
    assert (await llm.generate(request())).text == "ok"


@pytest.mark.anyio
async def test_hang_fault_waits_for_the_callers_deadline() -> None:
    llm = ScriptedLLM([ScriptedLLM.timeout(hang=True)])
    with anyio.move_on_after(0.01) as scope:
        await llm.generate(request())
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_rate_limited_fault_carries_retry_after() -> None:
    llm = ScriptedLLM([ScriptedLLM.rate_limited(retry_after=0.25)])
    with pytest.raises(ProviderError) as info:
        await llm.generate(request())
    assert info.value.retry_after == 0.25
    assert info.value.envelope.type == "rate_limited"
    assert info.value.envelope.retryable
    assert info.value.envelope.details["status"] == 429


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("turn", "kind", "retryable"),
    [
        (ScriptedLLM.server_error(502), "transient", True),
        (ScriptedLLM.auth_error(), "auth", False),
        (ScriptedLLM.malformed(), "provider_error", False),
    ],
)
async def test_provider_faults_are_classified(turn: Turn, kind: str, retryable: bool) -> None:
    llm = ScriptedLLM([turn])
    with pytest.raises(ProviderError) as info:
        await llm.generate(request())
    assert (info.value.envelope.type, info.value.envelope.retryable) == (kind, retryable)


@pytest.mark.anyio
async def test_faults_also_apply_when_streaming() -> None:
    llm = ScriptedLLM([ScriptedLLM.server_error()])
    with pytest.raises(ProviderError):
        await collect(llm, request())


@pytest.mark.anyio
async def test_malformed_stream_yields_arguments_that_do_not_parse() -> None:
    llm = ScriptedLLM([ScriptedLLM.malformed()])
    assembler = StreamAssembler()
    for chunk in await collect(llm, request()):
        assembler.add(chunk)
    with pytest.raises(ValueError, match="malformed JSON"):
        assembler.response()


@pytest.mark.anyio
async def test_latency_is_the_models_not_a_test_wait() -> None:
    llm = ScriptedLLM(["slow"], latency=5.0)
    with anyio.move_on_after(0.01) as scope:
        await llm.generate(request())
    assert scope.cancelled_caught  # it really sleeps
    fast = ScriptedLLM([Turn(text="fast", latency=0.0)], latency=5.0)
    with anyio.fail_after(1):
        assert (await fast.generate(request())).text == "fast"


@pytest.mark.anyio
async def test_embed_is_deterministic() -> None:
    llm = ScriptedLLM([])
    a = await llm.embed(EmbedRequest(model="e", inputs=("hello", "world")))
    b = await llm.embed(EmbedRequest(model="e", inputs=("hello", "world")))
    assert a == b and len(a.vectors) == 2 and a.model == "e"
    assert llm.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("options", "model"),
    [
        ({}, "scripted"),
        ({"model": "openai:gpt-x"}, "openai:gpt-x"),
        ({"model_alias": "fast"}, "fast"),
    ],
)
async def test_resolves_every_model_to_itself_in_a_runtime(
    options: dict[str, str], model: str
) -> None:
    from ptcflow.runtime import Runtime
    from ptcflow.strategies import ReAct

    llm = ScriptedLLM(["hi"])
    async with Runtime(llm=llm) as rt:
        step = await rt.run(ReAct(**options), "hello")  # type: ignore[arg-type]
    assert step.value == "hi"
    assert llm.requests[0].model == model


@pytest.mark.anyio
async def test_record_false_counts_requests_without_keeping_them() -> None:
    from ptcflow.runtime import Runtime
    from ptcflow.strategies import ReAct

    llm = ScriptedLLM(lambda request: "ok", record=False)
    async with Runtime(llm=llm) as rt:
        for _ in range(3):
            assert (await rt.run(ReAct(), "hi")).value == "ok"
    assert llm.calls == 3
    assert llm.requests == []


@pytest.mark.anyio
async def test_remaining_counts_calls_with_or_without_recording() -> None:
    from ptcflow.runtime import Runtime
    from ptcflow.strategies import ReAct

    llm = ScriptedLLM(["a", "b"], record=False)
    async with Runtime(llm=llm) as rt:
        await rt.run(ReAct(), "hi")
    assert llm.remaining == 1


# -- the lean generate: same answers as the general path, one coroutine of ours ---------

_names = st.sampled_from(["add", "search", "f"])
_ids = st.sampled_from(["", "", "given"])
_calls = st.builds(
    ToolCall, id=_ids, name=_names, input=st.dictionaries(st.sampled_from("xy"), st.integers())
)
_usages = st.none() | st.builds(
    Usage, input_tokens=st.integers(0, 99), output_tokens=st.integers(0, 99)
)
_items = (
    st.text(max_size=40)
    | _calls
    | st.lists(_calls, min_size=1, max_size=3)
    | st.builds(
        Turn,
        text=st.text(max_size=40),
        tool_calls=st.lists(_calls, max_size=3).map(tuple),
        usage=_usages,
        finish_reason=st.none() | st.just("length"),
    )
)
_messages = st.lists(
    st.builds(Message, role=st.sampled_from(["user", "tool"]), content=st.text(max_size=60)),
    min_size=1,
    max_size=4,
).map(tuple)


@settings(max_examples=200)
@given(item=_items, messages=_messages, model=st.sampled_from(["", "m"]), number=st.integers(1, 3))
def test_generate_answers_like_the_general_turn_path(
    item: ScriptItem, messages: tuple[Message, ...], model: str, number: int
) -> None:
    # generate answers text and single tool calls without a Turn; _response is the
    # general path (stream uses it): both must give the same response.
    req = LLMRequest(model=model, messages=messages)
    llm = ScriptedLLM([item] * number)
    for _ in range(number - 1):
        _drive(llm.generate(req))
    fast = _drive(llm.generate(req))
    assert fast == llm._response(number, as_turn(item, number), req)


def _drive(coro: Coroutine[Any, Any, LLMResponse]) -> LLMResponse:
    """Run a coroutine that must not suspend (latency 0): no event loop needed."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coro.close()
    raise AssertionError("generate suspended at latency 0")


@pytest.mark.anyio
async def test_zero_latency_answers_without_a_loop_cycle() -> None:
    llm = ScriptedLLM(["a", ScriptedLLM.tool_call("f"), Turn(text="b", latency=0.0)])
    for _ in range(3):
        _drive(llm.generate(request()))  # raises if it tried to yield to the loop
    assert llm.calls == 3


def _chain(coro: Any) -> list[str]:
    """The modules of the coroutines a suspended coroutine is awaiting, outermost first."""
    modules = []
    while coro is not None and hasattr(coro, "cr_code"):
        modules.append(coro.cr_frame.f_globals["__name__"] if coro.cr_frame else "?")
        coro = coro.cr_await
    return modules


@pytest.mark.anyio
async def test_latency_keeps_one_coroutine_of_ours_and_no_anyio_frames_alive() -> None:
    llm = ScriptedLLM(["slow"], latency=60.0)
    coro = llm.generate(request())

    async def answer() -> None:
        await coro

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer)
        await anyio.wait_all_tasks_blocked()
        chain = _chain(coro)
        tg.cancel_scope.cancel()
    assert chain[0] == "ptcflow.testing._scripted"
    assert [m for m in chain if m.startswith("ptcflow")] == [chain[0]]
    assert not [m for m in chain if m.startswith("anyio")], chain
    assert chain[1] in {"asyncio.tasks", "trio._timeouts"}, chain  # the backend's own sleep


def test_one_model_sleeps_on_each_backend_it_is_used_on() -> None:
    llm = ScriptedLLM(lambda req: "ok", latency=0.001)

    async def twice() -> str:
        with anyio.fail_after(5):
            return (await llm.generate(request())).text + (await llm.generate(request())).text

    for backend in ("asyncio", "trio", "asyncio"):
        assert anyio.run(twice, backend=backend) == "okok"
    assert llm.calls == 6


@pytest.mark.anyio
async def test_stream_and_embed_sleep_for_the_latency() -> None:
    llm = ScriptedLLM(["slow"], latency=60.0)
    with anyio.move_on_after(0.01) as scope:
        await collect(llm, request())
    assert scope.cancelled_caught
    with anyio.move_on_after(0.01) as scope:
        await llm.embed(EmbedRequest(model="e", inputs=("x",)))
    assert scope.cancelled_caught
    quick = ScriptedLLM([Turn(text="a b", latency=0.001)])
    with anyio.fail_after(5):
        assert [c.text for c in await collect(quick, request()) if c.text] == ["a ", "b"]


@pytest.mark.anyio
async def test_hang_while_streaming_waits_for_the_callers_deadline() -> None:
    llm = ScriptedLLM([ScriptedLLM.timeout(hang=True)])
    with anyio.move_on_after(0.01) as scope:
        await collect(llm, request())
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_a_fault_after_latency_still_raises() -> None:
    llm = ScriptedLLM([Turn(fault=Fault(kind="rate_limited", retry_after=1.0), latency=0.001)])
    with anyio.fail_after(5), pytest.raises(ProviderError) as info:
        await llm.generate(request())
    assert info.value.retry_after == 1.0
