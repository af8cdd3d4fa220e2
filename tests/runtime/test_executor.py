"""The executor: one terminal signal per directive in every path, retries, limits, threads."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import anyio
import pytest

from ptcflow.directives import (
    Directive,
    EmitRequestError,
    EmitToolError,
    LLMEmbed,
    LLMGenerate,
    LLMStream,
    ToolExec,
)
from ptcflow.runtime import (
    Limits,
    ProviderError,
    RetryPolicy,
    Runtime,
    Step,
)
from ptcflow.runtime._executor import backend_clock
from ptcflow.runtime.lowlevel import DirectiveContext
from ptcflow.signals import (
    EMBED_RESULT,
    LLM_DELTA,
    LLM_RESPONSE,
    REQUEST_ERROR,
    TOOL_RESULT,
    TOOL_STARTED,
    USAGE,
    ErrorEnvelope,
    LLMChunk,
    LLMResponse,
    Signal,
    ToolCallDelta,
    Usage,
)
from ptcflow.tools import ToolContext, tool

from .support import MSGS, FakeLLM, Probe, terminals, types_of

pytestmark = pytest.mark.anyio


class Custom(Directive, frozen=True, kw_only=True, tag="custom_test"):
    """A directive kind only these tests know."""

    value: int = 0


class Stray(Directive, frozen=True, kw_only=True, tag="stray_test"):
    """A directive kind nobody registers a handler for."""


async def _run(
    directives: list[Directive], *, rt_kwargs: dict[str, Any] | None = None, **run_kwargs: Any
) -> Step:
    async with Runtime(**(rt_kwargs or {})) as rt:
        return await rt.run(Probe(directives), "go", record=True, **run_kwargs)


def _one_terminal(step: Step, call_id: str) -> Signal:
    found = terminals(step.signals, call_id)
    assert len(found) == 1, [s.type for s in found]
    return found[0]


# -- success paths ---------------------------------------------------------------------


async def test_llm_generate_publishes_usage_then_response() -> None:
    llm = FakeLLM(LLMResponse(text="hello", usage=Usage(input_tokens=3, output_tokens=2)))
    step = await _run([LLMGenerate(id="g", messages=MSGS)], rt_kwargs={"llm": llm})
    assert step.ok, step.error
    assert types_of(step.signals, "g") == [USAGE, LLM_RESPONSE]
    response = _one_terminal(step, "g")
    assert response.data.result.payload.text == "hello"
    assert response.data.result.payload.model == "fake-1"  # filled from the request
    assert response.data.attempts == 1
    assert step.usage == Usage(input_tokens=3, output_tokens=2)
    assert step.turns == 1


async def test_llm_stream_publishes_deltas_then_usage_then_response() -> None:
    chunks = [LLMChunk(text="Hel"), LLMChunk(text="lo", usage=Usage(output_tokens=2))]
    llm = FakeLLM(chunks=chunks)
    step = await _run([LLMStream(id="s", messages=MSGS)], rt_kwargs={"llm": llm})
    assert types_of(step.signals, "s") == [LLM_DELTA, LLM_DELTA, USAGE, LLM_RESPONSE]
    assert _one_terminal(step, "s").data.result.payload.text == "Hello"


async def test_malformed_stream_is_a_provider_error() -> None:
    bad = [LLMChunk(tool_calls=(ToolCallDelta(index=0, name="f", arguments="{oops"),))]
    step = await _run([LLMStream(id="s", messages=MSGS)], rt_kwargs={"llm": FakeLLM(chunks=bad)})
    result = _one_terminal(step, "s").data.result
    assert result.error.type == "provider_error"
    assert "malformed" in result.error.message


async def test_embed_publishes_one_embed_result() -> None:
    step = await _run([LLMEmbed(id="e", inputs=("ab", "c"))], rt_kwargs={"llm": FakeLLM()})
    sig = _one_terminal(step, "e")
    assert sig.type == EMBED_RESULT
    assert sig.data.result.payload.vectors == ((2.0,), (1.0,))


async def test_tool_exec_publishes_started_then_result_with_correlation() -> None:
    async def add(x: int, y: int) -> int:
        return x + y

    d = ToolExec(id="t", tool_name="add", arguments={"x": 2, "y": 3}, request_id="req", iteration=4)
    step = await _run([d], rt_kwargs={"tools": {"add": add}})
    assert types_of(step.signals, "t") == [TOOL_STARTED, TOOL_RESULT]
    result = _one_terminal(step, "t")
    assert result.data.result.payload == 5
    assert (result.causation_id, result.request_id, result.iteration) == ("t", "req", 4)
    assert result.run_id == step.run_id
    seqs = [s.seq for s in step.signals]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert step.tool_calls == 1


async def test_emit_directives_answer_without_running_anything() -> None:
    err = ErrorEnvelope.make("unknown_tool", "no such tool")
    step = await _run(
        [
            EmitToolError(id="u", tool_name="nope", error=err),
            EmitRequestError(id="b", error=ErrorEnvelope.make("busy", "busy"), reason="busy"),
        ]
    )
    assert [s.type for s in terminals(step.signals, "u")] == [TOOL_RESULT]
    assert _one_terminal(step, "u").data.result.error == err
    assert _one_terminal(step, "b").type == REQUEST_ERROR
    assert TOOL_STARTED not in types_of(step.signals, "u")


# -- failure paths: still exactly one terminal ----------------------------------------


async def test_invalid_directive_fails_validation_before_start() -> None:
    step = await _run([ToolExec(id="t", tool_name="", timeout_ms=-5)], rt_kwargs={"tools": {}})
    assert types_of(step.signals, "t") == [TOOL_RESULT]  # no ai.tool.started
    error = _one_terminal(step, "t").data.result.error
    assert error.type == "validation"
    assert "tool_name must be a non-empty string" in error.message
    assert "timeout_ms must be positive" in error.message


async def test_crashing_handler_gives_an_internal_error() -> None:
    async def boom(directive: Custom, ctx: DirectiveContext) -> int:
        raise KeyError("lost")

    step = await _run([Custom(id="c", max_retries=3)], rt_kwargs={"handlers": {Custom: boom}})
    error = _one_terminal(step, "c").data.result.error
    assert error.type == "internal"
    assert "boom" in error.message and "KeyError" in error.message


async def test_custom_handler_result_is_normalized() -> None:
    async def double(directive: Custom, ctx: DirectiveContext) -> Any:
        ctx.emit("x.custom.progress", {"half": directive.value})
        return (True, directive.value * 2)

    step = await _run([Custom(id="c", value=21)], rt_kwargs={"handlers": {Custom: double}})
    assert types_of(step.signals, "c") == ["x.custom.progress", TOOL_RESULT]
    assert _one_terminal(step, "c").data.result.payload == 42
    assert step.ok


async def test_unknown_directive_kind_names_the_fix() -> None:
    step = await _run([Stray(id="s")])
    error = _one_terminal(step, "s").data.result.error
    assert error.type == "validation"
    assert "Runtime(handlers={Stray: handler})" in error.message


async def test_tool_deadline_gives_a_timeout() -> None:
    async def slow() -> None:
        await anyio.sleep_forever()

    step = await _run(
        [ToolExec(id="t", tool_name="slow", timeout_ms=20)], rt_kwargs={"tools": {"slow": slow}}
    )
    error = _one_terminal(step, "t").data.result.error
    assert error.type == "timeout"
    assert error.details["scope"] == "directive"


async def test_tool_exception_is_not_retried() -> None:
    calls = []

    async def bad() -> None:
        calls.append(1)
        raise RuntimeError("nope")

    step = await _run(
        [ToolExec(id="t", tool_name="bad", max_retries=3)], rt_kwargs={"tools": {"bad": bad}}
    )
    sig = _one_terminal(step, "t")
    assert sig.data.result.error.type == "tool_error"
    assert sig.data.attempts == 1 and calls == [1]


async def test_unknown_tool_is_not_retried() -> None:
    step = await _run([ToolExec(id="t", tool_name="ghost", max_retries=2)])
    sig = _one_terminal(step, "t")
    assert sig.data.result.error.type == "unknown_tool"
    assert sig.data.attempts == 1


async def test_missing_llm_is_a_validation_error() -> None:
    step = await _run([LLMGenerate(id="g", messages=MSGS)])
    error = _one_terminal(step, "g").data.result.error
    assert error.type == "validation" and "llm=" in error.message


async def test_malformed_provider_output_is_a_typed_error() -> None:
    async def weird(request: Any) -> Any:
        return {"text": "not a response"}

    step = await _run([LLMGenerate(id="g", messages=MSGS)], rt_kwargs={"llm": FakeLLM(weird)})
    error = _one_terminal(step, "g").data.result.error
    assert error.type == "provider_error" and "expected LLMResponse" in error.message


# -- retries ---------------------------------------------------------------------------


def _transient() -> ProviderError:
    return ProviderError(ErrorEnvelope.make("transient", "503 from upstream"))


async def test_transient_failures_are_retried_and_attempts_counted() -> None:
    llm = FakeLLM(_transient(), _transient(), LLMResponse(text="finally"))
    step = await _run(
        [LLMGenerate(id="g", messages=MSGS, max_retries=2, retry_backoff_ms=1)],
        rt_kwargs={"llm": llm},
    )
    sig = _one_terminal(step, "g")
    assert sig.data.result.payload.text == "finally"
    assert sig.data.attempts == 3 and llm.calls == 3


async def test_retries_stop_at_max_retries() -> None:
    llm = FakeLLM(_transient())
    step = await _run(
        [LLMGenerate(id="g", messages=MSGS, max_retries=1, retry_backoff_ms=1)],
        rt_kwargs={"llm": llm},
    )
    sig = _one_terminal(step, "g")
    assert sig.data.result.error.type == "transient"
    assert sig.data.attempts == 2 and llm.calls == 2


@pytest.mark.parametrize(
    ("exc", "error_type", "calls"),
    [
        (TimeoutError("slow"), "timeout", 3),
        (ConnectionResetError("reset"), "transient", 3),
        (ProviderError(ErrorEnvelope.make("auth", "bad key")), "auth", 1),
        (ProviderError(ErrorEnvelope.make("validation", "bad request")), "validation", 1),
        (ValueError("parse"), "provider_error", 1),
    ],
)
async def test_classification_decides_retries(exc: Exception, error_type: str, calls: int) -> None:
    llm = FakeLLM(exc)
    step = await _run(
        [LLMGenerate(id="g", messages=MSGS, max_retries=2, retry_backoff_ms=1)],
        rt_kwargs={"llm": llm},
    )
    sig = _one_terminal(step, "g")
    assert sig.data.result.error.type == error_type
    assert llm.calls == calls == sig.data.attempts


async def test_retry_after_is_honoured() -> None:
    limited = ProviderError(ErrorEnvelope.make("rate_limited", "429"), retry_after=0.05)
    llm = FakeLLM(limited, LLMResponse(text="ok"))
    step = await _run(
        [LLMGenerate(id="g", messages=MSGS, max_retries=1, retry_backoff_ms=0)],
        rt_kwargs={"llm": llm, "rand": lambda: 0.0},
    )
    assert _one_terminal(step, "g").data.result.ok
    assert llm.times[1] - llm.times[0] >= 0.05
    assert step.ok


async def test_a_wait_past_the_deadline_ends_retries_early() -> None:
    limited = ProviderError(ErrorEnvelope.make("rate_limited", "429"), retry_after=30.0)
    llm = FakeLLM(limited, LLMResponse(text="never"))
    step = await _run(
        [LLMGenerate(id="g", messages=MSGS, max_retries=3, timeout_ms=2_000)],
        rt_kwargs={"llm": llm},
    )
    sig = _one_terminal(step, "g")
    assert sig.data.result.error.type == "rate_limited"
    assert sig.data.attempts == 1 and llm.calls == 1


async def test_a_stream_that_published_deltas_is_not_retried() -> None:
    class Flaky(FakeLLM):
        async def stream(self, request: Any) -> Any:
            self.calls += 1
            yield LLMChunk(text="par")
            raise ConnectionResetError("dropped")

    llm = Flaky()
    step = await _run(
        [LLMStream(id="s", messages=MSGS, max_retries=3, retry_backoff_ms=1)],
        rt_kwargs={"llm": llm},
    )
    sig = _one_terminal(step, "s")
    assert sig.data.result.error.type == "transient"
    assert llm.calls == 1
    assert types_of(step.signals, "s") == [LLM_DELTA, LLM_RESPONSE]


# -- deadlines -------------------------------------------------------------------------


async def test_attempt_timeout_is_retried_within_the_directive_budget() -> None:
    deadlines: list[float] = []

    async def hang_first(request: Any) -> LLMResponse:
        deadlines.append(anyio.current_effective_deadline() - anyio.current_time())
        if len(deadlines) == 1:
            await anyio.sleep_forever()
        return LLMResponse(text="second try")

    llm = FakeLLM(hang_first)
    step = await _run(
        [LLMGenerate(id="g", messages=MSGS, max_retries=2, retry_backoff_ms=1, timeout_ms=5_000)],
        rt_kwargs={"llm": llm, "retry": RetryPolicy(attempt_timeout_ms=30)},
    )
    sig = _one_terminal(step, "g")
    assert sig.data.result.payload.text == "second try"
    assert sig.data.attempts == 2
    assert step.ok  # a retryable attempt timeout did not fail the run
    assert all(d <= 0.03 + 1e-3 for d in deadlines)


async def test_directives_get_the_remaining_mission_budget() -> None:
    seen: list[float] = []

    async def probe_deadline() -> str:
        seen.append(anyio.current_effective_deadline())
        return "ok"

    async with Runtime(tools={"probe": probe_deadline}) as rt:
        start = anyio.current_time()
        step = await rt.run(
            Probe([ToolExec(id="t", tool_name="probe", timeout_ms=60_000)]), "go", timeout=5.0
        )
    assert step.ok
    assert start < seen[0] <= start + 5.0 + 0.5  # the mission deadline, not the tool's 60 s


async def test_an_enclosing_deadline_bounds_the_run() -> None:
    seen: list[float] = []

    async def probe_deadline() -> str:
        seen.append(anyio.current_effective_deadline())
        return "ok"

    async with Runtime(tools={"probe": probe_deadline}) as rt:
        with anyio.fail_after(5.0):
            outer = anyio.current_effective_deadline()
            step = await rt.run(Probe([ToolExec(id="t", tool_name="probe")]), "go")
    assert step.ok
    assert seen[0] <= outer


# -- limits and threads ----------------------------------------------------------------


class Gauge:
    """Counts concurrent entries; each entry yields a few times to let others in."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def enter(self, turns: int = 5) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        for _ in range(turns):
            await anyio.lowlevel.checkpoint()
        self.now -= 1


async def test_per_tool_limit_caps_concurrency() -> None:
    gauge = Gauge()

    async def work() -> int:
        await gauge.enter()
        return 1

    tools = {"work": work}
    ds: list[Directive] = [ToolExec(id=f"t{i}", tool_name="work") for i in range(6)]
    step = await _run(ds, rt_kwargs={"tools": tools, "limits": Limits(per_tool=2)})
    assert step.ok
    assert gauge.peak == 2


async def test_global_limit_caps_all_directives() -> None:
    gauge = Gauge()

    async def work() -> int:
        await gauge.enter()
        return 1

    ds: list[Directive] = [ToolExec(id=f"t{i}", tool_name="work") for i in range(6)]
    step = await _run(ds, rt_kwargs={"tools": {"work": work}, "limits": Limits(max_directives=3)})
    assert step.ok and gauge.peak == 3


async def test_unlimited_tools_run_in_parallel() -> None:
    gauge = Gauge()

    async def work() -> int:
        await gauge.enter()
        return 1

    ds: list[Directive] = [ToolExec(id=f"t{i}", tool_name="work") for i in range(4)]
    step = await _run(ds, rt_kwargs={"tools": {"work": work}})
    assert step.ok and gauge.peak == 4


async def test_per_provider_limit_caps_llm_calls() -> None:
    llm = FakeLLM()
    ds: list[Directive] = [LLMGenerate(id=f"g{i}", messages=MSGS) for i in range(4)]
    step = await _run(ds, rt_kwargs={"llm": llm, "limits": Limits(per_provider=1)})
    assert step.ok and llm.calls == 4 and llm.max_in_flight == 1


async def test_sync_tools_run_in_worker_threads_under_the_thread_limiter() -> None:
    main = threading.get_ident()
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    threads: list[int] = []

    def blocking(n: int) -> int:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            threads.append(threading.get_ident())
        time.sleep(0.005)  # the tool's own blocking work, not a wait in the test
        with lock:
            state["now"] -= 1
        return n

    ds: list[Directive] = [
        ToolExec(id=f"t{i}", tool_name="blocking", arguments={"n": i}) for i in range(3)
    ]
    step = await _run(
        ds, rt_kwargs={"tools": {"blocking": blocking}, "limits": Limits(sync_tool_threads=1)}
    )
    assert step.ok and sorted(step.value) == [0, 1, 2]
    assert main not in threads
    assert state["peak"] == 1


async def test_tool_context_state_is_the_strategy_snapshot() -> None:
    got: list[ToolContext] = []

    async def look(ctx: ToolContext) -> str:
        got.append(ctx)
        return "ok"

    d = ToolExec(id="t", tool_name="look", context={"state": "user value", "tenant": "acme"})
    step = await _run([d], rt_kwargs={"tools": {"look": look}}, run_id="run_ctx")
    assert step.ok
    ctx = got[0]
    assert ctx.metadata == {"tenant": "acme"}
    assert ctx.state == {"steps": 0, "pending": ["t"]}  # the runtime's snapshot wins
    assert (ctx.run_id, ctx.call_id, ctx.tool_name) == ("run_ctx", "t", "look")


async def test_tool_options_override_the_directive() -> None:
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            await anyio.sleep_forever()
        return "third time"

    t = tool(flaky, timeout_ms=20, max_retries=2)
    step = await _run(
        [ToolExec(id="t", tool_name="flaky", retry_backoff_ms=1)], rt_kwargs={"tools": [t]}
    )
    sig = _one_terminal(step, "t")
    assert sig.data.result.payload == "third time"
    assert sig.data.attempts == 3


async def test_tool_input_is_validated_by_its_signature() -> None:
    def add(x: int, y: int) -> int:
        return x + y

    step = await _run(
        [ToolExec(id="t", tool_name="add", arguments={"x": "two", "y": 3})],
        rt_kwargs={"tools": [add]},
    )
    error = _one_terminal(step, "t").data.result.error
    assert error.type == "validation" and "add" in error.message


# -- statistics ------------------------------------------------------------------------


async def test_statistics_count_outcomes() -> None:
    async def ok() -> int:
        return 1

    async def bad() -> int:
        raise ValueError("x")

    async with Runtime(tools={"ok": ok, "bad": bad}) as rt:
        await rt.run(
            Probe(
                [
                    ToolExec(id="a", tool_name="ok"),
                    ToolExec(id="b", tool_name="bad"),
                    ToolExec(id="c", tool_name=""),
                ]
            ),
            "go",
        )
        stats = rt.statistics()
    assert (stats.started, stats.succeeded, stats.failed) == (3, 1, 2)
    assert stats.in_flight == 0 and stats.runs_started == 1 and stats.runs_active == 0
    assert stats.max_in_flight == 2
    with pytest.raises(AttributeError):
        stats.started = 0  # type: ignore[misc]


async def test_the_executor_clock_is_the_backends_clock() -> None:
    """Deadlines are on anyio's clock; the executor reads that one (time.monotonic itself on
    a loop that keeps asyncio's own time method)."""
    clock = backend_clock()
    before = anyio.current_time()
    now = clock()
    assert before <= now <= anyio.current_time()


def test_a_loop_with_a_time_method_of_its_own_keeps_it() -> None:
    class Shifted(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return super().time() + 1000.0

    async def clock_now() -> float:
        return backend_clock()()

    loop = Shifted()
    try:
        assert loop.run_until_complete(clock_now()) >= time.monotonic() + 999.0
    finally:
        loop.close()
